/**
 * Stored conversation state for `previous_response_id` (docs/protocols.md "Responses request", "Responses input and
 * Chat messages", "What cannot be mapped").
 *
 * A stored response keeps its Response object, its own input items (with ids) and the resolved conversation: the
 * earlier history, this request's input and the response's output, as hub messages, WITHOUT `instructions` (they apply
 * to one request only, docs/protocols.md "Responses request"). A follow-up request is then `[its instructions] +
 * previous.conversation + its input` (`withHistory`).
 */
import type { AssistantMessage, AssistantPart, InferenceRequest, Message } from '@iop/core';
import { noToolCallFor } from './messages-decode.js';
import { backendToolName } from './tools-decode.js';
import { responsesStateOf } from './request-state.js';
import type { OutputItem, ResponseObject, StoredInputItem } from './wire-types.js';

export interface StoredResponse {
  /** `resp_…`, the Response's id. */
  id: string;
  /** Unix seconds (the Response's `created_at`). */
  createdAt: number;
  response: ResponseObject;
  /** The request's own input items, each with an `id` (for `GET /v1/responses/{id}/input_items`). */
  inputItems: StoredInputItem[];
  /** History + input + output as hub messages, instructions excluded. */
  conversation: Message[];
}

/**
 * The output items as one assistant message (reasoning, text and tool calls in output order); [] when there is nothing.
 */
export function outputToMessages(output: readonly OutputItem[]): Message[] {
  const content: AssistantPart[] = [];
  for (const item of output) {
    switch (item.type) {
      case 'reasoning': {
        const text =
          (item.content ?? []).map((part) => part.text).join('') || item.summary.map((part) => part.text).join('\n\n');
        const part: AssistantPart = { type: 'reasoning', text };
        if (typeof item.encrypted_content === 'string') part.signature = item.encrypted_content;
        if (text.length > 0 || part.signature !== undefined) content.push(part);
        break;
      }
      case 'message':
        for (const part of item.content) if (part.text.length > 0) content.push({ type: 'text', text: part.text });
        break;
      case 'function_call':
        content.push(
          item.namespace === undefined
            ? { type: 'tool-call', id: item.call_id, name: item.name, arguments: item.arguments }
            : {
                type: 'tool-call',
                id: item.call_id,
                name: backendToolName(item.namespace, item.name),
                arguments: item.arguments,
                origin: { kind: 'namespace', namespace: item.namespace, name: item.name },
              },
        );
        break;
      case 'custom_tool_call':
        content.push({
          type: 'tool-call',
          id: item.call_id,
          name: item.namespace === undefined ? item.name : backendToolName(item.namespace, item.name),
          arguments: JSON.stringify({ input: item.input }),
          origin:
            item.namespace === undefined
              ? { kind: 'custom' }
              : { kind: 'custom', namespace: item.namespace, name: item.name },
        });
        break;
    }
  }
  if (content.length === 0) return [];
  const message: AssistantMessage = { role: 'assistant', content };
  return [message];
}

/** The request's messages without its `instructions` message. */
function ownMessages(request: InferenceRequest): Message[] {
  return responsesStateOf(request).instructions === null ? request.messages : request.messages.slice(1);
}

/**
 * What the store keeps for a finished response, or undefined when the request said `store:false`
 * (nothing may be kept then).
 */
export function storedResponseOf(request: InferenceRequest, response: ResponseObject): StoredResponse | undefined {
  return responsesStateOf(request).store ? responseRecordOf(request, response) : undefined;
}

/**
 * The same record whatever `store` said: what a Responses WebSocket keeps in memory of the
 * connection's most recent response, so that `previous_response_id` continues it with
 * `store: false` too (docs/protocols.md "Responses over WebSocket").
 */
export function responseRecordOf(request: InferenceRequest, response: ResponseObject): StoredResponse {
  const state = responsesStateOf(request);
  return {
    id: response.id,
    createdAt: response.created_at,
    response,
    inputItems: state.inputItems,
    conversation: [...ownMessages(request), ...outputToMessages(response.output)],
  };
}

/**
 * Prepends a stored conversation to a request that named it in `previous_response_id`: the result is `[instructions of
 * this request] + previous.conversation + this request's input`. The previous response's instructions are not carried
 * (docs/protocols.md "Responses request"). Returns a new request; the argument is unchanged.
 * @throws IopError 400 when a tool output of the request answers no call of the conversation (docs/protocols.md "Tool
 * results").
 */
export function withHistory(request: InferenceRequest, previous: StoredResponse): InferenceRequest {
  const unpaired = responsesStateOf(request).unpairedToolOutputs;
  if (unpaired.length > 0) {
    const calls = new Set<string>();
    for (const message of previous.conversation) {
      if (message.role !== 'assistant') continue;
      for (const part of message.content) if (part.type === 'tool-call') calls.add(part.id);
    }
    const orphan = unpaired.find((output) => !calls.has(output.callId));
    if (orphan !== undefined) throw noToolCallFor(orphan);
  }
  const instructions = responsesStateOf(request).instructions === null ? [] : request.messages.slice(0, 1);
  return { ...request, messages: [...instructions, ...previous.conversation, ...ownMessages(request)] };
}
