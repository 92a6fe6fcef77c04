/** The Messages request decoder: the top-level fields beside the conversation (docs/protocols.md). */
import { decode, expectBadRequest, base } from './helpers.js';

describe('decodeRequest: top-level fields', () => {
  it('requires max_tokens as a positive integer (0, cache pre-warming, is refused)', () => {
    const { max_tokens: _unused, ...withoutMaxTokens } = base;
    expectBadRequest(withoutMaxTokens, 'max_tokens');
    expectBadRequest({ ...base, max_tokens: 0 }, 'max_tokens');
    expectBadRequest({ ...base, max_tokens: 1.5 }, 'max_tokens');
    expectBadRequest({ ...base, max_tokens: '100' }, 'max_tokens');
    expect(decode({ ...base, max_tokens: 1 }).maxOutputTokens).toBe(1);
  });

  it('maps sampling fields and validates their ranges', () => {
    const request = decode({
      ...base,
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      stop_sequences: ['a', 'b', 'c', 'd', 'e'],
    });
    expect(request).toMatchObject({ temperature: 0.2, topP: 0.9, topK: 40, stop: ['a', 'b', 'c', 'd', 'e'] });
    expectBadRequest({ ...base, temperature: 1.5 }, 'temperature');
    expectBadRequest({ ...base, top_k: -1 }, 'top_k');
    expectBadRequest({ ...base, stop_sequences: ['a', 3] }, 'stop_sequences.1');
    expectBadRequest({ ...base, stream: 'yes' }, 'stream');
    expectBadRequest({ ...base, model: 7 }, 'model');
  });

  it('maps thinking and output_config to the reasoning switch and response format', () => {
    expect(decode(base).reasoning).toEqual({ enabled: false });
    expect(decode({ ...base, thinking: { type: 'disabled' } }).reasoning).toEqual({ enabled: false });
    expect(decode({ ...base, max_tokens: 8000, thinking: { type: 'enabled', budget_tokens: 4096 } }).reasoning).toEqual(
      {
        enabled: true,
        budgetTokens: 4096,
      },
    );
    expectBadRequest({ ...base, thinking: { type: 'enabled', budget_tokens: 100 } }, 'thinking.budget_tokens');
    expectBadRequest({ ...base, thinking: { type: 'on' } }, 'thinking.type');
    expectBadRequest({ ...base, output_config: { effort: 'extreme' } }, 'output_config.effort');
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    expect(decode({ ...base, output_config: { format: { type: 'json_schema', schema } } }).responseFormat).toEqual({
      type: 'json_schema',
      name: 'response',
      schema,
      strict: true,
    });
  });

  it('maps tools and tool_choice, refusing server tools with the field named', () => {
    const tools = [
      { name: 'get_weather', input_schema: { type: 'object', properties: {} }, strict: true, type: 'custom' },
      { name: 'noop', input_schema: { type: 'object' } },
    ];
    expect(decode({ ...base, tools, tool_choice: { type: 'any', disable_parallel_tool_use: true } })).toMatchObject({
      tools: [
        { name: 'get_weather', parameters: { type: 'object', properties: {} }, strict: true },
        { name: 'noop', parameters: { type: 'object' } },
      ],
      toolChoice: { type: 'required' },
      parallelToolCalls: false,
    });
    expect(decode({ ...base, tools, tool_choice: { type: 'tool', name: 'noop' } }).toolChoice).toEqual({
      type: 'tool',
      name: 'noop',
    });
    expect(decode({ ...base, tools, tool_choice: { type: 'none' } }).toolChoice).toEqual({ type: 'none' });
    expect(decode({ ...base, tools, tool_choice: { type: 'auto' } }).parallelToolCalls).toBeUndefined();
    expectBadRequest(
      { ...base, tools: [...tools, { type: 'web_search_20250305', name: 'web_search' }] },
      'tools.2.type',
      'unsupported_field',
    );
    expectBadRequest(
      { ...base, tools: [{ type: 'bash_20250124', name: 'bash' }] },
      'tools.0.type',
      'unsupported_field',
    );
    expectBadRequest({ ...base, tools: [{ name: 'x', input_schema: { type: 'array' } }] }, 'tools.0.input_schema.type');
    expectBadRequest({ ...base, tools: [{ name: 'x' }] }, 'tools.0.input_schema');
    expectBadRequest({ ...base, tools: [tools[1], tools[1]] }, 'tools.1.name');
    expectBadRequest({ ...base, tools, tool_choice: { type: 'tool', name: 'missing' } }, 'tool_choice.name');
    expectBadRequest({ ...base, tools, tool_choice: 'auto' }, 'tool_choice');
  });

  it('tolerates unknown fields, warning only where they would matter', () => {
    const request = decode({
      ...base,
      service_tier: 'auto',
      inference_geo: 'us',
      cache_control: { type: 'ephemeral' },
      container: 'c1',
      shiny_new_field: 1,
    });
    expect(request.warnings).toEqual([
      'ignored container: no server-side container on this backend',
      'ignored unknown field shiny_new_field',
    ]);
    expect(decode(base).warnings).toBeUndefined();
    expectBadRequest(
      { ...base, mcp_servers: [{ type: 'url', url: 'https://mcp', name: 'm' }] },
      'mcp_servers',
      'unsupported_field',
    );
  });

  it('never lets Anthropic-only fields reach the hub', () => {
    const request = decode({
      ...base,
      system: [{ type: 'text', text: 's', cache_control: { type: 'ephemeral', ttl: '1h' } }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral' }, citations: [] }] },
      ],
    });
    expect(JSON.stringify(request)).not.toMatch(/cache_control|citations|ephemeral/);
  });

  it('rejects a body that is not an object', () => {
    expectBadRequest([], 'body');
    expectBadRequest(null, 'body');
  });
});
