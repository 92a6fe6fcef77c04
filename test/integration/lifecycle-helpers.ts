/**
 * Helpers of the lifecycle tests: a streamed chat request read as it arrives, and admin API calls.
 */
import type { AgentView } from '../../apps/edge/src/admin/agent-view';
import { API_KEY, eventually, simRequests, type SimHandle } from './harness';

export const ADMIN_KEY = 'iop-admin-key-test-000001';

export interface OpenStream {
  status: number;
  agent: string | null;
  /** Resolves with the whole body once the stream ends (or rejects when the connection breaks). */
  body: Promise<string>;
}

/** Starts a streamed chat completion and resolves once the response headers arrived. */
export async function openStream(baseURL: string, model = 'sim-model', key = API_KEY): Promise<OpenStream> {
  const response = await fetch(`${baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'tell me a story' }] }),
  });
  return { status: response.status, agent: response.headers.get('x-iop-agent-id'), body: response.text() };
}

/** Content deltas of an OpenAI Chat SSE body, and whether it ended with [DONE] and no error. */
export function readChatStream(body: string): { deltas: number; done: boolean; error: unknown } {
  let deltas = 0;
  let done = false;
  let error: unknown;
  for (const line of body.split('\n')) {
    if (!line.startsWith('data: ')) continue;
    const data = line.slice(6);
    if (data === '[DONE]') {
      done = true;
      continue;
    }
    const parsed = JSON.parse(data) as { choices?: Array<{ delta?: { content?: string } }>; error?: unknown };
    if (parsed.error !== undefined) error = parsed.error;
    if ((parsed.choices?.[0]?.delta?.content ?? '') !== '') deltas++;
  }
  return { deltas, done, error };
}

export async function ask(baseURL: string, key = API_KEY): Promise<{ status: number; agent: string | null }> {
  const response = await fetch(`${baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sim-model', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await response.arrayBuffer();
  return { status: response.status, agent: response.headers.get('x-iop-agent-id') };
}

/** An admin API call; `key` null sends no Authorization header. */
export async function admin(
  url: string,
  method: 'GET' | 'POST',
  path: string,
  key: string | null = ADMIN_KEY,
): Promise<{ status: number; body: { data: AgentView[] } }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: key === null ? {} : { authorization: `Bearer ${key}` },
  });
  return { status: response.status, body: (await response.json()) as { data: AgentView[] } };
}

/**
 * An agent's in-flight figures: the edge's open runs, the agent's runs and backend requests (heartbeat), the sim's open
 * chat requests.
 */
export interface InFlightCounts {
  edge: number;
  agent: number | null;
  backend: number | null;
  sim: number;
}

/**
 * Reads `GET /admin/agents` (`load.inFlight`, `load.agentInFlight`, `load.backendInFlight`) and the sim's open chat
 * requests.
 */
export async function inFlightCounts(edgeUrl: string, sim: SimHandle, agentId: string): Promise<InFlightCounts> {
  const { body } = await admin(edgeUrl, 'GET', '/admin/agents');
  const view = body.data.find((agent) => agent.id === agentId);
  if (view === undefined) throw new Error(`agent ${agentId} is not registered`);
  const open = (await simRequests(sim)).filter(
    (record) => record.path === '/v1/chat/completions' && record.completed !== true && record.aborted !== true,
  ).length;
  return { edge: view.load.inFlight, agent: view.load.agentInFlight, backend: view.load.backendInFlight, sim: open };
}

/**
 * Waits until all four counts equal `expected` (heartbeats carry the agent's figures); throws with the last counts
 * otherwise.
 */
export async function inFlightCountsAgree(
  edgeUrl: string,
  sim: SimHandle,
  agentId: string,
  expected: number,
  timeoutMs = 10_000,
): Promise<void> {
  let last: InFlightCounts | undefined;
  try {
    await eventually(
      async () => {
        last = await inFlightCounts(edgeUrl, sim, agentId);
        return last.edge === expected && last.agent === expected && last.backend === expected && last.sim === expected;
      },
      timeoutMs,
      100,
    );
  } catch {
    throw new Error(`in-flight counts disagree: ${JSON.stringify(last)} (expected all ${expected})`);
  }
}
