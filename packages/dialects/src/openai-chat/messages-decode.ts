/**
 * Client Chat `messages` → hub messages (docs/protocols.md "Chat request", "Tool calls and ids", "Tool results",
 * "Images and files"). Each shape error is a 400 that names the field, e.g. `messages[2].content[0].image_url.url`.
 */
import { IopError, invalidRequest, type AssistantPart, type ContentPart, type Message, type TextPart } from '@iop/core';
import { dataUriProblem, isBase64, parseDataUri } from '../shared/data-uri.js';
import { checkToolArguments, ToolCallIds } from '../shared/tool-history.js';
import { openaiFields, isObject, typeName } from '../shared/fields.js';

const { optionalString, readArray, readObject, readString } = openaiFields;

const DETAILS = new Set(['auto', 'low', 'high']);

function unsupported(message: string, param: string): IopError {
  return new IopError('unsupported_field', message, { param });
}

/** `string | TextPart[]` (system, developer, tool): text parts only. */
function decodeTextContent(value: unknown, param: string): TextPart[] {
  if (typeof value === 'string') return [{ type: 'text', text: value }];
  const parts = readArray(value, param);
  return parts.map((raw, i) => {
    const part = readObject(raw, `${param}[${i}]`);
    if (part.type !== 'text')
      throw invalidRequest(
        `${param}[${i}].type must be "text" here, got ${JSON.stringify(part.type)}`,
        `${param}[${i}].type`,
      );
    return { type: 'text', text: readString(part.text, `${param}[${i}].text`) };
  });
}

function decodeUserPart(raw: unknown, param: string): ContentPart {
  const part = readObject(raw, param);
  switch (part.type) {
    case 'text':
      return { type: 'text', text: readString(part.text, `${param}.text`) };
    case 'image_url': {
      const image = readObject(part.image_url, `${param}.image_url`);
      const url = readString(image.url, `${param}.image_url.url`);
      if (!/^(https?:|data:)/i.test(url))
        throw invalidRequest(`${param}.image_url.url must be an http(s) URL or a data: URI`, `${param}.image_url.url`);
      const problem = /^data:/i.test(url) ? dataUriProblem(url) : undefined;
      if (problem !== undefined) throw invalidRequest(`${param}.image_url.url ${problem}`, `${param}.image_url.url`);
      const detail = image.detail;
      if (detail === undefined || detail === null) return { type: 'image', url };
      if (typeof detail !== 'string' || !DETAILS.has(detail))
        throw invalidRequest(`${param}.image_url.detail must be auto, low or high`, `${param}.image_url.detail`);
      return { type: 'image', url, detail: detail as 'auto' | 'low' | 'high' };
    }
    case 'file': {
      const file = readObject(part.file, `${param}.file`);
      if (file.file_id !== undefined)
        throw unsupported('file_id references are not supported; send file_data', `${param}.file.file_id`);
      const fileData = readString(file.file_data, `${param}.file.file_data`);
      const filename = optionalString(file.filename, `${param}.file.filename`);
      const parsed = parseDataUri(fileData);
      if (!isBase64(parsed?.data ?? fileData)) {
        throw invalidRequest(`${param}.file.file_data must be base64 or a base64 data: URI`, `${param}.file.file_data`);
      }
      const result: ContentPart =
        parsed === undefined
          ? { type: 'file', data: fileData, mediaType: 'application/pdf' }
          : { type: 'file', ...parsed };
      if (filename !== undefined) result.filename = filename;
      return result;
    }
    case 'input_audio':
      throw unsupported('audio input is not supported', `${param}.type`);
    default:
      throw invalidRequest(
        `${param}.type must be text, image_url or file, got ${JSON.stringify(part.type)}`,
        `${param}.type`,
      );
  }
}

function decodeAssistant(message: Record<string, unknown>, param: string): AssistantPart[] {
  const parts: AssistantPart[] = [];
  // vLLM convention: clients replay reasoning as `reasoning_content` (or `reasoning`).
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (typeof reasoning === 'string' && reasoning.length > 0) parts.push({ type: 'reasoning', text: reasoning });
  const content = message.content;
  if (typeof content === 'string') {
    if (content.length > 0) parts.push({ type: 'text', text: content });
  } else if (Array.isArray(content)) {
    content.forEach((raw, i) => {
      const part = readObject(raw, `${param}.content[${i}]`);
      if (part.type === 'text')
        parts.push({ type: 'text', text: readString(part.text, `${param}.content[${i}].text`) });
      else if (part.type === 'refusal')
        parts.push({ type: 'text', text: readString(part.refusal, `${param}.content[${i}].refusal`) });
      else throw invalidRequest(`${param}.content[${i}].type must be text or refusal`, `${param}.content[${i}].type`);
    });
  } else if (content !== undefined && content !== null) {
    throw invalidRequest(
      `${param}.content must be a string, an array or null, got ${typeName(content)}`,
      `${param}.content`,
    );
  }
  const refusal = optionalString(message.refusal, `${param}.refusal`);
  if (refusal !== undefined && refusal.length > 0) parts.push({ type: 'text', text: refusal });
  if (message.function_call !== undefined && message.function_call !== null) {
    throw unsupported('function_call is deprecated and not supported; use tool_calls', `${param}.function_call`);
  }
  if (message.tool_calls !== undefined && message.tool_calls !== null) {
    readArray(message.tool_calls, `${param}.tool_calls`).forEach((raw, i) => {
      const at = `${param}.tool_calls[${i}]`;
      const call = readObject(raw, at);
      if (call.type !== undefined && call.type !== 'function')
        throw unsupported(`${at}.type must be "function"`, `${at}.type`);
      const fn = readObject(call.function, `${at}.function`);
      const args = readString(fn.arguments, `${at}.function.arguments`);
      checkToolArguments(args, `${at}.function.arguments`);
      parts.push({
        type: 'tool-call',
        id: readString(call.id, `${at}.id`),
        name: readString(fn.name, `${at}.function.name`),
        arguments: args,
      });
    });
  }
  return parts;
}

/**
 * Decodes `messages` (a non-empty array). A `tool` message must answer an earlier assistant tool call
 * (docs/protocols.md "Tool results"), and replayed tool-call arguments must be JSON objects (docs/protocols.md "Tool
 * calls and ids").
 */
export function decodeMessages(value: unknown): Message[] {
  const list = readArray(value, 'messages');
  if (list.length === 0) throw invalidRequest('messages must contain at least one message', 'messages');
  const callIds = new ToolCallIds();
  return list.map((raw, i): Message => {
    const param = `messages[${i}]`;
    if (!isObject(raw)) throw invalidRequest(`${param} must be an object, got ${typeName(raw)}`, param);
    switch (raw.role) {
      case 'system':
      case 'developer':
        return { role: raw.role, content: decodeTextContent(raw.content, `${param}.content`) };
      case 'user': {
        const content = raw.content;
        if (typeof content === 'string') return { role: 'user', content: [{ type: 'text', text: content }] };
        if (!Array.isArray(content))
          throw invalidRequest(
            `${param}.content must be a string or an array of content parts, got ${typeName(content)}`,
            `${param}.content`,
          );
        const parts = content;
        return { role: 'user', content: parts.map((part, j) => decodeUserPart(part, `${param}.content[${j}]`)) };
      }
      case 'assistant': {
        const content = decodeAssistant(raw, param);
        for (const part of content) if (part.type === 'tool-call') callIds.add(part.id);
        return { role: 'assistant', content };
      }
      case 'tool': {
        const toolCallId = readString(raw.tool_call_id, `${param}.tool_call_id`);
        callIds.expect(toolCallId, `${param}.tool_call_id`, 'assistant tool call');
        return { role: 'tool', toolCallId, content: decodeTextContent(raw.content, `${param}.content`) };
      }
      case 'function':
        throw unsupported('the function role is deprecated and not supported; use tool messages', `${param}.role`);
      default:
        throw invalidRequest(
          `${param}.role must be system, developer, user, assistant or tool, got ${JSON.stringify(raw.role)}`,
          `${param}.role`,
        );
    }
  });
}
