import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { backsOff, classify } from '../../src/soak/soak-clients.js';

describe('soak clients back off', () => {
  it('after no connection or a 429 / 503 / 529 refusal, from the error itself', () => {
    const headers = new Headers();
    expect(backsOff(new OpenAI.APIConnectionError({ message: 'refused' }))).toBe(true);
    expect(backsOff(new OpenAI.APIConnectionTimeoutError())).toBe(false);
    expect(
      [429, 500, 503].map((status) =>
        backsOff(OpenAI.APIError.generate(status, { error: { type: 'x' } }, 'm', headers)),
      ),
    ).toEqual([true, false, true]);
    const overloaded = Anthropic.APIError.generate(
      529,
      { type: 'error', error: { type: 'overloaded_error', message: 'm' } },
      'm',
      headers,
    );
    expect(backsOff(overloaded)).toBe(true);
    expect(classify(overloaded)).toBe('http 529 overloaded_error');
    expect(backsOff(new Error('http 529'))).toBe(false);
  });
});
