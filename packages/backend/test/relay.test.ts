import type { ProviderTunnelFrame } from '@iop/proto';
import { FrameKind, RunFailure, relayBackend, type BackendCall, type BackendRequest, type RelayRequest } from '../src';

const request: RelayRequest = {
  runId: 'run_1',
  requestId: 'req_1',
  method: 'POST',
  path: '/v1/chat/completions',
  headers: {},
  body: new Uint8Array(),
  firstByteTimeoutMs: 1_000,
  idleTimeoutMs: 1_000,
};
const enc = (text: string): Uint8Array => new TextEncoder().encode(text);

/** A backend answering 200 with `slices` as an SSE body (or failing with `error`). */
function backend(slices: string[], error?: unknown): BackendCall & { seen: BackendRequest[] } {
  const seen: BackendRequest[] = [];
  return {
    seen,
    handle(call) {
      seen.push(call);
      if (error !== undefined) return Promise.reject(error);
      async function* body() {
        for (const slice of slices) yield enc(slice);
      }
      return Promise.resolve({ status: 200, headers: { 'content-type': 'text/event-stream' }, body: body() });
    },
  };
}

async function collect(frames: AsyncIterable<ProviderTunnelFrame>): Promise<ProviderTunnelFrame[]> {
  const out: ProviderTunnelFrame[] = [];
  for await (const frame of frames) out.push(frame);
  return out;
}

describe('relayBackend', () => {
  it('relays RESPONSE_START, each body slice, the usage found in the body, then END', async () => {
    const usage = 'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n';
    const frames = await collect(relayBackend(backend(['data: {"choices":[]}\n\n', usage]), request, new AbortController()));
    expect(frames.map((frame) => frame.kind)).toEqual([FrameKind.RESPONSE_START, FrameKind.BODY, FrameKind.BODY, FrameKind.USAGE, FrameKind.END]);
    expect(frames[0]).toMatchObject({ runId: 'run_1', status: 200 });
    expect(frames[3]!.usage).toMatchObject({ promptTokens: 3, completionTokens: 2 });
  });

  it('ends with an ERROR frame carrying the failure code', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const frames = await collect(relayBackend(backend([], refused), request, new AbortController()));
    expect(frames).toHaveLength(1);
    expect(frames[0]).toMatchObject({ kind: FrameKind.ERROR, errorCode: 'connect_failed' });
  });

  it('aborts the backend request when its consumer stops early', async () => {
    const controller = new AbortController();
    const call = backend(['a', 'b']);
    const frames = relayBackend(call, request, controller);
    await frames.next(); // RESPONSE_START
    await frames.return(undefined);
    expect(call.seen[0]!.signal.aborted).toBe(true);
    expect(controller.signal.reason).toBeInstanceOf(RunFailure);
    expect((controller.signal.reason as RunFailure).code).toBe('cancelled');
  });
});
