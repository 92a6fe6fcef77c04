/**
 * The gate's I/O boundary: what one attempt asks the edge to dispatch, and how the request is
 * rebuilt per attempt from the original plus a patch list (no deep copies: the original's
 * messages are shared, only the message array is new).
 */
import type { AssistantMessage, InferenceRequest, Message, StreamEvent } from '@iop/core';

/** One attempt, as handed to the `Dispatcher`. */
export interface AttemptRequest {
  /** The request rebuilt for this attempt (patches appended; prefill last when continuing). */
  request: InferenceRequest;
  /** 1-based. */
  attempt: number;
  /** `<requestId>:<attempt>`; send it upstream so a duplicated dispatch is recognizable. */
  idempotencyKey: string;
  /** Providers that faulted on earlier attempts of this request: route elsewhere when possible. */
  avoidProviders: string[];
  /**
   * Set on a continuation: the text the client already has. `request.messages` then ends with an
   * assistant message holding exactly this text, and the backend must continue it (vLLM/SGLang:
   * `continue_final_message: true, add_generation_prompt: false`; llama.cpp server continues a
   * final assistant message). The output must contain only what follows the prefill.
   */
  prefill?: string;
}

/** What `Dispatcher.dispatch` returns: the attempt's decoded events and who served them. */
export interface DispatchedAttempt {
  /**
   * Normalized events (the upstream decoder's output). The iterable may throw (connection
   * failure) or end without a terminal event (cut stream): both count as provider faults.
   */
  events: AsyncIterable<StreamEvent>;
  /** Provider id, once routing chose it (read when the attempt ends). */
  readonly provider?: string | undefined;
  /**
   * True when the dispatcher refused the attempt without reaching a provider (its retry policy or
   * budget said no); its events then carry the final error. The gate stops there and does not
   * count it among the attempts its error message reports. Read when the attempt ends.
   */
  readonly refused?: boolean;
}

/** The edge's side of the contract: runs one attempt on some provider. Must honour `signal`. */
export interface Dispatcher {
  dispatch(attempt: AttemptRequest, signal: AbortSignal): DispatchedAttempt;
}

/** A change applied on top of the original request for later attempts. */
export type RequestPatch = { kind: 'append-message'; message: Message };

/** The corrective patch for a validator's message to the model. */
export function correctivePatch(text: string): RequestPatch {
  return { kind: 'append-message', message: { role: 'user', content: [{ type: 'text', text }] } };
}

/**
 * Rebuilds the request for an attempt: the original's messages, then each patch's message, then
 * the prefill as a final assistant message. Returns the original itself when there is nothing to add.
 */
export function buildAttemptRequest(
  original: InferenceRequest,
  patches: readonly RequestPatch[],
  prefill: string | undefined,
): InferenceRequest {
  if (patches.length === 0 && prefill === undefined) return original;
  const messages: Message[] = original.messages.slice();
  for (const patch of patches) messages.push(patch.message);
  if (prefill !== undefined) {
    const assistant: AssistantMessage = { role: 'assistant', content: [{ type: 'text', text: prefill }] };
    messages.push(assistant);
  }
  return { ...original, messages };
}

export function idempotencyKey(requestId: string, attempt: number): string {
  return `${requestId}:${attempt}`;
}
