/**
 * The Anthropic Messages dialect (`POST /v1/messages`): the edge's one pipeline calls these four
 * functions for Claude Code and the `@anthropic-ai/sdk` clients (contract: @iop/core dialect.ts).
 */
import type { Dialect } from '@iop/core';
import { errorResponse } from './errors.js';
import { decodeMessagesRequest } from './request-decode.js';
import { encodeResponse } from './response-encode.js';
import { createStreamEncoder } from './stream-encode.js';

export const anthropicMessages: Dialect = {
  name: 'anthropic-messages',
  decodeRequest: (body) => decodeMessagesRequest(body),
  createStreamEncoder,
  encodeResponse,
  errorResponse,
};
