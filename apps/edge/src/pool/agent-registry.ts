/**
 * The connected agents, indexed by the models they serve (`GET /v1/models` lists their served
 * models among the pool's names, see model-list.ts).
 */
import type { AgentSession } from '../tunnel/agent-session.js';

export interface ServedModel {
  id: string;
  /** Largest context length any agent reports for it, tokens (0 = unknown). */
  contextLength: number;
  /** Agents serving it now. */
  agents: number;
}

export class AgentRegistry {
  private readonly sessions = new Map<string, AgentSession>();
  private readonly byModel = new Map<string, AgentSession[]>();
  /** Called after an agent joined or left (the provider pool serves its queue, forgets outlier state). */
  onChange: ((session: AgentSession, change: 'added' | 'removed') => void) | undefined;

  add(session: AgentSession): void {
    this.sessions.set(session.sessionId, session);
    for (const model of session.models) {
      const list = this.byModel.get(model.id);
      if (list === undefined) this.byModel.set(model.id, [session]);
      else list.push(session);
    }
    this.onChange?.(session, 'added');
  }

  remove(session: AgentSession): void {
    if (!this.sessions.delete(session.sessionId)) return;
    for (const model of session.models) {
      const list = this.byModel.get(model.id);
      if (list === undefined) continue;
      const next = list.filter((candidate) => candidate !== session);
      if (next.length === 0) this.byModel.delete(model.id);
      else this.byModel.set(model.id, next);
    }
    this.onChange?.(session, 'removed');
  }

  /** Agents serving `model` (empty when none). The array is shared: do not mutate it. */
  forModel(model: string): readonly AgentSession[] {
    return this.byModel.get(model) ?? [];
  }

  all(): AgentSession[] {
    return [...this.sessions.values()];
  }

  bySessionId(sessionId: string): AgentSession | undefined {
    return this.sessions.get(sessionId);
  }

  models(): ServedModel[] {
    return [...this.byModel.entries()].map(([id, sessions]) => ({
      id,
      contextLength: Math.max(0, ...sessions.map((session) => session.contextLength(id) ?? 0)),
      agents: sessions.length,
    }));
  }
}
