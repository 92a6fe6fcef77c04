import { splitAt } from '@iop/test-support';
import fc from 'fast-check';
import { SseGuard } from '../../../src/http/sse-guard.js';

/** Feeds `text` split at `cuts`, then ends the stream; the bytes a client gets, and how it ended. */
function relayed(
  text: string,
  cuts: number[] = [],
  includeUsage = false,
): { out: string; failure: string | undefined; complete: boolean } {
  const guard = new SseGuard({ includeUsage });
  const out: Buffer[] = [];
  for (const part of splitAt(Buffer.from(text), cuts)) {
    const result = guard.push(part);
    out.push(result.safe);
    if (result.failure !== undefined)
      return { out: Buffer.concat(out).toString(), failure: result.failure.message, complete: false };
  }
  const ended = guard.end();
  out.push(ended.safe);
  return { out: Buffer.concat(out).toString(), failure: ended.failure?.message, complete: ended.complete };
}

/** The JSON payloads of the `data:` events a client parses (SSE: data lines joined with `\n`). */
function payloads(text: string): unknown[] {
  return text
    .split('\n\n')
    .filter((event) => event.trim() !== '')
    .map((event) =>
      event
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).replace(/^ /, ''))
        .join('\n'),
    )
    .filter((data) => data !== '')
    .map((data) => (data === '[DONE]' ? '[DONE]' : JSON.parse(data)));
}

const cuts = fc.array(fc.nat(), { maxLength: 10 });

// vLLM (serving_chat.py, include_usage): content chunks with "usage":null… then a `choices: []` usage chunk.
const VLLM = [
  'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}',
  'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}]}',
  'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop","stop_reason":null}]}',
  'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"total_tokens":7,"completion_tokens":2}}',
  'data: [DONE]',
]
  .map((line) => `${line}\n\n`)
  .join('');

describe('SseGuard', () => {
  it('passes a conformant vLLM stream through byte for byte, for any split', () => {
    fc.assert(
      fc.property(cuts, (at) => {
        expect(relayed(VLLM, at, true)).toEqual({ out: VLLM, failure: undefined, complete: true });
      }),
    );
  });

  it('counts the chunks of generated output (non-empty choices), for any split: the estimate of a stream without usage', () => {
    fc.assert(
      fc.property(cuts, (at) => {
        const guard = new SseGuard({ includeUsage: true });
        for (const part of splitAt(Buffer.from(VLLM), at)) guard.push(part);
        guard.end();
        expect(guard.generatedChunks).toBe(1); // "Hi": not the role chunk, the empty finish chunk or the usage chunk
      }),
    );
    const multi = new SseGuard({ includeUsage: false });
    multi.push(
      Buffer.from(
        'data: {"id":"c","choices":[{"index":0,\ndata: "delta":{"content":"a"}}]}\n\ndata: {"id":"c","choices":[]}\n\n',
      ),
    );
    expect(multi.generatedChunks).toBe(1);
  });

  it('collects the finish reasons, one per finished choice, for any split (one-line and multi-line events alike)', () => {
    // Two choices (n = 2) finishing in different chunks, the second on a multi-line event; a "finish_reason" inside
    // content is text.
    const stream =
      'data: {"id":"c","choices":[{"index":0,"delta":{"content":"say \\"finish_reason\\": \\"x\\""},"finish_reason":null}]}\n\n' +
      'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}\n\n' +
      'data: {"id":"c","choices":[{"index":1,\ndata: "delta":{},"finish_reason":"tool_calls"}]}\n\n' +
      'data: [DONE]\n\n';
    fc.assert(
      fc.property(cuts, (at) => {
        const guard = new SseGuard({ includeUsage: false });
        for (const part of splitAt(Buffer.from(stream), at)) expect(guard.push(part).failure).toBeUndefined();
        guard.end();
        // The second says tool_calls with no tool call relayed: recorded as the client gets it, stop.
        expect(guard.finishReasons).toEqual(['length', 'stop']);
      }),
    );
    const vllm = new SseGuard({ includeUsage: true });
    vllm.push(Buffer.from(VLLM));
    expect(vllm.finishReasons).toEqual(['stop']);
    // A tool call relayed, then a one-line finish that says stop: recorded once, as delivered (tool_calls).
    const tools = new SseGuard({ includeUsage: false });
    tools.push(
      Buffer.from(
        'data: {"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":null}]}\n\n' +
          'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
      ),
    );
    expect(tools.finishReasons).toEqual(['tool_calls']);
  });

  it('re-sends an event whose data spans several data: lines as one line (SSE joins them with \\n), for any split', () => {
    const multi =
      'data: {"id":"c","choices":[{"index":0,\ndata: "delta":{"content":"a"},"finish_reason":null}]}\n\ndata: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n';
    fc.assert(
      fc.property(cuts, (at) => {
        const result = relayed(multi, at);
        expect(result.failure).toBeUndefined();
        expect(result.out.split('\n').filter((line) => line.startsWith('data:'))).toHaveLength(3);
        expect(payloads(result.out)).toEqual([
          { id: 'c', choices: [{ index: 0, delta: { content: 'a' }, finish_reason: null }] },
          { id: 'c', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
          '[DONE]',
        ]);
      }),
    );
  });

  it('llama.cpp server before ggml-org/llama.cpp#15444: usage on the finish chunk becomes one choices:[] chunk before [DONE]', () => {
    const stream =
      'data: {"choices":[{"finish_reason":null,"index":0,"delta":{"content":"Hi"}}],"created":1,"id":"chatcmpl-2","model":"m","object":"chat.completion.chunk"}\n\n' +
      'data: {"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"created":1,"id":"chatcmpl-2","model":"m","object":"chat.completion.chunk","usage":{"completion_tokens":2,"prompt_tokens":5,"total_tokens":7}}\n\n' +
      'data: [DONE]\n\n';
    fc.assert(
      fc.property(cuts, (at) => {
        const result = relayed(stream, at, true);
        const events = payloads(result.out) as Array<Record<string, unknown>>;
        expect(events).toHaveLength(4);
        expect(events[1]).toMatchObject({ choices: [{ finish_reason: 'stop' }], usage: null });
        expect(events[2]).toEqual({
          choices: [],
          created: 1,
          id: 'chatcmpl-2',
          model: 'm',
          object: 'chat.completion.chunk',
          usage: { completion_tokens: 2, prompt_tokens: 5, total_tokens: 7 },
        });
        expect(events[3]).toBe('[DONE]');
      }),
    );
  });

  it('vLLM continuous_usage_stats (usage on every chunk): exactly one usage chunk, the last counts', () => {
    const stream =
      'data: {"id":"c","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}\n\n' +
      'data: {"id":"c","choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}\n\n' +
      'data: {"id":"c","usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}\n\n' +
      'data: [DONE]\n\n';
    const events = payloads(relayed(stream, [], true).out) as Array<Record<string, unknown>>;
    const withUsage = events.filter(
      (event) => typeof event === 'object' && event.usage !== null && event.usage !== undefined,
    );
    expect(withUsage).toEqual([
      { id: 'c', choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } },
    ]);
    expect(events.at(-2)).toBe(withUsage[0]);
    expect(
      events.filter((event) => typeof event === 'object' && Array.isArray(event.choices) && event.choices.length > 0),
    ).toHaveLength(2);
  });

  it('usage the client did not ask for is removed (llama.cpp server always sends it, ggml-org/llama.cpp#16048)', () => {
    const stream =
      'data: {"choices":[{"finish_reason":"stop","index":0,"delta":{"content":"x"}}],"id":"c","object":"chat.completion.chunk"}\n\n' +
      'data: {"choices":[],"id":"c","object":"chat.completion.chunk","usage":{"completion_tokens":1,"prompt_tokens":3,"total_tokens":4}}\n\n' +
      'data: [DONE]\n\n';
    expect(payloads(relayed(stream).out)).toEqual([
      {
        choices: [{ finish_reason: 'stop', index: 0, delta: { content: 'x' } }],
        id: 'c',
        object: 'chat.completion.chunk',
      },
      '[DONE]',
    ]);
  });

  it('no usage from the backend: no usage chunk, still a clean end', () => {
    const stream =
      'data: {"id":"c","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n';
    expect(relayed(stream, [], true)).toEqual({ out: stream, failure: undefined, complete: true });
  });

  it('a stream that delivered its finish reason (and usage) but no [DONE] is complete: usage chunk and [DONE] are added, for any split', () => {
    const stream =
      'data: {"id":"c","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}\n\n' +
      'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason": "length"}]}\n\n' +
      'data: {"id":"c","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}\n\n';
    fc.assert(
      fc.property(cuts, (at) => {
        const result = relayed(stream, at, true);
        expect(result.complete).toBe(true);
        expect(result.failure).toBeUndefined();
        expect(result.out).toBe(`${stream}data: [DONE]\n\n`);
      }),
    );
  });

  it('a stream cut before its finish reason is not complete; an unterminated last event still counts', () => {
    expect(
      relayed('data: {"id":"c","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}\n\n').complete,
    ).toBe(false);
    expect(relayed('data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}').complete).toBe(true);
    expect(relayed('data: {"a":1}\n\ndata: [DONE]').complete).toBe(true);
    // A content string that reads "[DONE]" or "finish_reason" is content.
    expect(
      relayed(
        'data: {"choices":[{"delta":{"content":"[DONE] \\"finish_reason\\": \\"stop\\""},"finish_reason":null}]}\n\n',
      ).complete,
    ).toBe(false);
  });

  it.each([
    [
      'vLLM',
      'data: {"error": {"object": "error", "message": "The decoder prompt is too long", "type": "BadRequestError", "param": null, "code": 400}}\n\n',
      'The decoder prompt is too long',
    ],
    [
      'llama.cpp server',
      'data: {"error":{"code":500,"message":"Failed to parse tool call","type":"server_error"}}\n\n',
      'Failed to parse tool call',
    ],
    ['SSE error event', 'event: error\ndata: {"message":"backend overloaded"}\n\n', 'backend overloaded'],
  ])(
    'a %s error chunk mid-stream ends the stream as a failure, for any split; nothing after it is sent',
    (_source, error, message) => {
      const before = 'data: {"id":"c","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}\n\n';
      fc.assert(
        fc.property(cuts, (at) => {
          const result = relayed(`${before}${error}data: [DONE]\n\n`, at);
          expect(result.out).toBe(before);
          expect(result.failure).toBe(message);
        }),
      );
    },
  );

  it('an "error" key inside content or a null error is not an error', () => {
    const stream =
      'data: {"id":"c","error":null,"choices":[{"index":0,"delta":{"content":"{\\"error\\": 1}"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n';
    expect(relayed(stream)).toEqual({ out: stream, failure: undefined, complete: true });
  });

  it('stops before a truncated JSON chunk, for any split (what came before is still sent)', () => {
    const bad = 'data: {"a":1}\n\ndata: {"broken\n\ndata: [DONE]\n\n';
    fc.assert(
      fc.property(cuts, (at) => {
        const result = relayed(bad, at);
        expect(result.out).toBe('data: {"a":1}\n\n');
        expect(result.failure).toMatch(/malformed stream chunk/);
      }),
    );
    expect(relayed('data: {"a":\ndata: broken\n\n').failure).toMatch(/malformed/);
  });

  it('a tool_calls finish label on a stream that relayed no tool call becomes stop, and stop after a call becomes tool_calls, for any split', () => {
    const chunk = (delta: string, finish: string | null) =>
      `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish === null ? 'null' : `"${finish}"`}}]}\n\n`;
    const call =
      '{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_time","arguments":"{}"}}]}';
    const cases = [
      { text: chunk('{"content":"Hi"}', null) + chunk('{}', 'tool_calls') + 'data: [DONE]\n\n', finish: 'stop' },
      { text: chunk(call, null) + chunk('{}', 'stop') + 'data: [DONE]\n\n', finish: 'tool_calls' },
      {
        text: chunk(call, null) + chunk('{}', 'tool_calls') + 'data: [DONE]\n\n',
        finish: 'tool_calls',
        unchanged: true,
      },
      {
        text: chunk('{"content":"Hi"}', null) + chunk('{}', 'stop') + 'data: [DONE]\n\n',
        finish: 'stop',
        unchanged: true,
      },
      // a call in a chunk that also carries content
      {
        text:
          chunk(call.replace('{"tool_calls"', '{"content":"Sure.","tool_calls"'), null) +
          chunk('{}', 'tool_calls') +
          'data: [DONE]\n\n',
        finish: 'tool_calls',
        unchanged: true,
      },
      // the label on the chunk that carries the call itself (llama.cpp server)
      { text: chunk(call, 'tool_calls') + 'data: [DONE]\n\n', finish: 'tool_calls', unchanged: true },
    ];
    fc.assert(
      fc.property(cuts, (at) => {
        for (const { text, finish, unchanged } of cases) {
          const result = relayed(text, at);
          expect(result.failure).toBeUndefined();
          const finishes = payloads(result.out)
            .filter((payload): payload is { choices: { finish_reason: string | null }[] } => payload !== '[DONE]')
            .map((payload) => payload.choices[0]!.finish_reason)
            .filter((reason) => reason !== null);
          expect(finishes).toEqual([finish]);
          if (unchanged === true) expect(result.out).toBe(text);
        }
      }),
    );
  });

  it('accepts CRLF line ends, comments and other fields; sends nothing after [DONE]', () => {
    const text = ': keep-alive\r\nevent: x\r\ndata: {"a":1}\r\n\r\ndata: [DONE]\r\n\r\n';
    expect(relayed(`${text}data: {"late":1}\n\n`)).toEqual({ out: text, failure: undefined, complete: true });
  });
});
