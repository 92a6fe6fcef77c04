/**
 * Prefix keys: the edge's names for a prompt's prefixes, for cache-aware routing
 * (docs/decisions/007-cache-aware-routing.md). The edge does not tokenize; it hashes the backend
 * body's `messages` in one pass and takes the hash at every message boundary, so `keys[i]` names
 * the first `messages[i]` messages (the tools, when the request has some, are hashed first: a chat
 * template renders them ahead of the conversation). Turn k+1 of a conversation repeats turn k's
 * prompt as its leading messages, so the key of turn k's whole prompt is one of turn k+1's keys.
 *
 * A key is 53 bits (a safe integer, a proto `uint64`): two 32-bit FNV-1a lanes over the roles and
 * string fields, each murmur3-finalized, 21 + 32 bits. At most `MAX_PREFIX_KEYS` keys: the first
 * message's (a project's system prompt) and the last ones (the conversation's recent turns); the
 * keys between are dropped (a long conversation's early turns are not where its next turn's
 * history lives).
 *
 * The hub path (`prefixKeys(request)`) and the passthrough path (`chatPrefixKeys(body)`, the raw
 * Chat body walked in place) give the same keys for a plain text conversation.
 */
import type { InferenceRequest, Message, ToolDefinition } from '@iop/core';
import { fmix32 as fmix } from './fmix32.js';

/** The capability an agent registers with when it reports residency (it then gets `keysToMap` in each assignment). */
export const KV_EVENTS_CAPABILITY = 'kv-events';

/** Most keys per request. */
export const MAX_PREFIX_KEYS = 32;

/** A request's prefix keys, shortest prefix first. */
export interface PrefixKeys {
  /** 53-bit keys. */
  readonly keys: readonly number[];
  /** `messages[i]`: how many leading messages `keys[i]` covers (≥ 1, increasing). */
  readonly messages: readonly number[];
  /**
   * `chars[i]`: characters of text hashed into `keys[i]` (UTF-16 code units, roles and tools included): the size of
   * the prefix, which the cache-aware pick turns into tokens (resident-pick.ts). The last entry is the whole prompt's.
   */
  readonly chars: readonly number[];
  /** Messages in the body: `messages[i] === total` for the whole prompt's key. */
  readonly total: number;
  /**
   * Whether the first message is a system (or developer) message: `keys[0]` then names a prompt many sessions share.
   */
  readonly leadingSystem: boolean;
}

/**
 * The keys a kv-events agent maps after the run (proto `RunAssignment.prefix_keys`): the leading
 * system message's (`messages = 1`), which a project's sessions share, and the whole prompt's
 * (`messages = 0`), which the session's next turn extends.
 */
export function keysToMap(keys: PrefixKeys): Array<{ key: number; messages: number }> {
  const out: Array<{ key: number; messages: number }> = [];
  const last = keys.keys.length - 1;
  if (keys.leadingSystem && keys.messages[0] === 1 && keys.total > 1) out.push({ key: keys.keys[0]!, messages: 1 });
  if (keys.messages[last] === keys.total) out.push({ key: keys.keys[last]!, messages: 0 });
  return out;
}

const PRIME = 0x01000193;

/** Two FNV-1a lanes (different offsets), fed the same text. */
class Lanes {
  low = 0x811c9dc5;
  high = 0x050c5d1f;
  /** Characters fed so far. */
  chars = 0;

  feed(text: string): void {
    this.chars += text.length;
    let low = this.low;
    let high = this.high;
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      low = Math.imul(low ^ code, PRIME);
      high = Math.imul(high ^ (code + 0x9e37), PRIME);
    }
    // Length terminator: "ab"+"c" and "a"+"bc" hash differently.
    this.low = Math.imul(low ^ (text.length & 0xffff), PRIME);
    this.high = Math.imul(high ^ (text.length >>> 16), PRIME);
  }

  /** The 53-bit key of the text fed so far (the lanes go on unchanged). */
  key(): number {
    return (fmix(this.high) & 0x1fffff) * 0x100000000 + fmix(this.low);
  }
}

/** Collects the key at each boundary, keeping the first and the last `MAX_PREFIX_KEYS - 1`. */
class Collector {
  private readonly keys: number[] = [];
  private readonly counts: number[] = [];
  private readonly chars: number[] = [];

  constructor(
    private readonly total: number,
    private readonly leadingSystem: boolean,
  ) {}

  add(lanes: Lanes, messages: number): void {
    // Boundaries before the window of the last keys cost no key (only the first one is kept).
    if (messages > 1 && messages <= this.total - (MAX_PREFIX_KEYS - 1)) return;
    this.keys.push(lanes.key());
    this.counts.push(messages);
    this.chars.push(lanes.chars);
  }

  result(): PrefixKeys | undefined {
    return this.keys.length === 0
      ? undefined
      : {
          keys: this.keys,
          messages: this.counts,
          chars: this.chars,
          total: this.total,
          leadingSystem: this.leadingSystem,
        };
  }
}

function feedHubTools(lanes: Lanes, tools: readonly ToolDefinition[] | undefined): void {
  if (tools === undefined || tools.length === 0) return;
  for (const tool of tools) {
    lanes.feed(tool.name);
    lanes.feed(tool.description ?? '');
    lanes.feed(JSON.stringify(tool.parameters ?? {}));
  }
}

function feedHubMessage(lanes: Lanes, message: Message): void {
  lanes.feed(message.role === 'developer' ? 'system' : message.role);
  if (message.role === 'tool') lanes.feed(message.toolCallId);
  for (const part of message.content) {
    lanes.feed(part.type);
    switch (part.type) {
      case 'text':
      case 'reasoning':
        lanes.feed(part.text);
        break;
      case 'image':
        lanes.feed(part.url);
        break;
      case 'file':
        lanes.feed(part.data);
        break;
      case 'tool-call':
        lanes.feed(part.id);
        lanes.feed(part.name);
        lanes.feed(part.arguments);
        break;
    }
  }
}

/** The prefix keys of a hub request (the normalized path); undefined without messages. */
export function prefixKeys(request: InferenceRequest): PrefixKeys | undefined {
  const lanes = new Lanes();
  feedHubTools(lanes, request.tools);
  const first = request.messages[0]?.role;
  const collector = new Collector(request.messages.length, first === 'system' || first === 'developer');
  request.messages.forEach((message, index) => {
    feedHubMessage(lanes, message);
    collector.add(lanes, index + 1);
  });
  return collector.result();
}

function feedChatTools(lanes: Lanes, tools: unknown): void {
  if (!Array.isArray(tools)) return;
  for (const tool of tools as Array<Record<string, unknown> | null>) {
    const fn = (tool?.function ?? null) as Record<string, unknown> | null;
    if (fn === null || typeof fn !== 'object') continue;
    lanes.feed(typeof fn.name === 'string' ? fn.name : '');
    lanes.feed(typeof fn.description === 'string' ? fn.description : '');
    lanes.feed(JSON.stringify(fn.parameters ?? {}));
  }
}

function feedChatMessage(lanes: Lanes, message: Record<string, unknown>): void {
  const role = typeof message.role === 'string' ? message.role : '';
  lanes.feed(role === 'developer' ? 'system' : role);
  if (typeof message.tool_call_id === 'string') lanes.feed(message.tool_call_id);
  const content = message.content;
  if (typeof content === 'string') {
    lanes.feed('text');
    lanes.feed(content);
  } else if (Array.isArray(content)) {
    for (const part of content as Array<Record<string, unknown> | null>) {
      if (typeof part !== 'object' || part === null) continue;
      lanes.feed(String(part.type));
      if (typeof part.text === 'string') lanes.feed(part.text);
      const url = (part.image_url as { url?: unknown } | undefined)?.url;
      if (typeof url === 'string') lanes.feed(url);
    }
  }
  const calls = message.tool_calls;
  if (Array.isArray(calls)) {
    for (const call of calls as Array<Record<string, unknown> | null>) {
      const fn = (call?.function ?? null) as Record<string, unknown> | null;
      lanes.feed('tool-call');
      lanes.feed(typeof call?.id === 'string' ? call.id : '');
      lanes.feed(typeof fn?.name === 'string' ? fn.name : '');
      lanes.feed(typeof fn?.arguments === 'string' ? fn.arguments : '');
    }
  }
}

/** The prefix keys of a raw OpenAI Chat body (the passthrough path), walked in place; undefined without messages. */
export function chatPrefixKeys(body: Record<string, unknown>): PrefixKeys | undefined {
  const messages = Array.isArray(body.messages) ? (body.messages as unknown[]) : [];
  const lanes = new Lanes();
  feedChatTools(lanes, body.tools);
  const first = (messages[0] as { role?: unknown } | null | undefined)?.role;
  const collector = new Collector(messages.length, first === 'system' || first === 'developer');
  messages.forEach((message, index) => {
    if (typeof message === 'object' && message !== null) feedChatMessage(lanes, message as Record<string, unknown>);
    collector.add(lanes, index + 1);
  });
  return collector.result();
}
