/**
 * Chat Completions as a passthrough API (docs/protocols.md "Chat request"): the same 400s as the
 * translated path (`validateChatPassthrough`), the backend body of `http/passthrough-body.ts`,
 * prefix affinity by the leading messages.
 */
import type { Dialect } from '@iop/core';
import { chatDialect, estimateRequestTokens, validateChatPassthrough } from '../dialects.js';
import { passthroughBody } from './passthrough-body.js';
import { chatAffinityKey } from '../pool/prefix-affinity.js';
import { chatPrefixKeys } from '../pool/prefix-keys.js';
import type { PassthroughApi } from './passthrough-api.js';

export const chatPassthrough: PassthroughApi = {
  api: 'chat',
  backendPath: '/v1/chat/completions',
  read(body, raw) {
    const peek = validateChatPassthrough(body);
    return {
      model: peek.model,
      stream: peek.stream,
      includeUsage: peek.includeUsage,
      bodyFor: (served) => passthroughBody(raw, body, peek, served),
      promptTokens: () => passthroughPromptTokens(chatDialect, body, raw),
      affinityKey: (prefixMessages) => chatAffinityKey(body, prefixMessages),
      prefixKeys: () => chatPrefixKeys(body),
    };
  },
};

/**
 * The prompt estimate of a passthrough Chat body (decoded only for this, off the hot path); by its bytes when it does
 * not decode.
 */
function passthroughPromptTokens(dialect: Dialect, body: Record<string, unknown>, raw: Buffer): number {
  try {
    return estimateRequestTokens(dialect.decodeRequest(body));
  } catch {
    return Math.ceil(raw.length / 4);
  }
}
