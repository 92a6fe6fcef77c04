/**
 * Gemini `contents` and `systemInstruction` → hub messages (docs/protocols.md "Gemini ↔ Chat
 * mapping"; https://ai.google.dev/api/caching#Content).
 *
 * - `user` contents (a missing role is `user`; the older `function` role is read as `user`): `text`
 *   → text, `inlineData` → an image (`image/*`, as a `data:` URI) or a file, `fileData` with an
 *   `http(s)` image URI → an image by URL (a Google Files URI cannot be fetched: 400),
 *   `functionResponse` → a tool message. Gemini CLI merges consecutive user contents, so tool
 *   results may be followed by text: the tool messages come first, then the user message.
 * - `model` contents: `text` → assistant text, `functionCall` → a tool call (its `args` object
 *   as the JSON arguments); `thought` parts are dropped (no backend takes reasoning input) and
 *   `thoughtSignature`s are ignored (any value, Gemini CLI's `skip_thought_signature_validator`
 *   included: it is never forwarded).
 * - Calls and results pair within the request: by `id` when both have one, otherwise the first
 *   unanswered call of that name. A call without `id` gets one (`call_<content>_<part>`); clients
 *   rewrite ids freely (Gemini CLI prefixes them), so they are never checked against ids iop issued.
 *   A result that answers no call is a 400.
 * - `functionResponse.response`: the text of `output` when it is a string, else the object as JSON.
 */
import type { ContentPart, Message, TextPart, ToolCallPart } from '@iop/core';
import { invalidRequest } from '@iop/core';
import { isAbsent, isObject, path } from '../shared/fields.js';
import { isBase64 } from '../shared/data-uri.js';
import { assertJsonDepth } from '../shared/json-depth.js';
import { field, geminiFields } from './fields.js';

const { readArray, readObject, readString } = geminiFields;

interface OpenCall {
  id: string;
  name: string;
  answered: boolean;
}

/** The text of `systemInstruction` (its text parts joined with newlines) as a system message. */
export function decodeSystemInstruction(value: unknown): Message {
  const param = 'systemInstruction';
  const content = typeof value === 'string' ? { parts: [{ text: value }] } : readObject(value, param);
  const texts = readArray(field(content, 'parts'), path(param, 'parts')).map((part, i) =>
    readString(readObject(part, path(param, 'parts', i)).text, path(param, 'parts', i, 'text')),
  );
  return { role: 'system', content: [{ type: 'text', text: texts.join('\n') }] };
}

function userPart(part: Record<string, unknown>, param: string): ContentPart {
  if (typeof part.text === 'string') return { type: 'text', text: part.text };
  const inline = field(part, 'inlineData');
  if (!isAbsent(inline)) {
    const data = readObject(inline, path(param, 'inlineData'));
    const mimeType = readString(field(data, 'mimeType'), path(param, 'inlineData', 'mimeType'));
    const payload = readString(data.data, path(param, 'inlineData', 'data'));
    if (!isBase64(payload))
      throw invalidRequest(
        `Invalid value at '${path(param, 'inlineData', 'data')}': not valid base64`,
        path(param, 'inlineData', 'data'),
      );
    return mimeType.startsWith('image/')
      ? { type: 'image', url: `data:${mimeType};base64,${payload}` }
      : { type: 'file', data: payload, mediaType: mimeType };
  }
  const file = field(part, 'fileData');
  if (!isAbsent(file)) {
    const data = readObject(file, path(param, 'fileData'));
    const uri = readString(field(data, 'fileUri'), path(param, 'fileData', 'fileUri'));
    const mimeType = field(data, 'mimeType');
    if (/^https?:\/\//i.test(uri) && (isAbsent(mimeType) || String(mimeType).startsWith('image/')))
      return { type: 'image', url: uri };
    throw invalidRequest(
      `Invalid value at '${path(param, 'fileData', 'fileUri')}': only http(s) image URIs can be fetched by this backend`,
      path(param, 'fileData', 'fileUri'),
    );
  }
  throw invalidRequest(
    `Invalid value at '${param}': a user part needs text, inlineData, fileData or functionResponse`,
    param,
  );
}

function toolResultText(response: Record<string, unknown>): string {
  return typeof response.output === 'string' ? response.output : JSON.stringify(response);
}

/** The open call a `functionResponse` answers. @throws IopError 400 when none does. */
function answer(open: OpenCall[], id: string | undefined, name: string, param: string): string {
  const call =
    (id === undefined ? undefined : open.find((candidate) => !candidate.answered && candidate.id === id)) ??
    open.find((candidate) => !candidate.answered && candidate.name === name);
  if (call === undefined)
    throw invalidRequest(
      `Invalid value at '${param}': no earlier functionCall of ${JSON.stringify(name)} is left to answer`,
      param,
    );
  call.answered = true;
  return call.id;
}

function decodeUser(parts: unknown[], param: string, open: OpenCall[]): Message[] {
  const out: Message[] = [];
  const content: ContentPart[] = [];
  parts.forEach((value, i) => {
    const partParam = path(param, 'parts', i);
    const part = readObject(value, partParam);
    const response = field(part, 'functionResponse');
    if (isAbsent(response)) {
      content.push(userPart(part, partParam));
      return;
    }
    const result = readObject(response, path(partParam, 'functionResponse'));
    const name = readString(result.name, path(partParam, 'functionResponse', 'name'));
    const id = isAbsent(result.id) ? undefined : readString(result.id, path(partParam, 'functionResponse', 'id'));
    const body = isAbsent(result.response)
      ? {}
      : readObject(result.response, path(partParam, 'functionResponse', 'response'));
    assertJsonDepth(body, path(partParam, 'functionResponse', 'response'));
    const toolCallId = answer(open, id, name, path(partParam, 'functionResponse'));
    out.push({
      role: 'tool',
      toolCallId,
      content: [{ type: 'text', text: toolResultText(body) }],
      ...(typeof body.error === 'string' && body.output === undefined ? { isError: true } : {}),
    });
  });
  if (content.length > 0) out.push({ role: 'user', content });
  return out;
}

function decodeModel(parts: unknown[], param: string, contentIndex: number, open: OpenCall[]): Message | undefined {
  const content: Array<TextPart | ToolCallPart> = [];
  parts.forEach((value, i) => {
    const partParam = path(param, 'parts', i);
    const part = readObject(value, partParam);
    if (part.thought === true) return;
    const call = field(part, 'functionCall');
    if (!isAbsent(call)) {
      const fc = readObject(call, path(partParam, 'functionCall'));
      const name = readString(fc.name, path(partParam, 'functionCall', 'name'));
      const args = isAbsent(fc.args) ? {} : readObject(fc.args, path(partParam, 'functionCall', 'args'));
      assertJsonDepth(args, path(partParam, 'functionCall', 'args'));
      const id = isAbsent(fc.id)
        ? `call_${contentIndex}_${i}`
        : readString(fc.id, path(partParam, 'functionCall', 'id'));
      open.push({ id, name, answered: false });
      content.push({ type: 'tool-call', id, name, arguments: JSON.stringify(args), origin: { kind: 'function' } });
    } else if (typeof part.text === 'string') {
      if (part.text.length > 0) content.push({ type: 'text', text: part.text });
    } else if (
      !isObject(part) ||
      Object.keys(part).some((key) => key !== 'thoughtSignature' && key !== 'thought_signature')
    ) {
      throw invalidRequest(`Invalid value at '${partParam}': a model part needs text or functionCall`, partParam);
    }
  });
  return content.length === 0 ? undefined : { role: 'assistant', content };
}

/** Decodes `contents` (at least one). @throws IopError 400 naming the offending field. */
export function decodeContents(value: unknown): Message[] {
  const contents = readArray(value, 'contents');
  if (contents.length === 0)
    throw invalidRequest("Invalid value at 'contents': contents must not be empty", 'contents');
  const messages: Message[] = [];
  const open: OpenCall[] = [];
  contents.forEach((item, i) => {
    const param = path('contents', i);
    const content = readObject(item, param);
    const role = isAbsent(content.role) ? 'user' : readString(content.role, path(param, 'role'));
    const parts = readArray(content.parts, path(param, 'parts'));
    if (role === 'user' || role === 'function') messages.push(...decodeUser(parts, param, open));
    else if (role === 'model') {
      const message = decodeModel(parts, param, i, open);
      if (message !== undefined) messages.push(message);
    } else
      throw invalidRequest(
        `Invalid value at '${path(param, 'role')}': expected user or model, got ${JSON.stringify(role)}`,
        path(param, 'role'),
      );
  });
  return messages;
}
