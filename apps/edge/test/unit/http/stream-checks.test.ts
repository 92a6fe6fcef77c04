import { splitAt } from '@iop/test-support';
import fc from 'fast-check';
import { ModelRewriter } from '../../../src/http/model-rewrite.js';

const chunk = (model: string, text: string) =>
  `data: {"id":"c1","object":"chat.completion.chunk","model":"${model}","choices":[{"index":0,"delta":{"content":"${text}"}}]}\n\n`;
const STREAM = chunk('Qwen/Qwen3-8B', 'Hel') + chunk('Qwen/Qwen3-8B', 'lo') + 'data: [DONE]\n\n';
const EXPECTED = chunk('gpt-4o-mini', 'Hel') + chunk('gpt-4o-mini', 'lo') + 'data: [DONE]\n\n';

describe('ModelRewriter', () => {
  it('rewrites every "model" of the served id to the client name', () => {
    const rewriter = new ModelRewriter('Qwen/Qwen3-8B', 'gpt-4o-mini');
    expect(Buffer.concat([rewriter.push(Buffer.from(STREAM)), rewriter.end()]).toString()).toBe(EXPECTED);
  });

  it('gives the same bytes for any split of the stream into frames', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 12 }), (cuts) => {
        const rewriter = new ModelRewriter('Qwen/Qwen3-8B', 'gpt-4o-mini');
        const out = splitAt(Buffer.from(STREAM), cuts).map((part) => rewriter.push(part));
        out.push(rewriter.end());
        expect(Buffer.concat(out).toString()).toBe(EXPECTED);
      }),
    );
  });

  it('holds back nothing when no tail can start the needle', () => {
    const rewriter = new ModelRewriter('m', 'n');
    expect(rewriter.push(Buffer.from('data: {"x":1}\n\n')).toString()).toBe('data: {"x":1}\n\n');
    expect(rewriter.push(Buffer.from('data: {"mod')).toString()).toBe('data: {');
    expect(rewriter.push(Buffer.from('el":"m"}\n\n')).toString()).toBe('"model":"n"}\n\n');
  });
});
