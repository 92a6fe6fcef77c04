/**
 * The backend body of a passthrough Chat Completions request (the relay path, docs/protocols.md
 * "Chat request"): the client's exact bytes when nothing needs changing, otherwise the body with
 * - the served model id, when the client asked by group or alias;
 * - `max_tokens` in place of `max_completion_tokens` (`validateChatPassthrough`'s rewrite);
 * - for a stream, `stream_options.include_usage: true` ("Usage": without it vLLM and SGLang send
 *   no usage, and the request could only be billed at an estimate). The relay removes the usage
 *   chunk from what the client gets when it did not ask for one (`@iop/backend-wire` chunk-rules.ts).
 *
 * When the usage request is the only change and the body has no `stream_options`, the field is
 * spliced in before the object's closing brace: one copy of the bytes, no re-serialization.
 */
import type { ChatPassthroughRequest } from '../dialects.js';

const CLOSE_BRACE = 0x7d;
const USAGE_FIELD = Buffer.from(',"stream_options":{"include_usage":true}');

/**
 * @param raw the client's body bytes (a JSON object, already parsed as `body` and checked by
 *   `validateChatPassthrough` as `peek`).
 * @param served the backend's model id for this attempt.
 */
export function passthroughBody(
  raw: Buffer,
  body: Record<string, unknown>,
  peek: ChatPassthroughRequest,
  served: string,
): Buffer {
  const askUsage = peek.stream && !peek.includeUsage;
  if (served === peek.model && peek.maxTokensRewrite === undefined) {
    if (!askUsage) return raw;
    if (body.stream_options === undefined) {
      const close = raw.lastIndexOf(CLOSE_BRACE);
      return Buffer.concat([raw.subarray(0, close), USAGE_FIELD, raw.subarray(close)]);
    }
  }
  const changed: Record<string, unknown> = { ...body, model: served };
  if (peek.maxTokensRewrite !== undefined) {
    changed.max_tokens = peek.maxTokensRewrite;
    delete changed.max_completion_tokens;
  }
  if (askUsage) {
    const options = body.stream_options;
    changed.stream_options = {
      ...(typeof options === 'object' && options !== null ? options : {}),
      include_usage: true,
    };
  }
  return Buffer.from(JSON.stringify(changed));
}
