/**
 * Assignments that carry a large request body (`LARGE_ASSIGNMENT_BYTES` or more: vision and
 * long-context requests of tens of MB) on an agent's Control stream. Writing one takes time —
 * it leaves in slices as HTTP/2 flow control lets it through (control-stream-handler.ts), tens to
 * hundreds of ms per 30 MB, seconds on a loaded host — and every message queued behind it waits.
 * So, per session:
 *
 * - One at a time: a large assignment enters the Control stream's queue only once the previous
 *   one has been written; the others wait here. Small messages (small runs' assignments, cancels,
 *   drains) are queued at once, so they wait for at most one large assignment, not for all.
 * - A receipt: `written(message)` (the Control call's message loop, tunnel-service.ts, once the
 *   writer asked for the next message) tells the run, whose accepted clock then starts again: it
 *   measures the agent, not the edge's own queue (run-registry.ts `RunHandle.sent`).
 * - A cancel of a run still waiting here removes its assignment: the agent never hears of it.
 *
 * Until it is written, a large run's accepted clock allows for the queue: `allowanceMs` gives
 * the time its bytes and those queued before it take at `MIN_BYTES_PER_MS` (1 MB/s, a Control
 * stream that barely moves), so only a stalled agent connection fails it before its turn.
 */
import type { EdgeMessage } from '@iop/proto';

/** An assignment with a body at least this large is paced (the Control writer's slice size). */
export const LARGE_ASSIGNMENT_BYTES = 1024 * 1024;

/** The slowest a Control stream is expected to move a large assignment, bytes per ms (1 MB/s). */
export const MIN_BYTES_PER_MS = 1000;

const receipts = new WeakMap<EdgeMessage, () => void>();

/** The Control call wrote `message` whole: its receipt, if it has one, runs now. */
export function written(message: EdgeMessage): void {
  const receipt = receipts.get(message);
  if (receipt === undefined) return;
  receipts.delete(message);
  receipt();
}

interface Waiting {
  runId: string;
  message: EdgeMessage;
  bytes: number;
}

export class LargeAssignments {
  private readonly waiting: Waiting[] = [];
  private current: Waiting | undefined;
  private queuedBytes = 0;

  /** @param send queues a message on the Control stream. */
  constructor(private readonly send: (message: EdgeMessage) => void) {}

  /** The accepted-clock allowance of a large assignment of `bytes` queued now, ms. */
  allowanceMs(bytes: number): number {
    return Math.ceil((this.queuedBytes + bytes) / MIN_BYTES_PER_MS);
  }

  /** Queues a large assignment; `onSent` runs once it has been written. */
  add(runId: string, message: EdgeMessage, bytes: number, onSent: () => void): void {
    const entry = { runId, message, bytes };
    this.queuedBytes += bytes;
    receipts.set(message, () => {
      this.queuedBytes -= bytes;
      this.current = undefined;
      onSent();
      this.next();
    });
    this.waiting.push(entry);
    if (this.current === undefined) this.next();
  }

  /** Removes a waiting (not yet queued) assignment of `runId`; true when there was one. */
  drop(runId: string): boolean {
    const index = this.waiting.findIndex((entry) => entry.runId === runId);
    if (index === -1) return false;
    const [entry] = this.waiting.splice(index, 1);
    receipts.delete(entry!.message);
    this.queuedBytes -= entry!.bytes;
    return true;
  }

  private next(): void {
    const entry = this.waiting.shift();
    if (entry === undefined) return;
    this.current = entry;
    this.send(entry.message);
  }
}
