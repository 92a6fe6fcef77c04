/**
 * Path B, normalized: the client request (any dialect) runs through the model's stream gate; the
 * gate dispatches attempts (chat runs on providers, decoded into StreamEvents), validates and
 * releases events, and the client's dialect encodes them. A stream's headers are sent only with
 * the first released event, so a failure before it is still a real HTTP error; after it, failures
 * arrive as the dialect's in-band error event. Non-stream answers are built from the complete
 * released event list.
 */
import type { Response } from 'express';
import {
  IopError,
  errorEventOf,
  iopErrorOf,
  toIopError,
  type Dialect,
  type EncodeContext,
  type StreamEncoder,
  type StreamEvent,
} from '@iop/core';
import type { Dispatcher, GateOverrides, StreamGate } from '@iop/stream-gate';
import { drained, endStalled } from '../http/drained.js';
import { stopError } from '../attempt/request-deadline.js';
import type { UsageRecorder } from '../attempt/usage-recorder.js';

export interface NormalizedOptions {
  dialect: Dialect;
  context: EncodeContext;
  stream: boolean;
  usage: UsageRecorder;
  gate: StreamGate;
  dispatcher: Dispatcher;
  /** Aborted when the request stops (client gone, deadline, write stall); an IopError reason is given to the client. */
  signal: AbortSignal;
  /** Stops the request (the gate's run is cancelled at its agent) with the error the client gets. */
  stop?: (error: IopError) => void;
  /** A client that takes nothing for this long ends the stream with an in-band error, ms. */
  writeStallTimeoutMs?: number;
  overrides?: GateOverrides;
  /** Called once with the first byte written to the client (TTFT). */
  onFirstByte?: () => void;
  /** Receives the released answer's finish reason (OpenAI's terms; `other` as the backend's own value). */
  finishReasons?: string[];
  /**
   * Called with the final response object (Responses store) before the response ends, and awaited:
   * a client that reuses the id at once (`previous_response_id`, on any edge) finds it stored.
   */
  onResult?: (result: unknown) => void | Promise<void>;
}

/**
 * Writes the answer. Returns the failure that ended a stream after its first byte (sent as the
 * dialect's in-band error event: an error event the gate released, the request stopped, or a
 * client that stopped reading), undefined for a complete answer.
 * @throws IopError for a failure before anything was written (the client gets it as an HTTP error).
 */
export async function writeNormalized(res: Response, options: NormalizedOptions): Promise<IopError | undefined> {
  const { dialect, context, usage } = options;
  const run = options.gate.run(context.request, options.dispatcher, {
    requestId: context.requestId,
    signal: options.signal,
    canContinue: false,
    ...(options.overrides === undefined ? {} : { overrides: options.overrides }),
  });
  const iterator = run[Symbol.asyncIterator]();
  const note = (event: StreamEvent) => {
    if (event.type === 'usage') usage.recordAnswer(event.usage);
    else if (event.type === 'finish')
      options.finishReasons?.push(event.reason === 'other' && event.raw !== null ? event.raw : event.reason);
  };

  if (!options.stream) return writeWhole(res, options, iterator, note);

  const first = await iterator.next();
  if (first.done === true) {
    // Nothing was released: the client went away, or the deadline passed (a real HTTP error then).
    const error = stopError(options.signal, undefined);
    if (error !== undefined) throw error;
    return undefined;
  }
  if (first.value.type === 'error') throw iopErrorOf(first.value);
  const encoder = dialect.createStreamEncoder(context);
  res.status(200);
  res.setHeader('content-type', encoder.contentType ?? 'text/event-stream; charset=utf-8');
  res.setHeader('cache-control', 'no-cache');
  let started = false;
  let backpressure = false;
  const write = (text: string) => {
    if (text.length === 0 || res.destroyed) return;
    if (!started) {
      started = true;
      options.onFirstByte?.();
    }
    if (!res.write(text)) backpressure = true;
  };
  let failure: IopError | undefined;
  note(first.value);
  write(encoder.push(first.value));
  for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) {
    note(next.value);
    if (next.value.type === 'error') failure = iopErrorOf(next.value);
    write(encoder.push(next.value));
    if (backpressure) {
      backpressure = false;
      if (!(await drained(res, options.writeStallTimeoutMs))) {
        const error = new IopError(
          'timeout',
          `the client read nothing for ${options.writeStallTimeoutMs} ms; the stream was ended`,
        );
        options.stop?.(error);
        void iterator.return?.(undefined);
        endStalled(res, encoder.push(errorEventOf(error)) + encoder.end(), options.writeStallTimeoutMs ?? 0);
        return error;
      }
    }
  }
  const stopped = stopError(options.signal, undefined);
  if (stopped !== undefined) {
    failure = stopped;
    write(encoder.push(errorEventOf(stopped)));
  }
  failure = (await keepResult(encoder, options)) ?? failure;
  write(encoder.end());
  if (encoder.settle === undefined) {
    const result = encoder.result();
    if (result !== undefined) await options.onResult?.(result);
  }
  res.end();
  return failure;
}

/** A non-stream answer: built from the complete released event list; a released error is the HTTP error. */
async function writeWhole(
  res: Response,
  options: NormalizedOptions,
  iterator: AsyncIterator<StreamEvent>,
  note: (event: StreamEvent) => void,
): Promise<undefined> {
  const events: StreamEvent[] = [];
  for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) {
    note(next.value);
    if (next.value.type === 'error') throw iopErrorOf(next.value);
    events.push(next.value);
  }
  if (options.signal.aborted) {
    const error = stopError(options.signal, undefined);
    if (error !== undefined) throw error;
    return undefined;
  }
  const body = options.dialect.encodeResponse(events, options.context);
  await options.onResult?.(body);
  res.status(200).json(body);
  return undefined;
}

/**
 * Keeps a stream's final response object (`onResult`, the Responses store) before its terminal
 * event is written, so that event can tell the truth: when keeping fails, an `error` event pushed
 * into the settled encoder ends the stream failed instead. Returns that failure.
 */
async function keepResult(encoder: StreamEncoder, options: NormalizedOptions): Promise<IopError | undefined> {
  if (encoder.settle === undefined || options.onResult === undefined) return undefined;
  try {
    await options.onResult(encoder.settle());
    return undefined;
  } catch (caught) {
    const error = toIopError(caught);
    encoder.push(errorEventOf(error));
    return error;
  }
}
