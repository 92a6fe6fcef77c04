import { deliveredAnswer } from '../src/chunk-rules.js';

const answer = (message: Record<string, unknown>, finish: string) =>
  Buffer.from(
    JSON.stringify({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish }],
    }),
  );
const finishOf = (body: Buffer) =>
  (JSON.parse(body.toString()) as { choices: { finish_reason: string }[] }).choices[0]!.finish_reason;
const call = { id: 'call_1', type: 'function', function: { name: 'get_time', arguments: '{}' } };

describe('deliveredAnswer (non-stream Chat passthrough)', () => {
  it('a tool_calls label without a tool call becomes stop; stop with tool calls becomes tool_calls', () => {
    expect(finishOf(deliveredAnswer(answer({ content: 'Sunny.' }, 'tool_calls')))).toBe('stop');
    expect(finishOf(deliveredAnswer(answer({ content: null, tool_calls: [call] }, 'stop')))).toBe('tool_calls');
    expect(finishOf(deliveredAnswer(answer({ content: 'Hm.', tool_calls: [] }, 'tool_calls')))).toBe('stop');
  });

  it('returns an answer that agrees with itself as the same bytes, unparsed', () => {
    for (const body of [
      answer({ content: 'Sunny.' }, 'stop'),
      answer({ content: null, tool_calls: [call] }, 'tool_calls'),
      answer({ content: 'x' }, 'length'),
    ]) {
      expect(deliveredAnswer(body)).toBe(body);
    }
  });
});
