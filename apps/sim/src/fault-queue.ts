/**
 * Faults queued through the control API (`POST /_sim/faults`): each entry applies its fault and
 * knobs to the next `count` chat completion requests, in order.
 */
import { parseKnob } from './knob-specs.js';
import { FAULT_NAMES, type FaultName, type Knobs } from './knobs.js';
import { SimInputError } from './sim-error.js';

export interface QueuedFault {
  fault: FaultName;
  /** Requests still to receive it. */
  remaining: number;
  /** Extra knobs sent with the fault (`fault-after`, `retry-after`, `itl-ms`, ...). */
  knobs: Partial<Knobs>;
}

export class FaultQueue {
  private readonly entries: QueuedFault[] = [];

  /**
   * Queues `{fault, count?, ...knobs}` (count default 1; knob keys kebab- or camelCase, values
   * strings, numbers or booleans).
   * @throws SimInputError naming the bad field.
   */
  push(body: unknown): QueuedFault {
    if (body === null || typeof body !== 'object' || Array.isArray(body))
      throw new SimInputError('fault body must be a JSON object');
    const { fault, count = 1, ...rest } = body as Record<string, unknown>;
    if (typeof fault !== 'string' || !(FAULT_NAMES as readonly string[]).includes(fault)) {
      throw new SimInputError(`'fault' must be one of ${FAULT_NAMES.join('|')}`, { param: 'fault' });
    }
    if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 1)
      throw new SimInputError("'count' must be an integer >= 1", { param: 'count' });
    const knobs: Partial<Knobs> = { fault: fault as FaultName };
    for (const [name, value] of Object.entries(rest)) {
      if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
        throw new SimInputError(`'${name}' must be a string, number or boolean`, { param: name });
      }
      Object.assign(knobs, parseKnob(name, String(value)));
    }
    const entry: QueuedFault = { fault: fault as FaultName, remaining: count, knobs };
    this.entries.push(entry);
    return entry;
  }

  /** The knobs for the next request, consuming one use; undefined when the queue is empty. */
  take(): Partial<Knobs> | undefined {
    const head = this.entries[0];
    if (head === undefined) return undefined;
    if (--head.remaining === 0) this.entries.shift();
    return head.knobs;
  }

  list(): readonly QueuedFault[] {
    return this.entries;
  }

  clear(): void {
    this.entries.length = 0;
  }
}
