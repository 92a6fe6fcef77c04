/**
 * The edge-wide budget of request bytes in flight (`maxRequestBytesInFlight`): every request body
 * the edge reads is counted against it from its first byte until its response has closed (the
 * body stays referenced that long: parsed, re-serialized for the backend, sent through the
 * tunnel, kept for a retry), so a burst of large bodies cannot grow the edge past its memory
 * limit. A request that would exceed it is refused with 503 `no_capacity` and `Retry-After`
 * (Anthropic: 529 `overloaded_error`, through the dialects' renderers): from its `Content-Length`
 * before a byte of the body is read, or, for a chunked body, as soon as the bytes it has sent
 * would cross the budget (what it sent is released at once).
 *
 * Metrics: `iop_request_body_bytes_held` (gauge, bytes of request bodies held now) and
 * `iop_request_body_refusals_total` (counter, requests refused for the budget).
 */
import { IopError } from '@iop/core';
import { Counter, Gauge, type Registry } from 'prom-client';

/** Seconds a refused client is told to wait (`Retry-After`): large requests end within seconds. */
export const BODY_BUDGET_RETRY_AFTER_SECONDS = 2;

export class BodyBudget {
  private heldBytes = 0;
  private readonly refusals: Counter | undefined;

  /**
   * @param maxBytes the budget, bytes (0 = no budget)
   * @param registry where the gauge and the counter are registered (none in unit tests)
   */
  constructor(
    readonly maxBytes: number,
    registry?: Registry,
  ) {
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0)
      throw new RangeError(`maxBytes must be an integer >= 0, got ${maxBytes}`);
    if (registry === undefined) return;
    const held = () => this.heldBytes;
    new Gauge({
      name: 'iop_request_body_bytes_held',
      help: 'Bytes of request bodies the edge holds now (read or being read, until their responses close); bounded by maxRequestBytesInFlight.',
      registers: [registry],
      collect() {
        this.set(held());
      },
    });
    this.refusals = new Counter({
      name: 'iop_request_body_refusals_total',
      help: 'Requests refused (503 / Anthropic 529, Retry-After) because their bodies would exceed maxRequestBytesInFlight.',
      registers: [registry],
    });
  }

  /** Bytes held now. */
  get held(): number {
    return this.heldBytes;
  }

  /** Takes `bytes` when they fit; false (nothing taken, the refusal counted) when they do not. */
  take(bytes: number): boolean {
    if (this.maxBytes > 0 && this.heldBytes + bytes > this.maxBytes) {
      this.refusals?.inc();
      return false;
    }
    this.heldBytes += bytes;
    return true;
  }

  /** Gives back bytes `take` took. */
  give(bytes: number): void {
    this.heldBytes -= bytes;
  }

  /** The client's error for a body the budget cannot take (503 `no_capacity`, `Retry-After`). */
  refusal(): IopError {
    return new IopError(
      'no_capacity',
      `the edge holds as many request bytes as it may (maxRequestBytesInFlight: ${this.maxBytes} bytes); retry shortly`,
      {
        retryAfterSeconds: BODY_BUDGET_RETRY_AFTER_SECONDS,
      },
    );
  }
}
