/**
 * Runs one attempt: reads the dispatcher's events, passes content through the transformer chain,
 * shows the result to every validator, queues it and yields what the release policy lets out.
 * It returns how the attempt ended; the gate decides what happens next (`recovery.ts`).
 */
import type { ErrorEvent, StreamEvent, Usage } from '@iop/core';
import type { ReleasePolicy } from './config.js';
import type { EventTransformer, EventValidator, Rejection } from './filter.js';
import { ReleaseQueue } from './release-queue.js';

/** How an attempt ended. */
export type AttemptEnd =
  | { kind: 'finished' }
  | { kind: 'rejected'; filter: string; rejection: Rejection }
  | { kind: 'upstream-error'; error: ErrorEvent }
  | { kind: 'cut'; message: string }
  | { kind: 'over-budget'; heldBytes: number }
  | { kind: 'aborted' };

export interface NamedTransformer {
  name: string;
  instance: EventTransformer;
}

export interface NamedValidator {
  name: string;
  instance: EventValidator;
}

export interface AttemptSetup {
  events: AsyncIterable<StreamEvent>;
  transformers: readonly NamedTransformer[];
  validators: readonly NamedValidator[];
  policy: ReleasePolicy;
  maxHeldBytes: number;
  /** A continuation: drop `response-start` (the client has one) and reasoning (text already began). */
  continuation: boolean;
  signal: AbortSignal;
}

/** What the attempt observed, read by the gate after it ended. */
export class AttemptRecord {
  /** The last usage the upstream reported. */
  usage: Usage | undefined = undefined;
  /** Each validator's last verdict kind, by index in `validators`. */
  readonly verdicts: ('pass' | 'hold' | 'reject')[];
  /** Whether any event of this attempt was released. */
  releasedAny = false;
  /**
   * The most bytes the attempt held at once, as the `maxHeldBytes` check measures them: queued
   * events (UTF-8, just-arrived ones included) plus transformer and validator state.
   */
  peakHeldBytes = 0;

  constructor(validatorCount: number) {
    this.verdicts = new Array<'pass' | 'hold' | 'reject'>(validatorCount).fill('pass');
  }
}

/**
 * The attempt as an async generator: yields released events, returns the end. Never throws
 * for upstream faults (a throwing iterable becomes `cut`).
 */
export async function* runAttempt(setup: AttemptSetup, record: AttemptRecord): AsyncGenerator<StreamEvent, AttemptEnd> {
  const { transformers, validators, policy, maxHeldBytes, continuation, signal } = setup;
  const queue = new ReleaseQueue();
  /** Per validator: sequence number where its hold began, -1 when it holds nothing. */
  const holdStart = new Array<number>(validators.length).fill(-1);
  let batch: StreamEvent[] = [];
  let next: StreamEvent[] = [];
  let finished = false;

  try {
    for await (const event of setup.events) {
      if (signal.aborted) return { kind: 'aborted' };
      if (event.type === 'usage') {
        record.usage = event.usage;
        continue;
      }
      if (finished) continue; // only usage may follow the terminal event
      if (event.type === 'error') return { kind: 'upstream-error', error: event };
      if (event.type === 'response-start') {
        if (!continuation) queue.push(event);
        continue;
      }

      batch.length = 0;
      batch.push(event);
      for (const transformer of transformers) {
        next.length = 0;
        for (const item of batch) {
          const rejection = transformer.instance.push(item, next);
          if (rejection !== undefined) return { kind: 'rejected', filter: transformer.name, rejection };
        }
        const swap = batch;
        batch = next;
        next = swap;
      }

      for (const item of batch) {
        if (
          (item.type === 'text-delta' || item.type === 'reasoning-delta') &&
          (item.text === '' || (continuation && item.type === 'reasoning-delta'))
        ) {
          continue; // nothing to release (an empty delta), or reasoning after the client already has text
        }
        const terminal = item.type === 'finish';
        const seq = queue.nextSeq;
        for (let i = 0; i < validators.length; i++) {
          const verdict = validators[i]!.instance.check(item);
          if (verdict === 'pass' || (terminal && verdict === 'hold')) {
            holdStart[i] = -1;
            record.verdicts[i] = 'pass';
          } else if (verdict === 'hold') {
            if (holdStart[i] === -1) holdStart[i] = seq;
            record.verdicts[i] = 'hold';
          } else {
            record.verdicts[i] = 'reject';
            return { kind: 'rejected', filter: validators[i]!.name, rejection: verdict };
          }
        }
        queue.push(item);
        if (terminal) finished = true;
      }

      const held = heldBytes(queue, transformers, validators);
      if (held > record.peakHeldBytes) record.peakHeldBytes = held;
      if (held > maxHeldBytes) return { kind: 'over-budget', heldBytes: held };

      const released = queue.take(finished ? queue.nextSeq : releaseLimit(policy, queue, holdStart));
      for (const item of released) {
        record.releasedAny = true;
        yield item;
      }
    }
  } catch (error) {
    if (signal.aborted) return { kind: 'aborted' };
    return { kind: 'cut', message: `upstream failed: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (signal.aborted && !finished) return { kind: 'aborted' };
  return finished ? { kind: 'finished' } : { kind: 'cut', message: 'upstream stream ended without a finish reason' };
}

function releaseLimit(policy: ReleasePolicy, queue: ReleaseQueue, holdStart: readonly number[]): number {
  if (policy === 'buffered') return queue.released;
  if (policy === 'passthrough') return queue.nextSeq;
  let limit = queue.nextSeq;
  for (const start of holdStart) if (start !== -1 && start < limit) limit = start;
  return limit;
}

function heldBytes(
  queue: ReleaseQueue,
  transformers: readonly NamedTransformer[],
  validators: readonly NamedValidator[],
): number {
  let total = queue.heldBytes;
  for (const transformer of transformers) total += transformer.instance.heldBytes;
  for (const validator of validators) total += validator.instance.heldBytes ?? 0;
  return total;
}
