/**
 * Anthropic `messages` → hub messages (docs/protocols.md "Messages request", "System instructions", "Tool results").
 *
 * - Consecutive turns of the same role are merged, as the Messages API itself does (docs/protocols.md "Messages
 *   request").
 * - A user turn's `tool_result` blocks become `tool` messages, in block order, followed by one `user` message with the
 *   turn's other blocks in their order (docs/protocols.md "Tool results": results first).
 * - `role: "system"` messages (docs/protocols.md "Claude Code") become hub `system` messages at their position; they
 *   are never rejected.
 * - A `tool_result` must answer a `tool_use` block of an earlier assistant turn (docs/protocols.md "Tool results"; the
 *   API itself rejects an orphan result), else 400 naming its `tool_use_id`.
 * - Every `tool_use` of an assistant turn must be answered by a `tool_result` in the next user turn (`role: "system"`
 *   messages in between are skipped), else 400 in the API's own words (docs/protocols.md "Messages request") — before
 *   any backend call, not a template error from the backend.
 * - A final assistant turn (a prefill) stays the last message; the backend encoder decides how to continue it (e.g.
 *   vLLM `continue_final_message`) or to refuse it.
 */
import type { AssistantMessage, ContentPart, Message, ToolMessage } from '@iop/core';
import { invalidRequest } from '@iop/core';
import { decodeAssistantBlock, decodeSystemContent, decodeToolResultBlock, decodeUserBlock } from './content-decode.js';
import { anthropicFields, path } from '../shared/fields.js';
import { ToolCallIds } from '../shared/tool-history.js';

const { readArray, readEnum, readObject, readString } = anthropicFields;

const ROLES = ['user', 'assistant', 'system'] as const;

/** The user turn being assembled (consecutive user messages merge into it). */
interface PendingUserTurn {
  toolMessages: ToolMessage[];
  parts: ContentPart[];
}

/** Content of a turn: a string (one text block) or an array of blocks, each checked to be an object. */
function forEachBlock(
  content: unknown,
  param: string,
  onBlock: (block: Record<string, unknown>, blockParam: string) => void,
): void {
  if (typeof content === 'string') {
    onBlock({ type: 'text', text: content }, param);
    return;
  }
  readArray(content, param).forEach((item, i) => {
    const blockParam = path(param, i);
    onBlock(readObject(item, blockParam), blockParam);
  });
}

/**
 * Decodes the `messages` array.
 * @throws IopError `invalid_request` (400) naming the field (e.g. `messages.3.content.0.source`),
 *   or `unsupported_field` for blocks a chat backend cannot take (server tools, file ids).
 */
export function decodeMessages(value: unknown, param = 'messages'): Message[] {
  const items = readArray(value, param);
  if (items.length === 0) throw invalidRequest(`${param}: at least one message is required`, param);
  const messages: Message[] = [];
  let user: PendingUserTurn | undefined;
  let assistant: AssistantMessage | undefined;
  const toolUseIds = new ToolCallIds();

  const flushUser = (): void => {
    if (user === undefined) return;
    messages.push(...user.toolMessages);
    if (user.parts.length > 0 || user.toolMessages.length === 0) messages.push({ role: 'user', content: user.parts });
    user = undefined;
  };
  const flushAssistant = (): void => {
    if (assistant !== undefined) messages.push(assistant);
    assistant = undefined;
  };

  items.forEach((item, i) => {
    const messageParam = path(param, i);
    const message = readObject(item, messageParam);
    const role = readEnum(message.role, path(messageParam, 'role'), ROLES);
    const contentParam = path(messageParam, 'content');
    if (role === 'system') {
      flushUser();
      flushAssistant();
      messages.push({ role: 'system', content: decodeSystemContent(message.content, contentParam) });
    } else if (role === 'user') {
      flushAssistant();
      const turn = (user ??= { toolMessages: [], parts: [] });
      forEachBlock(message.content, contentParam, (block, blockParam) => {
        if (readString(block.type, path(blockParam, 'type')) === 'tool_result') {
          const result = decodeToolResultBlock(block, blockParam);
          toolUseIds.expect(result.toolCallId, path(blockParam, 'tool_use_id'), 'tool_use block');
          turn.toolMessages.push(result);
        } else {
          turn.parts.push(...decodeUserBlock(block, blockParam));
        }
      });
    } else {
      flushUser();
      const turn = (assistant ??= { role: 'assistant', content: [] });
      forEachBlock(message.content, contentParam, (block, blockParam) => {
        const part = decodeAssistantBlock(block, blockParam);
        if (part.type === 'tool-call') toolUseIds.add(part.id);
        turn.content.push(part);
      });
    }
  });
  flushUser();
  flushAssistant();
  checkToolUsesAnswered(items, param);
  return messages;
}

function blocksOf(content: unknown): Record<string, unknown>[] {
  return Array.isArray(content)
    ? content.filter((block): block is Record<string, unknown> => typeof block === 'object' && block !== null)
    : [];
}

/** Each assistant turn's `tool_use` ids must all have a `tool_result` in the next user turn. @throws IopError 400. */
function checkToolUsesAnswered(items: readonly unknown[], param: string): void {
  let pending: string[] = [];
  items.forEach((item, i) => {
    const message = item as Record<string, unknown>;
    if (message.role === 'system') return;
    if (message.role === 'assistant') {
      for (const block of blocksOf(message.content))
        if (block.type === 'tool_use' && typeof block.id === 'string') pending.push(block.id);
      return;
    }
    if (pending.length > 0) {
      const answered = new Set(
        blocksOf(message.content)
          .filter((block) => block.type === 'tool_result')
          .map((block) => block.tool_use_id),
      );
      const missing = pending.filter((id) => !answered.has(id));
      if (missing.length > 0) {
        throw invalidRequest(
          `${path(param, i)}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
          path(param, i),
        );
      }
    }
    pending = [];
  });
}
