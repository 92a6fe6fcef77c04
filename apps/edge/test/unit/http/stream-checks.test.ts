import { splitAt } from '@iop/test-support';
import fc from 'fast-check';
import { ModelRewriter } from '../../../src/http/model-rewrite.js';
import { SseGuard } from '../../../src/http/sse-guard.js';

const chunk = (model: string, text: string) => `data: {"id":"c1","object":"chat.completion.chunk","model":"${model}","choices":[{"index":0,"delta":{"content":"${text}"}}]}\n\n`;
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

describe('SseGuard', () => {
  it('passes complete well-formed lines and holds a partial one', () => {
    const guard = new SseGuard();
    expect(guard.push(Buffer.from('data: {"a":1}\n\ndata: {"b"'))).toEqual({ safe: Buffer.from('data: {"a":1}\n\n'), malformed: false });
    expect(guard.sawDone).toBe(false);
    expect(guard.push(Buffer.from(':2}\n\ndata: [DONE]\n\n'))).toEqual({ safe: Buffer.from('data: {"b":2}\n\ndata: [DONE]\n\n'), malformed: false });
    expect(guard.sawDone).toBe(true);
    expect(guard.end()).toBeUndefined();
  });

  it('knows a stream was cut when no [DONE] line came, for any split (an unterminated [DONE] counts)', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 10 }), (cuts) => {
        const verdict = (text: string) => {
          const guard = new SseGuard();
          for (const part of splitAt(Buffer.from(text), cuts)) guard.push(part);
          guard.end();
          return guard.sawDone;
        };
        expect(verdict('data: {"a":1}\n\ndata: [DONE]\n\n')).toBe(true);
        expect(verdict('data: {"a":1}\n\ndata: [DONE]')).toBe(true);
        expect(verdict('data: {"a":1}\n\ndata: {"b":2}\n\n')).toBe(false);
        expect(verdict('data: {"text":"[DONE]"}\n\n')).toBe(false);
      }),
    );
  });

  it('stops before a truncated JSON chunk (what came before is still sent)', () => {
    const guard = new SseGuard();
    const result = guard.push(Buffer.from('data: {"a":1}\n\ndata: {"id":"c","choi\n\ndata: {"b":2}\n\n'));
    expect(result).toEqual({ safe: Buffer.from('data: {"a":1}\n\n'), malformed: true });
  });

  it('accepts CRLF line ends, comments and other fields', () => {
    const guard = new SseGuard();
    const text = ': keep-alive\r\nevent: x\r\ndata: {"a":1}\r\n\r\ndata: [DONE]\r\n\r\n';
    expect(guard.push(Buffer.from(text))).toEqual({ safe: Buffer.from(text), malformed: false });
  });

  it('finds the same verdict for any split', () => {
    const bad = 'data: {"a":1}\n\ndata: {"broken\n\ndata: [DONE]\n\n';
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 10 }), (cuts) => {
        const guard = new SseGuard();
        const safe: Buffer[] = [];
        let malformed = false;
        for (const part of splitAt(Buffer.from(bad), cuts)) {
          const result = guard.push(part);
          safe.push(result.safe);
          if (result.malformed) {
            malformed = true;
            break;
          }
        }
        expect(malformed).toBe(true);
        expect(Buffer.concat(safe).toString()).toBe('data: {"a":1}\n\n');
      }),
    );
  });
});
