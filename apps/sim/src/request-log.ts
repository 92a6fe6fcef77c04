/**
 * What the sim received, for tests to assert on: a bounded ring of request records (oldest
 * dropped first, so a long load test cannot grow memory) plus running counters.
 */
import type { IncomingHttpHeaders } from 'node:http';

/** One received request (`GET /_sim/requests`). Times are epoch milliseconds. */
export interface RequestRecord {
  /** Sequence number, from 1, unique per server. */
  id: number;
  receivedAt: number;
  method: string;
  path: string;
  /** The requested model (suffix included), or null. */
  model: string | null;
  /** Request headers, lower-cased names (node's `IncomingMessage.headers`). */
  headers: IncomingHttpHeaders;
  /** Parsed JSON body; null when absent or malformed. */
  body: unknown;
  /** Response status, once the headers are sent; null before, or when the socket died first. */
  status: number | null;
  /** The fault applied, or null. */
  fault: string | null;
  /** The client closed the connection before the response finished. */
  aborted: boolean;
  abortedAt: number | null;
  /** The response was fully written. */
  completed: boolean;
  completedAt: number | null;
  /** Generated output (chat completions): finish reason, token counts, tool calls. */
  output: RequestOutput | null;
}

export interface RequestOutput {
  finishReason: string;
  promptTokens: number;
  completionTokens: number;
  toolCalls: { id: string; name: string; arguments: string; invalid: string | null }[];
}

export interface SimStats {
  requests: number;
  inFlight: number;
  completed: number;
  aborted: number;
  faulted: number;
  /** Bytes of SSE written by streams (UTF-8). */
  streamBytes: number;
  /** Stream writes the socket did not accept at once (the stream then waited for `drain`): backpressure seen. */
  pausedWrites: number;
  /** `POST /v1/chat/completions` requests whose connection is still open (queued, generating or writing). */
  completionsInFlight: number;
  /** `POST /v1/chat/completions` requests the client left before the response finished (cumulative). */
  completionsAborted: number;
}

const COMPLETIONS_PATH = '/v1/chat/completions';

/** A request's record as it arrives (nothing known of its outcome yet); id 0 for one not logged. */
export function newRecord(id: number, method: string, path: string, headers: IncomingHttpHeaders): RequestRecord {
  return {
    id,
    receivedAt: Date.now(),
    method,
    path,
    model: null,
    headers,
    body: null,
    status: null,
    fault: null,
    aborted: false,
    abortedAt: null,
    completed: false,
    completedAt: null,
    output: null,
  };
}

export class RequestLog {
  private readonly ring: (RequestRecord | undefined)[];
  private next = 0;
  private sequence = 0;
  readonly stats: SimStats = {
    requests: 0,
    inFlight: 0,
    completed: 0,
    aborted: 0,
    faulted: 0,
    streamBytes: 0,
    pausedWrites: 0,
    completionsInFlight: 0,
    completionsAborted: 0,
  };

  /** @param capacity records kept (default 10,000). */
  constructor(private readonly capacity = 10_000) {
    if (!Number.isSafeInteger(capacity) || capacity < 1)
      throw new RangeError(`request log capacity must be an integer >= 1, got ${capacity}`);
    this.ring = new Array<RequestRecord | undefined>(capacity);
  }

  /** Records a new request and counts it in flight. */
  open(method: string, path: string, headers: IncomingHttpHeaders): RequestRecord {
    const record = newRecord(++this.sequence, method, path, headers);
    this.ring[this.next] = record;
    this.next = (this.next + 1) % this.capacity;
    this.stats.requests++;
    this.stats.inFlight++;
    if (path === COMPLETIONS_PATH) this.stats.completionsInFlight++;
    return record;
  }

  /** The response ended: `finished` = fully written, else the connection closed first. */
  settle(record: RequestRecord, finished: boolean, abortedByClient: boolean): void {
    this.stats.inFlight--;
    const completion = record.path === COMPLETIONS_PATH;
    if (completion) this.stats.completionsInFlight--;
    if (finished) {
      record.completed = true;
      record.completedAt = Date.now();
      this.stats.completed++;
    } else if (abortedByClient) {
      record.aborted = true;
      record.abortedAt = Date.now();
      this.stats.aborted++;
      if (completion) this.stats.completionsAborted++;
    }
  }

  markFault(record: RequestRecord, fault: string): void {
    record.fault = fault;
    this.stats.faulted++;
  }

  /** Records in arrival order (oldest first). */
  list(): RequestRecord[] {
    const records: RequestRecord[] = [];
    for (let i = 0; i < this.capacity; i++) {
      const record = this.ring[(this.next + i) % this.capacity];
      if (record !== undefined) records.push(record);
    }
    return records;
  }

  /** Drops the records (counters and ids keep running). */
  clear(): void {
    this.ring.fill(undefined);
    this.next = 0;
  }
}
