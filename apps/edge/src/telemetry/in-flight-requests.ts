/**
 * The inference requests this edge is serving now (`GET /admin/requests`): one entry from the
 * moment the pipeline takes a request until its response closes, updated as it is routed.
 * Times are Unix ms.
 */

export interface InFlightRequest {
  /** The request id (`x-request-id`). */
  id: string;
  /** The client's dialect (`openai-chat`, `anthropic-messages`, `openai-responses`). */
  dialect: string;
  /** The model the client asked for; null until the body is read. */
  model: string | null;
  /** The served model of the current attempt; null while queued. */
  servedModel: string | null;
  /** The agent (or direct provider) of the current attempt; null while queued. */
  agent: string | null;
  /** The client key's id; null on an edge without keys. */
  keyId: string | null;
  /** Attempts so far (a retry on another agent adds one). */
  attempts: number;
  startedAt: number;
}

export class InFlightRequests {
  private readonly entries = new Set<InFlightRequest>();

  get size(): number {
    return this.entries.size;
  }

  /** Tracks a request; the returned entry is updated in place and given back to `close`. */
  open(id: string, dialect: string, keyId: string | undefined, now = Date.now()): InFlightRequest {
    const entry: InFlightRequest = {
      id,
      dialect,
      model: null,
      servedModel: null,
      agent: null,
      keyId: keyId ?? null,
      attempts: 0,
      startedAt: now,
    };
    this.entries.add(entry);
    return entry;
  }

  close(entry: InFlightRequest): void {
    this.entries.delete(entry);
  }

  /** Every request in flight, oldest first, with its age (ms) and phase (`queued` before its first attempt). */
  list(now = Date.now()): Array<InFlightRequest & { ageMs: number; phase: 'queued' | 'running' }> {
    return [...this.entries]
      .sort((a, b) => a.startedAt - b.startedAt)
      .map((entry) => ({
        ...entry,
        ageMs: Math.max(0, now - entry.startedAt),
        phase: entry.attempts === 0 ? 'queued' : 'running',
      }));
  }
}
