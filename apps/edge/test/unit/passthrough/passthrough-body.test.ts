/**
 * The backend body of a passthrough Chat request: the client's bytes when nothing changes; a
 * stream always asks the backend for usage (spliced in without re-serializing when it is the only
 * change); served model and max_tokens rewrites.
 */
import { validateChatPassthrough } from '../../../src/dialects';
import { passthroughBody } from '../../../src/passthrough/passthrough-body';

function backendBody(
  body: Record<string, unknown>,
  served = String(body.model),
  raw = Buffer.from(JSON.stringify(body)),
): { bytes: Buffer; parsed: Record<string, unknown> } {
  const bytes = passthroughBody(raw, body, validateChatPassthrough(body), served);
  return { bytes, parsed: JSON.parse(bytes.toString()) as Record<string, unknown> };
}

const messages = [{ role: 'user', content: 'hi' }];

it('a non-stream request, or a stream that asked for usage, goes as the client sent it (the same bytes)', () => {
  for (const body of [
    { model: 'm', messages },
    { model: 'm', messages, stream: true, stream_options: { include_usage: true } },
  ]) {
    const raw = Buffer.from(JSON.stringify(body));
    expect(passthroughBody(raw, body, validateChatPassthrough(body), 'm')).toBe(raw);
  }
});

it('a stream without include_usage asks the backend for usage: spliced before the closing brace, whitespace and all', () => {
  const body = { model: 'm', messages, stream: true };
  const raw = Buffer.from(`${JSON.stringify(body, null, 2)}\n  `);
  const { parsed } = backendBody(body, 'm', raw);
  expect(parsed).toEqual({ ...body, stream_options: { include_usage: true } });
});

it('keeps the client’s other stream options, and include_usage false becomes true', () => {
  const body = {
    model: 'm',
    messages,
    stream: true,
    stream_options: { include_usage: false, include_obfuscation: false },
  };
  expect(backendBody(body).parsed.stream_options).toEqual({ include_usage: true, include_obfuscation: false });
});

it('the served model and max_completion_tokens as max_tokens, with the usage request', () => {
  const body = { model: 'alias', messages, stream: true, max_completion_tokens: 64 };
  expect(backendBody(body, 'served/model').parsed).toEqual({
    model: 'served/model',
    messages,
    stream: true,
    max_tokens: 64,
    stream_options: { include_usage: true },
  });
});
