/**
 * Builds one Response from hub events, shared by the stream and non-stream encoders: the Response object
 * (docs/protocols.md "Responses object", echoing the request's fields), its lifecycle events and the terminal status.
 *
 * Lifecycle (docs/protocols.md "Responses stream"): `response.created` then `response.in_progress` before anything
 * else; item events from `OutputTracker`; the terminal event once the stream has ended (`end()`), so a `usage` event
 * after `finish` still lands in it:
 * - `finish` → `response.completed`, or `response.incomplete` (`length`, `content_filter`; docs/protocols.md "Finish
 *   reasons");
 * - `error`, or an end with no terminal event → `response.failed` with `error:{code, message}` and the output so far
 *   (open items closed as `incomplete`). iop renders failures this way rather than with the `error` event: openai-node
 *   v6 keeps the snapshot (`finalResponse()` resolves with `status:"failed"`), whereas a flat `error` event is silently
 *   skipped by its stream reader, and Codex CLI reads `response.failed`'s `error.message`. Every terminal event carries
 *   the complete `output` array and `usage`.
 */
import { newId, type EncodeContext, type ErrorEvent, type StreamEvent, type Usage } from '@iop/core';
import { responseErrorCode } from './errors.js';
import { OutputTracker, type EmitWire } from './items.js';
import { responsesStateOf } from './request-state.js';
import { statusOfFinish } from './finish-reason.js';
import { toResponsesUsage } from './usage.js';
import type { OutputItem, ResponseObject } from './wire-types.js';

/** Joins the `output_text` parts of every message item (openai-node `addOutputText`). */
export function outputTextOf(output: readonly OutputItem[]): string {
  let text = '';
  for (const item of output)
    if (item.type === 'message') for (const part of item.content) if (part.type === 'output_text') text += part.text;
  return text;
}

function initialResponse(context: EncodeContext): ResponseObject {
  const state = responsesStateOf(context.request);
  return {
    id: newId('resp_'),
    object: 'response',
    created_at: context.createdAt,
    status: 'in_progress',
    completed_at: null,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: state.instructions,
    max_output_tokens: state.maxOutputTokens,
    model: context.model,
    output: [],
    parallel_tool_calls: state.parallelToolCalls,
    previous_response_id: state.previousResponseId,
    prompt_cache_key: state.promptCacheKey,
    reasoning: state.reasoning,
    safety_identifier: state.safetyIdentifier,
    store: state.store,
    temperature: state.temperature,
    text: state.text,
    tool_choice: state.toolChoice,
    tools: state.tools,
    top_p: state.topP,
    truncation: state.truncation,
    usage: null,
    user: state.user,
    metadata: state.metadata,
  };
}

type Outcome =
  { kind: 'finish'; event: StreamEvent & { type: 'finish' } } | ({ kind: 'error' } & Omit<ErrorEvent, 'type'>);

export class ResponseBuilder {
  readonly response: ResponseObject;
  private readonly tracker: OutputTracker;
  private started = false;
  private ended = false;
  private settled = false;
  private outcome: Outcome | undefined;
  private usage: Usage | undefined;

  constructor(
    context: EncodeContext,
    private readonly emit: EmitWire,
  ) {
    this.response = initialResponse(context);
    this.tracker = new OutputTracker(emit, context.request.tools);
    this.response.output = this.tracker.output;
  }

  /** How the response ended: the `error` event's code/message/status, or undefined. */
  get failure(): Omit<ErrorEvent, 'type'> | undefined {
    return this.outcome?.kind === 'error' ? this.outcome : undefined;
  }

  push(event: StreamEvent): void {
    if (this.ended) return;
    if (this.settled) {
      // Settled: only a failure to keep the response changes how it ends.
      if (event.type === 'error') {
        const { type: _type, ...error } = event;
        this.outcome = { kind: 'error', ...error };
        this.applyOutcome();
      }
      return;
    }
    this.start();
    if (event.type === 'usage') {
      this.usage = event.usage;
      return;
    }
    if (this.outcome !== undefined) return; // nothing but usage after the terminal event
    switch (event.type) {
      case 'text-delta':
        return this.tracker.text(event.text);
      case 'reasoning-delta':
        return this.tracker.reasoning(event.text, event.signature);
      case 'tool-call-delta':
        return this.tracker.toolCall(event);
      case 'finish': {
        this.outcome = { kind: 'finish', event };
        this.tracker.closeAll(statusOfFinish(event.reason).itemStatus);
        return;
      }
      case 'error': {
        const { type: _type, ...error } = event;
        this.outcome = { kind: 'error', ...error };
        this.tracker.closeAll('incomplete');
        return;
      }
      case 'response-start':
        return;
    }
  }

  /**
   * Settles how the response ends without emitting its terminal event: `status`, `error` or
   * `incomplete_details`, `usage`, `completed_at` and `output_text` are final (a stream with no
   * terminal event fails). An `error` event pushed afterwards still fails it (the Responses store
   * could not keep it); `end()` then emits the terminal event. Idempotent; returns the Response.
   */
  settle(): ResponseObject {
    if (this.settled) return this.response;
    this.start();
    this.settled = true;
    if (this.outcome === undefined) {
      this.outcome = {
        kind: 'error',
        code: 'upstream_error',
        message: 'the model stream ended without a finish reason',
      };
      this.tracker.closeAll('incomplete');
    }
    this.applyOutcome();
    return this.response;
  }

  /** Emits the terminal lifecycle event (settling first when `settle()` has not run). Idempotent. */
  end(): void {
    if (this.ended) return;
    this.settle();
    this.ended = true;
    // `output_text` is the SDK's convenience on the object, not a field of the wire event.
    const { output_text: _sdkOnly, ...response } = this.response;
    const type =
      response.status === 'failed'
        ? 'response.failed'
        : response.status === 'completed'
          ? 'response.completed'
          : 'response.incomplete';
    this.emit({ type, response: response as ResponseObject });
  }

  private applyOutcome(): void {
    const response = this.response;
    const outcome = this.outcome!;
    response.usage = toResponsesUsage(this.usage);
    response.completed_at = Math.floor(Date.now() / 1000);
    if (outcome.kind === 'error') {
      response.status = 'failed';
      response.error = { code: responseErrorCode(outcome.code), message: outcome.message };
      response.incomplete_details = null;
    } else {
      const terminal = statusOfFinish(outcome.event.reason);
      response.status = terminal.status;
      response.incomplete_details = terminal.incompleteDetails;
    }
    response.output_text = outputTextOf(response.output);
  }

  private start(): void {
    if (this.started) return;
    this.started = true;
    this.emit({ type: 'response.created', response: this.response });
    this.emit({ type: 'response.in_progress', response: this.response });
  }
}
