import fc from 'fast-check';
import { SseReader, sseJson, type SseEvent } from '../src/sse.js';

function readAll(chunks: string[]): SseEvent[] {
  const events: SseEvent[] = [];
  const reader = new SseReader((event) => events.push(event));
  for (const chunk of chunks) reader.pushBytes(new TextEncoder().encode(chunk));
  reader.flush();
  return events;
}

describe('SseReader', () => {
  it('reads events with and without event: lines, with CRLF framing', () => {
    const text = 'event: message_start\r\ndata: {"a":1}\r\n\r\ndata: {"b":"é"}\n\n: comment\n\ndata: [DONE]\n\n';
    expect(readAll([text])).toEqual([
      { event: 'message_start', data: '{"a":1}' },
      { event: undefined, data: '{"b":"é"}' },
      { event: undefined, data: '[DONE]' },
    ]);
  });

  it('drops an unterminated trailing event (WHATWG event stream: dispatch needs a blank line)', () => {
    expect(readAll(['data: {"a":1}\n\ndata: {"cut'])).toEqual([{ event: undefined, data: '{"a":1}' }]);
  });

  it('gives the same events for any split of the bytes, multi-byte UTF-8 included', () => {
    const text = sseJson({ text: 'héllo 🌍' }, 'content_block_delta') + 'data: {"x":2}\r\n\r\n' + sseJson({ z: 'ü' });
    const bytes = new TextEncoder().encode(text);
    const whole = readAll([text]);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 12 }), (cuts) => {
        const points = [...new Set(cuts)].sort((a, b) => a - b);
        const events: SseEvent[] = [];
        const reader = new SseReader((event) => events.push(event));
        let last = 0;
        for (const point of [...points, bytes.length]) {
          reader.pushBytes(bytes.subarray(last, point));
          last = point;
        }
        reader.flush();
        expect(events).toEqual(whole);
      }),
    );
    expect(whole).toHaveLength(3);
  });
});
