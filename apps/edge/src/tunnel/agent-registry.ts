/**
 * The connected agents, indexed by the models they serve (the pool's catalog reads them, see
 * pool/model-catalog.ts). Listeners (`addListener`) hear every join and leave: the provider pool
 * serves its queue and forgets the outlier state of an agent that left.
 */
import type { AgentDirectory } from '../pool/agent-directory.js';
import type { AgentSession } from './agent-session.js';

export interface ServedModel {
  id: string;
  /** Largest context length any agent reports for it, tokens (0 = unknown). */
  contextLength: number;
  /** Agents serving it now. */
  agents: number;
}

/** Called after an agent joined (`added`) or left (`removed`). */
export type AgentRegistryListener = (session: AgentSession, change: 'added' | 'removed') => void;

export class AgentRegistry implements AgentDirectory {
  private readonly sessions = new Map<string, AgentSession>();
  private readonly byModel = new Map<string, AgentSession[]>();
  private readonly listeners: AgentRegistryListener[] = [];

  /** Calls `listener` after every join and leave from now on; returns its removal. */
  addListener(listener: AgentRegistryListener): () => void {
    this.listeners.push(listener);
    return () => {
      const index = this.listeners.indexOf(listener);
      if (index >= 0) this.listeners.splice(index, 1);
    };
  }

  add(session: AgentSession): void {
    this.sessions.set(session.sessionId, session);
    for (const model of session.models) {
      const list = this.byModel.get(model.id);
      if (list === undefined) this.byModel.set(model.id, [session]);
      else list.push(session);
    }
    this.emit(session, 'added');
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
    this.emit(session, 'removed');
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

  private emit(session: AgentSession, change: 'added' | 'removed'): void {
    for (const listener of this.listeners) listener(session, change);
  }
}
