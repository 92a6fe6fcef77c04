/**
 * Anthropic request content blocks → hub parts (docs/protocols.md "Messages request", "Tool calls and ids", "Tool
 * results", "Images and files").
 *
 * - `text` → TextPart (`cache_control`, `citations` dropped: Anthropic-only).
 * - `image` base64 → `data:<media_type>;base64,<data>` URI; `url` → the URL; `file` → 400 (a file id is Anthropic's
 *   namespace, docs/protocols.md "Images and files").
 * - `document` base64 PDF → FilePart; plain-text and `content` sources → their text/images; `url` and `file` sources →
 *   400 (no backend can fetch them on the client's behalf).
 * - `tool_use` → ToolCallPart with `input` serialized as the JSON arguments string.
 * - `thinking` / `redacted_thinking` → ReasoningPart (backends drop them; docs/protocols.md "Reasoning").
 * - `tool_result` is handled by the message decoder (it becomes a `tool` message).
 */
import type { AssistantPart, ContentPart, ImagePart, TextPart, ToolMessage } from '@iop/core';
import { IopError, invalidRequest } from '@iop/core';
import { isBase64 } from '../shared/data-uri.js';
import { assertJsonDepth } from '../shared/json-depth.js';
import { anthropicFields, isAbsent, path, type JsonObject } from '../shared/fields.js';

const { readArray, readBoolean, readEnum, readObject, readString } = anthropicFields;

const IMAGE_MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;

function unsupported(message: string, param: string): IopError {
  return new IopError('unsupported_field', message, { param });
}

function blockType(block: JsonObject, param: string): string {
  return readString(block.type, path(param, 'type'));
}

/** A base64 `source.data` (docs/protocols.md "Images and files": a payload that is not base64 gets a 400). */
function readBase64(value: unknown, param: string): string {
  const data = readString(value, param);
  if (!isBase64(data))
    throw invalidRequest(`${param}: ${data.length === 0 ? 'empty' : 'not valid'} base64 data`, param);
  return data;
}

/** A `text` block. */
export function decodeTextBlock(block: JsonObject, param: string): TextPart {
  return { type: 'text', text: readString(block.text, path(param, 'text')) };
}

/** An `image` block (user turns and tool results). */
export function decodeImageBlock(block: JsonObject, param: string): ImagePart {
  const sourceParam = path(param, 'source');
  const source = readObject(block.source, sourceParam);
  const kind = readString(source.type, path(sourceParam, 'type'));
  if (kind === 'base64') {
    const mediaType = readEnum(source.media_type, path(sourceParam, 'media_type'), IMAGE_MEDIA_TYPES);
    const data = readBase64(source.data, path(sourceParam, 'data'));
    return { type: 'image', url: `data:${mediaType};base64,${data}` };
  }
  if (kind === 'url') {
    const url = readString(source.url, path(sourceParam, 'url'));
    if (!/^https?:\/\//i.test(url))
      throw invalidRequest(`${sourceParam}.url: expected an http(s) URL`, path(sourceParam, 'url'));
    return { type: 'image', url };
  }
  if (kind === 'file') {
    throw unsupported(`${sourceParam}: file ids are not supported; send the image as base64 or a URL`, sourceParam);
  }
  throw invalidRequest(`${sourceParam}.type: unknown image source type '${kind}'`, path(sourceParam, 'type'));
}

/** A `document` block: base64 PDF → FilePart; text and content sources → their parts. */
export function decodeDocumentBlock(block: JsonObject, param: string): ContentPart[] {
  const sourceParam = path(param, 'source');
  const source = readObject(block.source, sourceParam);
  const kind = readString(source.type, path(sourceParam, 'type'));
  const title = isAbsent(block.title) ? undefined : readString(block.title, path(param, 'title'));
  switch (kind) {
    case 'base64': {
      const mediaType = readEnum(source.media_type, path(sourceParam, 'media_type'), ['application/pdf'] as const);
      const data = readBase64(source.data, path(sourceParam, 'data'));
      return [
        title === undefined ? { type: 'file', data, mediaType } : { type: 'file', data, mediaType, filename: title },
      ];
    }
    case 'text':
      return [{ type: 'text', text: readString(source.data, path(sourceParam, 'data')) }];
    case 'content': {
      const contentParam = path(sourceParam, 'content');
      if (typeof source.content === 'string') return [{ type: 'text', text: source.content }];
      return readArray(source.content, contentParam).map((item, i) => {
        const itemParam = path(contentParam, i);
        const itemBlock = readObject(item, itemParam);
        const type = blockType(itemBlock, itemParam);
        if (type === 'text') return decodeTextBlock(itemBlock, itemParam);
        if (type === 'image') return decodeImageBlock(itemBlock, itemParam);
        throw invalidRequest(`${itemParam}.type: '${type}' is not allowed in a document`, path(itemParam, 'type'));
      });
    }
    case 'url':
    case 'file':
      throw unsupported(
        `${sourceParam}: '${kind}' document sources are not supported; send the document as base64`,
        sourceParam,
      );
    default:
      throw invalidRequest(`${sourceParam}.type: unknown document source type '${kind}'`, path(sourceParam, 'type'));
  }
}

/** One block of a user turn other than `tool_result`. */
export function decodeUserBlock(block: JsonObject, param: string): ContentPart[] {
  const type = blockType(block, param);
  switch (type) {
    case 'text':
      return [decodeTextBlock(block, param)];
    case 'image':
      return [decodeImageBlock(block, param)];
    case 'document':
      return decodeDocumentBlock(block, param);
    case 'tool_use':
    case 'thinking':
    case 'redacted_thinking':
      throw invalidRequest(`${param}: '${type}' blocks are only allowed in assistant turns`, path(param, 'type'));
    default:
      throw unsupported(`${param}.type: content block type '${type}' is not supported`, path(param, 'type'));
  }
}

/**
 * A `tool_reference` block (tool search, beta `advanced-tool-use-2025-11-20`): the named tool is
 * loaded — offered to the model from now on (`referencedTools`) — and the result says so in text.
 */
function toolReferenceText(name: string): TextPart {
  return { type: 'text', text: `Tool ${name} is now available; call it as a function when it helps.` };
}

/**
 * Names of the tools that `tool_reference` blocks in tool results of `messages` load (not validated: the decoder checks
 * shapes).
 */
export function referencedTools(messages: unknown): Set<string> {
  const names = new Set<string>();
  if (!Array.isArray(messages)) return names;
  for (const message of messages as Array<{ content?: unknown }>) {
    if (!Array.isArray(message?.content)) continue;
    for (const block of message.content as Array<{ type?: unknown; content?: unknown }>) {
      if (block?.type !== 'tool_result' || !Array.isArray(block.content)) continue;
      for (const item of block.content as Array<{ type?: unknown; tool_name?: unknown }>) {
        if (item?.type === 'tool_reference' && typeof item.tool_name === 'string') names.add(item.tool_name);
      }
    }
  }
  return names;
}

/**
 * A `tool_result` block → a hub `tool` message (images and documents stay in its content; docs/protocols.md "Tool
 * results").
 */
export function decodeToolResultBlock(block: JsonObject, param: string): ToolMessage {
  const toolCallId = readString(block.tool_use_id, path(param, 'tool_use_id'));
  const contentParam = path(param, 'content');
  let content: ContentPart[] = [];
  if (typeof block.content === 'string') {
    content = [{ type: 'text', text: block.content }];
  } else if (!isAbsent(block.content)) {
    content = [];
    readArray(block.content, contentParam).forEach((item, i) => {
      const itemParam = path(contentParam, i);
      const itemBlock = readObject(item, itemParam);
      const type = blockType(itemBlock, itemParam);
      if (type === 'text') content.push(decodeTextBlock(itemBlock, itemParam));
      else if (type === 'image') content.push(decodeImageBlock(itemBlock, itemParam));
      else if (type === 'document') content.push(...decodeDocumentBlock(itemBlock, itemParam));
      else if (type === 'tool_reference')
        content.push(toolReferenceText(readString(itemBlock.tool_name, path(itemParam, 'tool_name'))));
      else throw unsupported(`${itemParam}.type: '${type}' is not supported in a tool result`, path(itemParam, 'type'));
    });
  }
  const message: ToolMessage = { role: 'tool', toolCallId, content };
  if (!isAbsent(block.is_error) && readBoolean(block.is_error, path(param, 'is_error'))) message.isError = true;
  return message;
}

/** One block of an assistant turn. */
export function decodeAssistantBlock(block: JsonObject, param: string): AssistantPart {
  const type = blockType(block, param);
  switch (type) {
    case 'text':
      return decodeTextBlock(block, param);
    case 'tool_use': {
      const id = readString(block.id, path(param, 'id'));
      const name = readString(block.name, path(param, 'name'));
      const input = readObject(block.input, path(param, 'input'));
      assertJsonDepth(input, path(param, 'input'));
      return { type: 'tool-call', id, name, arguments: JSON.stringify(input) };
    }
    case 'thinking': {
      const text = readString(block.thinking, path(param, 'thinking'));
      const signature = isAbsent(block.signature) ? undefined : readString(block.signature, path(param, 'signature'));
      return signature === undefined ? { type: 'reasoning', text } : { type: 'reasoning', text, signature };
    }
    case 'redacted_thinking':
      return { type: 'reasoning', text: '', signature: readString(block.data, path(param, 'data')), redacted: true };
    case 'image':
    case 'document':
    case 'tool_result':
      throw invalidRequest(`${param}: '${type}' blocks are not allowed in assistant turns`, path(param, 'type'));
    default:
      throw unsupported(
        `${param}.type: content block type '${type}' is not supported (server tools cannot run on this backend)`,
        path(param, 'type'),
      );
  }
}

/** System content (top-level `system` or a `role:"system"` message): a string or text blocks. */
export function decodeSystemContent(value: unknown, param: string): TextPart[] {
  if (typeof value === 'string') return [{ type: 'text', text: value }];
  return readArray(value, param).map((item, i) => {
    const itemParam = path(param, i);
    const block = readObject(item, itemParam);
    const type = blockType(block, itemParam);
    if (type !== 'text') {
      throw invalidRequest(
        `${itemParam}.type: system content must be text blocks, got '${type}'`,
        path(itemParam, 'type'),
      );
    }
    return decodeTextBlock(block, itemParam);
  });
}
