/**
 * What a Responses request carries beyond the hub request: the fields a Response echoes (docs/protocols.md "Responses
 * object"), the client's input items (for the store) and the conversation-state switches. The decoder puts it in
 * `InferenceRequest.dialectState`; the encoders and `withHistory` read it back.
 */
import type { InferenceRequest } from '@iop/core';
import type { StoredInputItem } from './wire-types.js';

export interface ResponsesRequestState {
  /**
   * `instructions`; a system message at `messages[0]` for this request only (not carried by `previous_response_id`).
   */
  instructions: string | null;
  /** The request's own input items, each with an `id`. */
  inputItems: StoredInputItem[];
  previousResponseId: string | null;
  /**
   * Tool outputs (`function_call_output`, `custom_tool_call_output`) whose call is not in this
   * request's own input: they must answer a call of the `previous_response_id` conversation,
   * which `withHistory` checks (docs/protocols.md "Tool results"). `param` names the item, e.g. `input[0].call_id`.
   */
  unpairedToolOutputs: Array<{ callId: string; param: string }>;
  /** `store` (default true): whether the edge keeps the response for `previous_response_id` and GET. */
  store: boolean;
  metadata: Record<string, string>;
  /** `tools` exactly as sent (echoed in the Response). */
  tools: unknown[];
  /** `tool_choice` as sent, `"auto"` when absent. */
  toolChoice: unknown;
  parallelToolCalls: boolean;
  temperature: number | null;
  topP: number | null;
  maxOutputTokens: number | null;
  reasoning: { effort: string | null; summary: string | null };
  text: { format: Record<string, unknown>; verbosity: string };
  include: string[];
  promptCacheKey: string | null;
  user: string | null;
  safetyIdentifier: string | null;
  truncation: 'auto' | 'disabled';
}

/**
 * Defaults for a request that did not come through the Responses decoder (e.g. a test building the hub request by
 * hand).
 */
export function defaultRequestState(): ResponsesRequestState {
  return {
    instructions: null,
    inputItems: [],
    previousResponseId: null,
    unpairedToolOutputs: [],
    store: true,
    metadata: {},
    tools: [],
    toolChoice: 'auto',
    parallelToolCalls: true,
    temperature: null,
    topP: null,
    maxOutputTokens: null,
    reasoning: { effort: null, summary: null },
    text: { format: { type: 'text' }, verbosity: 'medium' },
    include: [],
    promptCacheKey: null,
    user: null,
    safetyIdentifier: null,
    truncation: 'disabled',
  };
}

function isRequestState(value: unknown): value is ResponsesRequestState {
  return (
    typeof value === 'object' && value !== null && 'inputItems' in value && 'store' in value && 'toolChoice' in value
  );
}

/** The Responses state of a decoded request (defaults when the request has none). */
export function responsesStateOf(request: InferenceRequest): ResponsesRequestState {
  return isRequestState(request.dialectState) ? request.dialectState : defaultRequestState();
}
