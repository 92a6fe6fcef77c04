/**
 * The relay's stream guard on legacy completions streams (`text_completion` chunks: the text in
 * `choices[].text`, no delta; docs/protocols.md "Legacy completions"), for any split of the
 * backend's bytes.
 */
import { splitAt } from '@iop/test-support';
import fc from 'fast-check';
import { SseGuard } from '../../../src/http/sse-guard.js';

const chunk = (choices: unknown[], extra: object = { usage: null }) =>
  `data: ${JSON.stringify({ id: 'cmpl-1', object: 'text_completion', created: 1, model: 'm', choices, ...extra })}\n\n`;

// vLLM with n=2: chunks of the two choices interleave; each choice's last token carries its finish reason.
const CHOICES = [
  chunk([{ index: 0, text: 'Once', logprobs: null, finish_reason: null }]),
  chunk([{ index: 1, text: 'The', logprobs: null, finish_reason: null }]),
  chunk([{ index: 0, text: ' upon', logprobs: null, finish_reason: 'length', stop_reason: null }]),
  chunk([{ index: 1, text: ' end', logprobs: null, finish_reason: 'stop', stop_reason: null }]),
].join('');
const USAGE = chunk([], { usage: { prompt_tokens: 2, completion_tokens: 4, total_tokens: 6 } });
const STREAM = `${CHOICES}${USAGE}data: [DONE]\n\n`;

function relayed(
  text: string,
  cuts: number[],
  includeUsage: boolean,
  choices = 2,
): { out: string; generated: number; complete: boolean } {
  const guard = new SseGuard({ includeUsage, choices });
  const out: Buffer[] = [];
  for (const part of splitAt(Buffer.from(text), cuts)) {
    const result = guard.push(part);
    expect(result.failure).toBeUndefined();
    out.push(result.safe);
  }
  const ended = guard.end();
  out.push(ended.safe);
  return { out: Buffer.concat(out).toString(), generated: guard.generatedChunks, complete: ended.complete };
}

const cuts = fc.array(fc.nat({ max: STREAM.length }), { maxLength: 12 });

describe('SseGuard on text_completion streams', () => {
  it('passes the stream byte for byte and counts each text chunk as generated output, for any split', () => {
    fc.assert(
      fc.property(cuts, (at) => {
        expect(relayed(STREAM, at, true)).toEqual({ out: STREAM, generated: 4, complete: true });
      }),
    );
  });

  it('drops the usage chunk the client did not ask for (the edge asks the backend for it), for any split', () => {
    fc.assert(
      fc.property(cuts, (at) => {
        expect(relayed(STREAM, at, false)).toEqual({ out: `${CHOICES}data: [DONE]\n\n`, generated: 4, complete: true });
      }),
    );
  });

  it('a stream cut after every choice finished is complete ([DONE] is added); one cut before the last choice finished is not, for any split', () => {
    expect(relayed(CHOICES, [], false)).toEqual({ out: `${CHOICES}data: [DONE]\n\n`, generated: 4, complete: true });
    // Choice 0 finished, choice 1 still going: not a whole answer.
    const cut = CHOICES.slice(0, CHOICES.lastIndexOf('data:'));
    fc.assert(
      fc.property(fc.array(fc.nat({ max: cut.length }), { maxLength: 8 }), (at) => {
        expect(relayed(cut, at, false)).toEqual({ out: cut, generated: 3, complete: false });
      }),
    );
    // With one choice expected (chat), the first finish reason completes it.
    expect(relayed(cut, [], false, 1).complete).toBe(true);
  });
});
