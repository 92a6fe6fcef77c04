export { splitAt } from '@iop/test-support';
/**
 * Recorded upstream streams: `test/fixtures/backend/*.sse` hold one raw SSE event per
 * line (sources in its `SOURCES.md`); `frameFixture` re-frames them with the chosen line ending.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StreamEvent } from '@iop/core';
import { createChatStreamDecoder } from '../../src/openai-chat/stream-decode.js';

const FIXTURES = join(__dirname, '../fixtures/backend');

export const FIXTURE_NAMES = [
  'vllm-text',
  'vllm-tool-calls-parallel',
  'vllm-reasoning',
  'llamacpp-usage-no-choices',
  'vllm-stop-sequence-continuous-usage',
  'vllm-error-mid-stream',
  'malformed-chunk',
  'missing-finish',
  'interleaved-tool-calls',
  'ollama-tool-calls-same-index',
  'arguments-object',
  'vllm-length-inside-tool-call',
] as const;

export type FixtureName = (typeof FIXTURE_NAMES)[number];

export function fixtureEvents(name: FixtureName): string[] {
  return readFileSync(join(FIXTURES, `${name}.sse`), 'utf8')
    .split('\n')
    .filter((line) => line.length > 0);
}

/** The fixture as an SSE body: each event followed by a blank line, with `eol` line ends. */
export function frameFixture(name: FixtureName, eol: '\n' | '\r\n' | '\r' = '\n'): Uint8Array {
  return new TextEncoder().encode(
    fixtureEvents(name)
      .map((event) => event + eol + eol)
      .join(''),
  );
}

/** Decodes a body delivered as the given slices (end() included). */
export function decodeSlices(slices: readonly Uint8Array[]): StreamEvent[] {
  const events: StreamEvent[] = [];
  const decoder = createChatStreamDecoder((event) => events.push(event));
  for (const slice of slices) decoder.push(slice);
  decoder.end();
  return events;
}
