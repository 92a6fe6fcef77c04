import { IopError } from '@iop/core';
import { RequestRuns } from '../../../src/attempt/request-runs';
import { ClientGone, RequestDeadline } from '../../../src/attempt/request-deadline';
import type { RunStream } from '../../../src/pool/run-stream';

/** A run that records its cancellations (idempotent like the real ones). */
function fakeRun(accepted = true): RunStream & { reasons: string[] } {
  const reasons: string[] = [];
  let finished = false;
  return {
    runId: 'run_1',
    providerId: 'agent-a',
    frames: undefined as never,
    accepted,
    get isFinished() {
      return finished;
    },
    reasons,
    cancel(reason: string) {
      if (finished) return;
      finished = true;
      reasons.push(reason);
    },
  };
}

describe('RequestRuns', () => {
  it('cancels the current run once with the stop reason when the request signal aborts', () => {
    const deadline = new RequestDeadline(60_000);
    const runs = new RequestRuns(deadline.signal);
    const run = fakeRun();
    runs.started(run);
    deadline.stop(new IopError('timeout', 'the request did not complete within its 10 ms deadline'));
    runs.cancel(run, 'attempt ended');
    expect(run.reasons).toEqual(['the request did not complete within its 10 ms deadline']);
    expect(runs.stoppedMidRun).toBe(true);
    expect(runs.running()).toBe(false);
  });

  it('says "client disconnected" for a client gone, and notes no backend work for a run not yet accepted', () => {
    const deadline = new RequestDeadline(60_000);
    const runs = new RequestRuns(deadline.signal);
    const run = fakeRun(false);
    runs.started(run);
    deadline.stop(new ClientGone());
    expect(run.reasons).toEqual(['client disconnected']);
    expect(runs.stoppedMidRun).toBe(false);
    deadline.clear();
  });

  it('cancels at once a run that starts after the request stopped', () => {
    const deadline = new RequestDeadline(60_000);
    const runs = new RequestRuns(deadline.signal);
    deadline.stop(new ClientGone());
    const run = fakeRun();
    runs.started(run);
    expect(run.reasons).toEqual(['client disconnected']);
    expect(runs.current).toBe(run);
  });

  it('cancels the watched run when an attempt signal aborts, and not after the watch is removed', () => {
    const runs = new RequestRuns();
    const first = fakeRun();
    const attempt = new AbortController();
    const unwatch = runs.cancelOnAbort(attempt.signal, () => first, 'attempt abandoned');
    attempt.abort();
    expect(first.reasons).toEqual(['attempt abandoned']);
    const second = fakeRun();
    const other = new AbortController();
    runs.cancelOnAbort(other.signal, () => second, 'attempt abandoned')();
    other.abort();
    expect(second.reasons).toEqual([]);
    unwatch();
  });
});
