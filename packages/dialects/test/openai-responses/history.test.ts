import { decodeResponsesRequest } from '../../src/openai-responses/request-decode.js';
import { encodeResponsesResponse } from '../../src/openai-responses/response-encode.js';
import { storedResponseOf, withHistory } from '../../src/openai-responses/history.js';

const TOOLS = [
  { type: 'custom', name: 'apply_patch' },
  { type: 'namespace', name: 'gh', description: 'GitHub', tools: [{ type: 'function', name: 'get_issue' }] },
];

describe('stored conversation state (previous_response_id)', () => {
  it('chains: instructions of the new request + stored history + previous output + new input; old instructions dropped', () => {
    const first = decodeResponsesRequest({ model: 'm', instructions: 'Old rules.', input: 'Fix it', tools: TOOLS });
    const response = encodeResponsesResponse(
      [
        { type: 'response-start', id: 'c1', model: 'm', created: 1 },
        { type: 'reasoning-delta', text: 'Patch needed.' },
        { type: 'text-delta', text: 'On it.' },
        {
          type: 'tool-call-delta',
          index: 0,
          id: 'call_p',
          name: 'apply_patch',
          argumentsDelta: '{"input":"*** Begin Patch"}',
        },
        { type: 'tool-call-delta', index: 1, id: 'call_g', name: 'gh__get_issue', argumentsDelta: '{"n":1}' },
        { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
      ],
      { requestId: 'r', model: 'm', request: first, createdAt: 100 },
    );
    const stored = storedResponseOf(first, response)!;
    expect(stored).toMatchObject({ id: response.id, createdAt: 100, inputItems: [{ type: 'message', role: 'user' }] });
    expect(stored.conversation).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Fix it' }] },
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'Patch needed.' },
          { type: 'text', text: 'On it.' },
          {
            type: 'tool-call',
            id: 'call_p',
            name: 'apply_patch',
            arguments: '{"input":"*** Begin Patch"}',
            origin: { kind: 'custom' },
          },
          {
            type: 'tool-call',
            id: 'call_g',
            name: 'gh__get_issue',
            arguments: '{"n":1}',
            origin: { kind: 'namespace', namespace: 'gh', name: 'get_issue' },
          },
        ],
      },
    ]);

    const second = decodeResponsesRequest({
      model: 'm',
      instructions: 'New rules.',
      previous_response_id: response.id,
      input: [
        { type: 'custom_tool_call_output', call_id: 'call_p', output: 'ok' },
        { type: 'function_call_output', call_id: 'call_g', output: 'issue' },
      ],
    });
    const merged = withHistory(second, stored);
    expect(merged.messages.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool']);
    expect(merged.messages[0]).toEqual({ role: 'system', content: [{ type: 'text', text: 'New rules.' }] });
    expect(second.messages).toHaveLength(3);

    // The next hop stores the merged conversation, so a third request sees all of it.
    const secondStored = storedResponseOf(merged, { ...response, id: 'resp_2', output: [] })!;
    expect(secondStored.conversation.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'tool']);
  });

  it('pairs tool outputs with the calls of the input or of the stored conversation (docs/protocols.md "Tool results"): an orphan is a 400 naming its call_id', () => {
    const orphan = { type: 'function_call_output', call_id: 'call_nowhere', output: 'x' };
    expect(() => decodeResponsesRequest({ model: 'm', input: [orphan] })).toThrow(
      expect.objectContaining({
        status: 400,
        param: 'input[0].call_id',
        message: 'No tool call found for function call output with call_id "call_nowhere".',
      }),
    );
    // Answered within the same input: fine; an output before its call is not.
    const call = { type: 'function_call', call_id: 'call_here', name: 'f', arguments: '{}' };
    const answer = { type: 'function_call_output', call_id: 'call_here', output: 'y' };
    expect(
      decodeResponsesRequest({ model: 'm', input: [call, answer] }).messages.map((message) => message.role),
    ).toEqual(['assistant', 'tool']);
    expect(() => decodeResponsesRequest({ model: 'm', input: [answer, call] })).toThrow(
      expect.objectContaining({ status: 400, param: 'input[0].call_id' }),
    );

    const first = decodeResponsesRequest({ model: 'm', input: 'Weather?' });
    const response = encodeResponsesResponse(
      [
        { type: 'tool-call-delta', index: 0, id: 'call_w', name: 'weather', argumentsDelta: '{"city":"Paris"}' },
        { type: 'finish', reason: 'tool_calls', raw: 'tool_calls' },
      ],
      { requestId: 'r', model: 'm', request: first, createdAt: 1 },
    );
    const stored = storedResponseOf(first, response)!;
    // With previous_response_id the decoder defers the check to the stored conversation.
    const follow = decodeResponsesRequest({
      model: 'm',
      previous_response_id: response.id,
      input: [{ type: 'function_call_output', call_id: 'call_w', output: '18 C' }],
    });
    expect(withHistory(follow, stored).messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool']);
    const wrong = decodeResponsesRequest({ model: 'm', previous_response_id: response.id, input: [orphan] });
    expect(() => withHistory(wrong, stored)).toThrow(
      expect.objectContaining({ status: 400, param: 'input[0].call_id' }),
    );
  });

  it('keeps nothing for store:false', () => {
    const request = decodeResponsesRequest({ model: 'm', input: 'x', store: false });
    const response = encodeResponsesResponse([{ type: 'finish', reason: 'stop', raw: 'stop' }], {
      requestId: 'r',
      model: 'm',
      request,
      createdAt: 1,
    });
    expect(storedResponseOf(request, response)).toBeUndefined();
  });
});
