import { create } from '@bufbuild/protobuf';
import { ProviderTunnelFrameSchema, RegisterSchema, RunErrorCode } from '@iop/proto';
import { AgentSession } from '../../../src/tunnel/agent-session.js';
import type { RunRequest } from '../../../src/pool/run-stream.js';
import { FrameKind, RunRegistry } from '../../../src/tunnel/run-registry.js';
import { written } from '../../../src/tunnel/large-assignments.js';

const request: RunRequest = {
  requestId: 'req-1',
  model: 'm',
  method: 'POST',
  path: '/v1/chat/completions',
  body: Buffer.from('{}'),
  acceptedTimeoutMs: 1000,
  firstByteTimeoutMs: 5000,
};

function setup() {
  const runs = new RunRegistry();
  const session = new AgentSession(create(RegisterSchema, { agentId: 'gpu-1', maxConcurrency: 4 }), 'ses_1', runs);
  const cancels: Array<{ runId: string; reason: string }> = [];
  session.cancel = (runId, reason) => void cancels.push({ runId, reason });
  return { session, cancels, runs };
}

const frame = (runId: string, kind: FrameKind, fields: Record<string, unknown> = {}) =>
  create(ProviderTunnelFrameSchema, { runId, kind, ...fields });

async function drain(handle: { frames: AsyncIterable<{ kind: FrameKind; errorCode: RunErrorCode }> }) {
  const frames = [];
  for await (const next of handle.frames) frames.push(next);
  return frames;
}

describe('RunHandle clocks and cancellation', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('not accepted within acceptedTimeoutMs: ERROR run_accepted_timeout, CancelRun sent, slot released', async () => {
    const { session, cancels, runs } = setup();
    const handle = runs.start(session, request);
    expect(session.inFlight).toBe(1);
    jest.advanceTimersByTime(1001);
    const frames = await drain(handle);
    expect(frames.map((f) => [f.kind, f.errorCode])).toEqual([[FrameKind.ERROR, RunErrorCode.RUN_ACCEPTED_TIMEOUT]]);
    expect(cancels).toEqual([
      { runId: handle.runId, reason: expect.stringContaining('did not accept the run within 1000 ms') },
    ]);
    expect(session.inFlight).toBe(0);
    expect(runs.size).toBe(0);
  });

  it('ACCEPTED stops the accepted clock and starts the first-byte clock (which RESPONSE_START does not stop)', async () => {
    const { session, cancels, runs } = setup();
    const handle = runs.start(session, request);
    jest.advanceTimersByTime(900);
    expect(handle.deliver(frame(handle.runId, FrameKind.ACCEPTED))).toBeUndefined();
    jest.advanceTimersByTime(4000); // past the accepted timeout, inside the first-byte one
    expect(handle.isFinished).toBe(false);
    void handle.deliver(frame(handle.runId, FrameKind.RESPONSE_START, { status: 200 }));
    jest.advanceTimersByTime(1001);
    const frames = await drain(handle);
    expect(frames.map((f) => [f.kind, f.errorCode])).toEqual([
      [FrameKind.RESPONSE_START, RunErrorCode.UNSPECIFIED],
      [FrameKind.ERROR, RunErrorCode.FIRST_BYTE_TIMEOUT],
    ]);
    expect(cancels).toHaveLength(1);
  });

  it('a run the agent ends (END) is not cancelled; one the edge ends (cancel) is, once', async () => {
    const { session, cancels, runs } = setup();
    const done = runs.start(session, request);
    void done.deliver(frame(done.runId, FrameKind.ACCEPTED));
    void done.deliver(frame(done.runId, FrameKind.RESPONSE_START, { status: 200 }));
    void done.deliver(frame(done.runId, FrameKind.BODY, { body: Buffer.from('{}') }));
    void done.deliver(frame(done.runId, FrameKind.END));
    jest.advanceTimersByTime(10_000);
    expect((await drain(done)).map((f) => f.kind)).toEqual([FrameKind.RESPONSE_START, FrameKind.BODY, FrameKind.END]);
    const dropped = runs.start(session, request);
    let closed = 0;
    runs.attach(dropped.runId, session, () => closed++);
    dropped.cancel('client disconnected');
    dropped.cancel('again');
    expect(cancels).toEqual([{ runId: dropped.runId, reason: 'client disconnected' }]);
    expect(closed).toBe(1);
    expect(session.inFlight).toBe(0);
  });

  it('a Run call reset before ACCEPTED (RunRejected run_call_reset) fails the run at once as run_call_reset; after ACCEPTED it is ignored', async () => {
    const { session, runs } = setup();
    const reset = runs.start(session, request);
    runs.reject(reset.runId, 'run_call_reset');
    expect((await drain(reset)).map((f) => [f.kind, f.errorCode])).toEqual([
      [FrameKind.ERROR, RunErrorCode.RUN_CALL_RESET],
    ]);
    const accepted = runs.start(session, request);
    void accepted.deliver(frame(accepted.runId, FrameKind.ACCEPTED));
    runs.reject(accepted.runId, 'run_call_reset');
    expect(accepted.isFinished).toBe(false);
    accepted.cancel('done');
  });

  it('a large assignment: the accepted clock allows for the queue, then starts again once it has been written', () => {
    const { session, runs } = setup();
    const sent: unknown[] = [];
    session.send = (message) => void sent.push(message);
    const body = Buffer.alloc(2 * 1024 * 1024);
    const first = runs.start(session, { ...request, body });
    const second = runs.start(session, { ...request, body });
    // One large assignment on the stream at a time.
    expect(sent).toHaveLength(1);
    // 1000 ms + the queue at 1 MB/s: past 1000 ms neither has failed.
    jest.advanceTimersByTime(1500);
    expect(first.isFinished || second.isFinished).toBe(false);
    written(sent[0] as never);
    expect(sent).toHaveLength(2);
    jest.advanceTimersByTime(1001);
    expect(first.isFinished).toBe(true);
    expect(second.isFinished).toBe(false);
    second.cancel('done');
  });

  it('a rejected run or a lost session is not cancelled back at the agent', () => {
    const { session, cancels, runs } = setup();
    const rejected = runs.start(session, request);
    runs.reject(rejected.runId, 'at_capacity');
    runs.start(session, request);
    runs.failSession(session);
    expect(cancels).toEqual([]);
    expect(session.inFlight).toBe(0);
  });
});
