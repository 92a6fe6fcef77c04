import { postRaw, requests, sseData, startFixture, USER_MESSAGES, WEATHER_TOOLS, type Fixture } from './sim-fixture.js';

let fixture: Fixture;

beforeAll(async () => {
  fixture = await startFixture();
});
afterAll(() => fixture.sim.close());

/** Checks generated arguments against the WEATHER_TOOLS schemas (required keys, types, enum, bounds). */
function expectValidArguments(name: string, argumentsText: string): void {
  const values = JSON.parse(argumentsText);
  if (name === 'get_weather') {
    expect(Object.keys(values).sort()).toEqual(['city', 'days', 'unit']);
    expect(typeof values.city).toBe('string');
    expect(['celsius', 'fahrenheit']).toContain(values.unit);
    expect(Number.isInteger(values.days) && values.days >= 1 && values.days <= 7).toBe(true);
  } else {
    expect(name).toBe('get_time');
    expect(typeof values.zone).toBe('string');
    expect(typeof values.precise).toBe('boolean');
  }
}

describe('native tool calls', () => {
  it('emits N parallel calls whose fragments the SDK reassembles into schema-valid arguments', async () => {
    const stream = fixture.client.chat.completions.stream({
      model: 'sim-model@tool-calls=3',
      messages: USER_MESSAGES,
      tools: WEATHER_TOOLS,
    });
    let argumentFragments = 0;
    stream.on('chunk', (chunk) => {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) if (call.id === undefined) argumentFragments++;
    });
    const completion = await stream.finalChatCompletion();
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    const calls = choice.message.tool_calls!;
    expect(calls.map((call) => call.type === 'function' && call.function.name)).toEqual([
      'get_weather',
      'get_time',
      'get_weather',
    ]);
    for (const call of calls) {
      expect(call.id).toMatch(/^chatcmpl-tool-[0-9a-f]{32}$/);
      if (call.type === 'function') expectValidArguments(call.function.name, call.function.arguments);
    }
    expect(new Set(calls.map((call) => call.id)).size).toBe(3);
    expect(argumentFragments).toBeGreaterThanOrEqual(3 * 3);
  });

  it('sends id, type, name and arguments:"" only in the first fragment of each call', async () => {
    const response = await postRaw(fixture.sim, '/v1/chat/completions', {
      model: 'sim-model@tool-calls=2',
      messages: USER_MESSAGES,
      tools: WEATHER_TOOLS,
      stream: true,
    });
    const toolDeltas = sseData(response.text)
      .slice(0, -1)
      .flatMap((payload) => JSON.parse(payload).choices[0].delta.tool_calls ?? []);
    const firsts = toolDeltas.filter((delta: { id?: string }) => delta.id !== undefined);
    expect(firsts).toEqual([
      {
        index: 0,
        id: expect.stringMatching(/^chatcmpl-tool-/),
        type: 'function',
        function: { name: 'get_weather', arguments: '' },
      },
      {
        index: 1,
        id: expect.stringMatching(/^chatcmpl-tool-/),
        type: 'function',
        function: { name: 'get_time', arguments: '' },
      },
    ]);
    for (const delta of toolDeltas.filter((entry: { id?: string }) => entry.id === undefined))
      expect(Object.keys(delta.function)).toEqual(['arguments']);
  });

  it('makes one call by default for tool_choice required or a named tool, none for auto', async () => {
    const required = await fixture.client.chat.completions.create({
      model: 'sim-model',
      messages: USER_MESSAGES,
      tools: WEATHER_TOOLS,
      tool_choice: 'required',
    });
    expect(required.choices[0]!.message.tool_calls).toHaveLength(1);
    const named = await fixture.client.chat.completions.create({
      model: 'sim-model@tool-calls=2',
      messages: USER_MESSAGES,
      tools: WEATHER_TOOLS,
      tool_choice: { type: 'function', function: { name: 'get_time' } },
    });
    expect(named.choices[0]!.message.tool_calls!.map((call) => call.type === 'function' && call.function.name)).toEqual(
      ['get_time', 'get_time'],
    );
    const auto = await fixture.client.chat.completions.create({
      model: 'sim-model',
      messages: USER_MESSAGES,
      tools: WEATHER_TOOLS,
    });
    expect(auto.choices[0]!.message.tool_calls).toEqual([]);
    expect(auto.choices[0]!.finish_reason).toBe('stop');
    const single = await fixture.client.chat.completions.create({
      model: 'sim-model@tool-calls=3',
      messages: USER_MESSAGES,
      tools: WEATHER_TOOLS,
      parallel_tool_calls: false,
    });
    expect(single.choices[0]!.message.tool_calls).toHaveLength(1);
  });

  it('refuses a named tool_choice that is not declared', async () => {
    const response = await postRaw(fixture.sim, '/v1/chat/completions', {
      model: 'sim-model',
      messages: USER_MESSAGES,
      tools: WEATHER_TOOLS,
      tool_choice: { type: 'function', function: { name: 'nope' } },
    });
    expect(response.status).toBe(400);
    expect(JSON.parse(response.text).error.param).toBe('tool_choice');
  });
});

describe('xml-tool-calls', () => {
  it('writes Hermes <tool_call> text inside content', async () => {
    const completion = await fixture.client.chat.completions.create({
      model: 'sim-model@tool-calls=1,xml-tool-calls',
      messages: USER_MESSAGES,
      tools: WEATHER_TOOLS,
    });
    const content = completion.choices[0]!.message.content!;
    const match = /^<tool_call>\n(.*)\n<\/tool_call>$/s.exec(content);
    expect(match).not.toBeNull();
    const call = JSON.parse(match![1]!);
    expect(call.name).toBe('get_weather');
    expectValidArguments('get_weather', JSON.stringify(call.arguments));
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(completion.choices[0]!.message.tool_calls).toEqual([]);
  });
});

describe('invalid-tool-args', () => {
  type Kind = 'not-json' | 'wrong-type' | 'missing-required' | 'undeclared-tool';

  function classify(name: string, argumentsText: string): Kind | null {
    if (name !== 'get_weather' && name !== 'get_time') return 'undeclared-tool';
    let values: Record<string, unknown>;
    try {
      values = JSON.parse(argumentsText);
    } catch {
      return 'not-json';
    }
    const required = name === 'get_weather' ? ['city', 'unit', 'days'] : ['zone', 'precise'];
    if (required.some((key) => !(key in values))) return 'missing-required';
    try {
      expectValidArguments(name, argumentsText);
      return null;
    } catch {
      return 'wrong-type';
    }
  }

  it('makes the configured share of calls invalid, alternating the four kinds, reproducibly for a seed', async () => {
    const body = {
      model: 'sim-model@tool-calls=200,invalid-tool-args=0.25',
      messages: USER_MESSAGES,
      tools: WEATHER_TOOLS,
      seed: 7,
    };
    const first = await fixture.client.chat.completions.create(body);
    const kinds = first.choices[0]!.message.tool_calls!.map((call) =>
      call.type === 'function' ? classify(call.function.name, call.function.arguments) : null,
    );
    const invalid = kinds.filter((kind): kind is Kind => kind !== null);
    expect(invalid.length).toBeGreaterThan(30);
    expect(invalid.length).toBeLessThan(70);
    const order = ['not-json', 'wrong-type', 'missing-required', 'undeclared-tool'];
    for (let i = 1; i < invalid.length; i++)
      expect(order.indexOf(invalid[i]!)).toBe((order.indexOf(invalid[i - 1]!) + 1) % 4);

    const second = await fixture.client.chat.completions.create(body);
    expect(
      second.choices[0]!.message.tool_calls!.map(
        (call) => call.type === 'function' && [call.function.name, call.function.arguments],
      ),
    ).toEqual(
      first.choices[0]!.message.tool_calls!.map(
        (call) => call.type === 'function' && [call.function.name, call.function.arguments],
      ),
    );
  });

  it('records which calls were made invalid in /_sim/requests', async () => {
    await fixture.client.chat.completions.create(
      { model: 'sim-model', messages: USER_MESSAGES, tools: WEATHER_TOOLS, tool_choice: 'required' },
      { headers: { 'x-sim-invalid-tool-args': '1', 'x-sim-tool-calls': '4' } },
    );
    const record = (await requests(fixture.sim)).at(-1)!;
    expect(record.output!.toolCalls.map((call) => call.invalid)).toHaveLength(4);
    expect(new Set(record.output!.toolCalls.map((call) => call.invalid))).toEqual(
      new Set(['not-json', 'wrong-type', 'missing-required', 'undeclared-tool']),
    );
    for (const call of record.output!.toolCalls) expect(classify(call.name, call.arguments)).toBe(call.invalid);
  });
});

describe('tool parsers that ignore tool_choice or mislabel the finish', () => {
  it('ignore-tool-choice: a required or named choice gets text, none gets a call', async () => {
    for (const tool_choice of ['required', { type: 'function', function: { name: 'get_time' } }] as const) {
      const completion = await fixture.client.chat.completions.create({
        model: 'sim-model@ignore-tool-choice',
        messages: USER_MESSAGES,
        tools: WEATHER_TOOLS,
        tool_choice,
      });
      expect(completion.choices[0]!.message.tool_calls ?? []).toEqual([]);
      expect(completion.choices[0]!.message.content).not.toBe('');
      expect(completion.choices[0]!.finish_reason).toBe('stop');
    }
    const none = await fixture.client.chat.completions.create({
      model: 'sim-model@ignore-tool-choice,tool-calls=1',
      messages: USER_MESSAGES,
      tools: WEATHER_TOOLS,
      tool_choice: 'none',
    });
    expect(none.choices[0]!.message.tool_calls).toHaveLength(1);
  });

  it('finish-label=tool_calls: a text answer labelled tool_calls, stream and non-stream', async () => {
    const completion = await fixture.client.chat.completions.create({
      model: 'sim-model@finish-label=tool_calls',
      messages: USER_MESSAGES,
    });
    expect(completion.choices[0]!.message.tool_calls ?? []).toEqual([]);
    expect(completion.choices[0]!.finish_reason).toBe('tool_calls');
    const stream = await fixture.client.chat.completions.create({
      model: 'sim-model@finish-label=tool_calls',
      messages: USER_MESSAGES,
      stream: true,
    });
    const finishes: (string | null)[] = [];
    for await (const chunk of stream)
      for (const choice of chunk.choices) if (choice.finish_reason !== null) finishes.push(choice.finish_reason);
    expect(finishes).toEqual(['tool_calls']);
  });
});
