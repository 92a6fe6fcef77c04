/**
 * Assignments that found every slot taken, held briefly until one frees (FIFO). An agent joined to
 * several edges can be assigned the same free slot by two edges at once (each learns the other's
 * load a round trip late); the loser waits here for the next slot instead of being rejected and
 * burning one of its request's attempts. At most `maxHeld` wait (the agent allows two per slot), each at most
 * `maxWaitMs` (below the edge's default run-open timeout of 10 s), then it is rejected
 * `at_capacity` as before.
 */
export interface HeldAssignment {
  runId: string;
  /** Starts the run now (a slot is free). */
  start(): void;
  /** Rejects it `at_capacity` (waited too long, or dropped). */
  reject(): void;
}

export class SlotWaiters {
  private readonly held: Array<HeldAssignment & { timer: NodeJS.Timeout }> = [];

  constructor(
    private readonly maxHeld: () => number,
    private readonly maxWaitMs = 5_000,
  ) {}

  get size(): number {
    return this.held.length;
  }

  /** Holds `assignment`; false when `maxHeld` already wait (reject it now). */
  hold(assignment: HeldAssignment): boolean {
    if (this.held.length >= this.maxHeld()) return false;
    const entry = {
      ...assignment,
      timer: setTimeout(() => {
        if (this.remove(assignment.runId)) assignment.reject();
      }, this.maxWaitMs),
    };
    entry.timer.unref();
    this.held.push(entry);
    return true;
  }

  /** A slot freed: starts the longest-waiting assignment, if any. */
  release(): void {
    const next = this.held.shift();
    if (next === undefined) return;
    clearTimeout(next.timer);
    next.start();
  }

  /** Drops a held run (its edge cancelled it); true when it was held. */
  remove(runId: string): boolean {
    const index = this.held.findIndex((entry) => entry.runId === runId);
    if (index === -1) return false;
    clearTimeout(this.held[index]!.timer);
    this.held.splice(index, 1);
    return true;
  }

  /** Rejects every held assignment (drain, shutdown). */
  rejectAll(): void {
    for (const entry of this.held.splice(0)) {
      clearTimeout(entry.timer);
      entry.reject();
    }
  }
}
