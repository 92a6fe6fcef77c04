/**
 * Responses `input` → hub messages (docs/protocols.md "Responses request", "Responses input and Chat messages", "Codex
 * CLI").
 *
 * - A string is one user message.
 * - Messages (`{role, content, type?:"message", id?, status?}`): user/system/developer parts `input_text`,
 *   `input_image`, `input_file`; assistant parts `output_text`, `refusal` (as text).
 * - Assistant-side items — assistant messages, `function_call`, `custom_tool_call` and replayed `reasoning` — join the
 *   assistant message that ends the conversation so far, or start one (docs/protocols.md "Responses input and Chat
 *   messages": a run of function calls attaches to the preceding assistant message).
 * - `function_call_output` / `custom_tool_call_output` → a tool message. One that answers no earlier call of the input
 *   is listed in `unpairedToolOutputs`: with `previous_response_id` it may answer a stored call (`withHistory` checks),
 *   without it the request is a 400 (docs/protocols.md "Tool results").
 * - Items of hosted tools (`web_search_call`, `tool_search_call`, …) are dropped with a warning. Every item is also
 *   kept for the response store, with an `id` minted (`msg_…`) where missing.
 */
import {
  IopError,
  invalidRequest,
  newId,
  type AssistantMessage,
  type AssistantPart,
  type ContentPart,
  type Message,
  type TextPart,
} from '@iop/core';
import { openaiFields, isObject, typeName, type JsonObject } from '../shared/fields.js';
import { dataUriProblem, isBase64, parseDataUri } from '../shared/data-uri.js';
import { checkToolArguments, ToolCallIds } from '../shared/tool-history.js';
import { backendToolName } from './tools-decode.js';
import type { StoredInputItem } from './wire-types.js';

const { optionalString, readArray, readObject, readString } = openaiFields;

export interface DecodedInput {
  messages: Message[];
  /** The client's items, each with an `id`. */
  items: StoredInputItem[];
  /** Tool outputs answering no earlier call of this input (with `call_id`'s param), in order. */
  unpairedToolOutputs: Array<{ callId: string; param: string }>;
}

function unsupported(message: string, param: string): IopError {
  return new IopError('unsupported_field', message, { param });
}

function filePart(part: JsonObject, param: string): ContentPart {
  if (part.file_id !== undefined && part.file_id !== null)
    throw unsupported(`${param}.file_id: file ids are not supported; send file_data`, `${param}.file_id`);
  if (part.file_url !== undefined && part.file_url !== null)
    throw unsupported(`${param}.file_url: file URLs are not supported; send file_data`, `${param}.file_url`);
  const fileData = readString(part.file_data, `${param}.file_data`);
  const filename = optionalString(part.filename, `${param}.filename`);
  const match = parseDataUri(fileData);
  if (!isBase64(match?.data ?? fileData))
    throw invalidRequest(`${param}.file_data must be base64 or a base64 data: URI`, `${param}.file_data`);
  const file: ContentPart = match
    ? { type: 'file', mediaType: match.mediaType, data: match.data }
    : {
        type: 'file',
        mediaType: filename?.toLowerCase().endsWith('.pdf') === false ? 'application/octet-stream' : 'application/pdf',
        data: fileData,
      };
  if (filename !== undefined) file.filename = filename;
  return file;
}

function imagePart(part: JsonObject, param: string): ContentPart {
  if (part.file_id !== undefined && part.file_id !== null)
    throw unsupported(`${param}.file_id: file ids are not supported; send image_url`, `${param}.file_id`);
  const url = readString(part.image_url, `${param}.image_url`);
  if (!/^(https?:|data:)/i.test(url))
    throw invalidRequest(`${param}.image_url must be an http(s) URL or a data: URI`, `${param}.image_url`);
  const problem = /^data:/i.test(url) ? dataUriProblem(url) : undefined;
  if (problem !== undefined) throw invalidRequest(`${param}.image_url ${problem}`, `${param}.image_url`);
  const detail = part.detail;
  if (detail === 'auto' || detail === 'low' || detail === 'high') return { type: 'image', url, detail };
  return { type: 'image', url };
}

/** User-side parts (`input_text`, `input_image`, `input_file`); `output_text` is read as text too. */
function contentParts(value: unknown, param: string): ContentPart[] {
  if (typeof value === 'string') return [{ type: 'text', text: value }];
  return readArray(value, param).map((raw, k): ContentPart => {
    const partParam = `${param}[${k}]`;
    const part = readObject(raw, partParam);
    switch (part.type) {
      case 'input_text':
      case 'output_text':
        return { type: 'text', text: readString(part.text, `${partParam}.text`) };
      case 'input_image':
        return imagePart(part, partParam);
      case 'input_file':
        return filePart(part, partParam);
      default:
        throw invalidRequest(
          `${partParam}.type must be input_text, input_image or input_file, got ${JSON.stringify(part.type)}`,
          `${partParam}.type`,
        );
    }
  });
}

function textOnly(parts: ContentPart[], param: string): TextPart[] {
  for (const part of parts)
    if (part.type !== 'text') throw invalidRequest(`${param}: system and developer messages take text only`, param);
  return parts as TextPart[];
}

function assistantParts(value: unknown, param: string): AssistantPart[] {
  if (typeof value === 'string') return [{ type: 'text', text: value }];
  return readArray(value, param).map((raw, k): AssistantPart => {
    const partParam = `${param}[${k}]`;
    const part = readObject(raw, partParam);
    if (part.type === 'output_text' || part.type === 'input_text')
      return { type: 'text', text: readString(part.text, `${partParam}.text`) };
    if (part.type === 'refusal') return { type: 'text', text: readString(part.refusal, `${partParam}.refusal`) };
    throw invalidRequest(
      `${partParam}.type must be output_text or refusal, got ${JSON.stringify(part.type)}`,
      `${partParam}.type`,
    );
  });
}

/** Replayed reasoning: `content` reasoning text, else the summaries. Never rejected (a replay must not 400). */
function reasoningPart(item: JsonObject): AssistantPart | undefined {
  const texts: string[] = [];
  const collect = (list: unknown, type: string) => {
    if (!Array.isArray(list)) return;
    for (const part of list)
      if (isObject(part) && part.type === type && typeof part.text === 'string') texts.push(part.text);
  };
  collect(item.content, 'reasoning_text');
  if (texts.length === 0) collect(item.summary, 'summary_text');
  const signature = typeof item.encrypted_content === 'string' ? item.encrypted_content : undefined;
  if (texts.length === 0 && signature === undefined) return undefined;
  const part: AssistantPart = { type: 'reasoning', text: texts.join('\n\n') };
  if (signature !== undefined) part.signature = signature;
  return part;
}

function callId(item: JsonObject, param: string): string {
  const id = readString(item.call_id, `${param}.call_id`);
  if (id.length === 0) throw invalidRequest(`${param}.call_id must not be empty`, `${param}.call_id`);
  return id;
}

function toolOutput(value: unknown, param: string): ContentPart[] {
  return typeof value === 'string' ? [{ type: 'text', text: value }] : contentParts(value, param);
}

class InputBuilder {
  readonly messages: Message[] = [];
  readonly unpairedToolOutputs: Array<{ callId: string; param: string }> = [];
  private readonly callIds = new ToolCallIds();

  /** The assistant message ending the conversation so far, created when absent. */
  assistant(): AssistantMessage {
    const last = this.messages.at(-1);
    if (last !== undefined && last.role === 'assistant') return last;
    const message: AssistantMessage = { role: 'assistant', content: [] };
    this.messages.push(message);
    return message;
  }

  item(item: JsonObject, param: string, warnings: string[]): void {
    const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
    switch (type) {
      case 'message':
        return this.message(item, param);
      case 'function_call': {
        const namespace = optionalString(item.namespace, `${param}.namespace`);
        const name = readString(item.name, `${param}.name`);
        const args = readString(item.arguments, `${param}.arguments`);
        checkToolArguments(args, `${param}.arguments`);
        const id = this.call(item, param);
        this.assistant().content.push(
          namespace === undefined
            ? { type: 'tool-call', id, name, arguments: args }
            : {
                type: 'tool-call',
                id,
                name: backendToolName(namespace, name),
                arguments: args,
                origin: { kind: 'namespace', namespace, name },
              },
        );
        return;
      }
      case 'custom_tool_call': {
        const namespace = optionalString(item.namespace, `${param}.namespace`);
        const name = readString(item.name, `${param}.name`);
        const input = readString(item.input, `${param}.input`);
        this.assistant().content.push({
          type: 'tool-call',
          id: this.call(item, param),
          name: namespace === undefined ? name : backendToolName(namespace, name),
          arguments: JSON.stringify({ input }),
          origin: namespace === undefined ? { kind: 'custom' } : { kind: 'custom', namespace, name },
        });
        return;
      }
      case 'function_call_output':
      case 'custom_tool_call_output': {
        const id = callId(item, param);
        if (!this.callIds.has(id)) this.unpairedToolOutputs.push({ callId: id, param: `${param}.call_id` });
        this.messages.push({ role: 'tool', toolCallId: id, content: toolOutput(item.output, `${param}.output`) });
        return;
      }
      case 'reasoning': {
        const part = reasoningPart(item);
        if (part !== undefined) this.assistant().content.push(part);
        return;
      }
      case 'item_reference':
        throw unsupported(`${param}: item references are not supported; send the item itself`, `${param}.type`);
      default:
        if (typeof type !== 'string')
          throw invalidRequest(`${param}.type must be a string, got ${typeName(type)}`, `${param}.type`);
        warnings.push(`dropped input item ${param} (${type}): a chat backend cannot replay it`);
    }
  }

  /** A tool call's `call_id`, remembered for the pairing of later outputs. */
  private call(item: JsonObject, param: string): string {
    const id = callId(item, param);
    this.callIds.add(id);
    return id;
  }

  private message(item: JsonObject, param: string): void {
    const role = item.role;
    const contentParam = `${param}.content`;
    if (role === 'user') this.messages.push({ role: 'user', content: contentParts(item.content, contentParam) });
    else if (role === 'system' || role === 'developer')
      this.messages.push({ role, content: textOnly(contentParts(item.content, contentParam), contentParam) });
    else if (role === 'assistant') this.assistant().content.push(...assistantParts(item.content, contentParam));
    else
      throw invalidRequest(
        `${param}.role must be user, assistant, system or developer, got ${JSON.stringify(role)}`,
        `${param}.role`,
      );
  }
}

/**
 * The 400 for a tool output that answers no tool call of the conversation (OpenAI answers "No tool
 * call found for function call output with call_id …", `param` the item's `call_id`).
 */
export function noToolCallFor(output: { callId: string; param: string }): IopError {
  const id = output.callId.length > 80 ? `${output.callId.slice(0, 80)}…` : output.callId;
  return invalidRequest(
    `No tool call found for function call output with call_id ${JSON.stringify(id)}.`,
    output.param,
  );
}

/** Decodes `input` (string or item list). @throws IopError 400 naming the item field at fault. */
export function decodeInput(value: unknown, warnings: string[]): DecodedInput {
  if (value === undefined || value === null) return { messages: [], items: [], unpairedToolOutputs: [] };
  if (typeof value === 'string') {
    return {
      messages: [{ role: 'user', content: [{ type: 'text', text: value }] }],
      items: [{ id: newId('msg_'), type: 'message', role: 'user', content: [{ type: 'input_text', text: value }] }],
      unpairedToolOutputs: [],
    };
  }
  const builder = new InputBuilder();
  const items: StoredInputItem[] = [];
  readArray(value, 'input').forEach((raw, i) => {
    const param = `input[${i}]`;
    const item = readObject(raw, param);
    builder.item(item, param, warnings);
    const id = typeof item.id === 'string' && item.id.length > 0 ? item.id : newId('msg_');
    const type = typeof item.type === 'string' ? item.type : 'message';
    items.push({ ...item, id, type });
  });
  return { messages: builder.messages, items, unpairedToolOutputs: builder.unpairedToolOutputs };
}
