/**
 * Provider choice: the available agent with the lowest in-flight share of its max concurrency;
 * ties broken at random so equal agents share the traffic.
 */
import type { AgentSession } from '../tunnel/agent-session.js';

/** Returns the chosen agent, or undefined when none is available (all busy, draining or closed). */
export function pickLeastInFlight(candidates: readonly AgentSession[], exclude?: ReadonlySet<AgentSession>): AgentSession | undefined {
  let best: AgentSession | undefined;
  let bestShare = Number.POSITIVE_INFINITY;
  let ties = 0;
  for (const session of candidates) {
    if (!session.available || exclude?.has(session)) continue;
    const share = session.inFlight / session.maxConcurrency;
    if (share < bestShare) {
      best = session;
      bestShare = share;
      ties = 1;
    } else if (share === bestShare) {
      ties++;
      if (Math.random() * ties < 1) best = session;
    }
  }
  return best;
}
