import { Readable } from 'node:stream';
import { RunErrorCode, type ProviderTunnelFrame } from '@iop/proto';
import { FrameKind } from '../src/frames.js';
import { RunFailure } from '../src/run-failure.js';
import { relayBackend, type RelayRequest } from '../src/relay.js';
import type { BackendCall, BackendRequest } from '../src/backend-call.js';

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
const text = (frame: ProviderTunnelFrame): string => Buffer.from(frame.body).toString('utf8');

/** A backend answering 200 with `body(signal)` as an SSE body (or failing with `error`). */
function backend(
  body: (signal: AbortSignal) => AsyncIterable<Uint8Array>,
  error?: unknown,
): BackendCall & { seen: BackendRequest[] } {
  const seen: BackendRequest[] = [];
  return {
    seen,
    handle(call) {
      seen.push(call);
      if (error !== undefined) return Promise.reject(error);
      return Promise.resolve({
        status: 200,
        headers: { 'content-type': 'text/event-stream' },
        body: body(call.signal),
      });
    },
  };
}

/** The slices as an async generator (the embedded backend's kind of body). */
function generated(slices: string[]): () => AsyncIterable<Uint8Array> {
  return async function* () {
    for (const slice of slices) yield enc(slice);
  };
}

/** The slices as a Node Readable (undici's kind of body), destroyed when the request is aborted. */
function readable(slices: string[], gapMs = 0): (signal: AbortSignal) => Readable {
  return (signal) => {
    const stream = new Readable({ read() {} });
    let index = 0;
    const next = () => {
      if (stream.destroyed) return;
      if (index === slices.length) stream.push(null);
      else {
        stream.push(Buffer.from(slices[index++]!));
        setTimeout(next, gapMs);
      }
    };
    setTimeout(next, gapMs);
    signal.addEventListener('abort', () => stream.destroy(Object.assign(new Error('aborted'), { name: 'AbortError' })));
    return stream;
  };
}

/** Relays into a sink that records every frame and is never full. */
async function collect(
  call: BackendCall,
  controller = new AbortController(),
  options: Partial<RelayRequest> = {},
): Promise<ProviderTunnelFrame[]> {
  const out: ProviderTunnelFrame[] = [];
  await relayBackend(call, { ...request, ...options }, controller, (frame) => {
    out.push(frame);
    return undefined;
  });
  return out;
}

const USAGE = 'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n';

describe('relayBackend', () => {
  it.each([
    ['an async iterable', generated],
    ['a Node Readable', readable],
  ])('relays RESPONSE_START, each body slice of %s, the usage found in the body, then END', async (_kind, body) => {
    const frames = await collect(backend(body(['data: {"choices":[]}\n\n', USAGE])));
    expect(frames.map((frame) => frame.kind)).toEqual([
      FrameKind.RESPONSE_START,
      FrameKind.BODY,
      FrameKind.BODY,
      FrameKind.USAGE,
      FrameKind.END,
    ]);
    expect(frames[0]).toMatchObject({ runId: 'run_1', status: 200, headers: { 'content-type': 'text/event-stream' } });
    expect(text(frames[1]!)).toBe('data: {"choices":[]}\n\n');
    expect(text(frames[2]!)).toBe(USAGE);
    expect(frames[3]!.usage).toMatchObject({ promptTokens: 3, completionTokens: 2 });
  });

  it('ends with an ERROR frame carrying the failure code', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const frames = await collect(backend(generated([]), refused));
    expect(frames).toHaveLength(1);
    expect(frames[0]).toMatchObject({ kind: FrameKind.ERROR, errorCode: RunErrorCode.CONNECT_FAILED });
  });

  it('an abort mid-body stops the backend request and ends with ERROR carrying the abort reason', async () => {
    const controller = new AbortController();
    const call = backend(readable(['data: a\n\n', 'data: b\n\n', 'data: c\n\n'], 20));
    const out: ProviderTunnelFrame[] = [];
    await relayBackend(call, request, controller, (frame) => {
      out.push(frame);
      if (frame.kind === FrameKind.BODY) controller.abort(new RunFailure(RunErrorCode.CANCELLED, 'client gone'));
      return undefined;
    });
    expect(out.map((frame) => frame.kind)).toEqual([FrameKind.RESPONSE_START, FrameKind.BODY, FrameKind.ERROR]);
    expect(out[2]).toMatchObject({ errorCode: RunErrorCode.CANCELLED, errorMessage: 'client gone' });
    expect(call.seen[0]!.signal.aborted).toBe(true);
  });

  it('a full sink holds a Readable body: nothing more is read until it is released, and the backlog leaves as one slice', async () => {
    const slices = Array.from({ length: 40 }, (_, index) => `data: ${index}\n\n`);
    let bodyStream: Readable | undefined;
    const call = backend((signal) => (bodyStream = readable(slices)(signal)));
    const out: ProviderTunnelFrame[] = [];
    let release: (() => void) | undefined;
    const relayed = relayBackend(call, request, new AbortController(), (frame) => {
      out.push(frame);
      if (frame.kind !== FrameKind.BODY || release !== undefined) return undefined;
      return new Promise<void>((resolve) => (release = resolve));
    });
    while (out.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    const all = slices.join('');
    const firstRead = text(out[1]!);
    expect(all.startsWith(firstRead)).toBe(true);
    // The source pushes the other slices one timer tick apart: wait until it has pushed them all
    // (a relay that read on would keep the body's buffer below that, and this waits in vain).
    for (
      const deadline = Date.now() + 5_000;
      bodyStream!.readableLength < all.length - firstRead.length && Date.now() < deadline;
    )
      await new Promise((resolve) => setTimeout(resolve, 5));
    expect(bodyStream!.readableLength).toBe(all.length - firstRead.length); // the rest waits in the body
    // RESPONSE_START and the one slice that filled the sink, nothing more.
    expect(out.map((frame) => frame.kind)).toEqual([FrameKind.RESPONSE_START, FrameKind.BODY]);
    release!();
    await relayed;
    const bodies = out.filter((frame) => frame.kind === FrameKind.BODY).map(text);
    // What piled up goes as one frame (one write on the tunnel), not a frame per chunk.
    expect(bodies).toEqual([firstRead, all.slice(firstRead.length)]);
    expect(out.at(-1)!.kind).toBe(FrameKind.END);
  });

  it('the idle clock stops while the sink holds the body back, and runs while the backend is silent', async () => {
    // Held for 3× the idle timeout by the consumer: no idle_timeout.
    let release: (() => void) | undefined;
    const held: ProviderTunnelFrame[] = [];
    const heldRun = relayBackend(
      backend(readable(['data: a\n\n', 'data: b\n\n'])),
      { ...request, idleTimeoutMs: 30 },
      new AbortController(),
      (frame) => {
        held.push(frame);
        if (frame.kind !== FrameKind.BODY || release !== undefined) return undefined;
        setTimeout(() => release!(), 90);
        return new Promise<void>((resolve) => (release = resolve));
      },
    );
    await heldRun;
    expect(held.at(-1)!.kind).toBe(FrameKind.END);
    // A backend silent for longer than the idle timeout after its first slice.
    const silent = await collect(backend(readable(['data: a\n\n', 'data: b\n\n'], 80)), new AbortController(), {
      idleTimeoutMs: 30,
    });
    expect(silent.map((frame) => frame.kind)).toEqual([FrameKind.RESPONSE_START, FrameKind.BODY, FrameKind.ERROR]);
    expect(silent[2]!.errorCode).toBe(RunErrorCode.IDLE_TIMEOUT);
  });

  it('no first byte within the first-byte timeout is first_byte_timeout', async () => {
    const frames = await collect(backend(readable(['data: late\n\n'], 100)), new AbortController(), {
      firstByteTimeoutMs: 20,
    });
    expect(frames.map((frame) => frame.kind)).toEqual([FrameKind.RESPONSE_START, FrameKind.ERROR]);
    expect(frames[1]!.errorCode).toBe(RunErrorCode.FIRST_BYTE_TIMEOUT);
  });
});
