/**
 * OpenAI Responses on the edge with the official `openai` client: translated to the Chat backend
 * (the sim behind a real agent) and back, with stored conversation state.
 */
import OpenAI from 'openai';
import { API_KEY, startAgent, startEdge, startSim, stopAll, type EdgeHandle } from './harness';

/** A second client key: stored responses belong to the key that created them. */
const OTHER_KEY = 'sk-iop-test-key-0002';

let edge: EdgeHandle;
let client: OpenAI;
let other: OpenAI;

beforeAll(async () => {
  const sim = await startSim(['--models', 'sim-model', '--output-tokens', '10', '--max-model-len', '65536']);
  edge = await startEdge({
    args: ['--api-keys', `${API_KEY},${OTHER_KEY}`],
    env: { IOP_DATA_DIR: `/tmp/iop-responses-test-${process.pid}` },
  });
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'agent-responses',
    backendUrl: sim.url,
    models: ['sim-model', 'sim-model@reasoning=6', 'sim-model@tool-calls=1', 'sim-model@tool-calls=3'],
  });
  client = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
  other = new OpenAI({ apiKey: OTHER_KEY, baseURL: edge.baseURL, maxRetries: 0 });
});

afterAll(stopAll);

const weather: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Weather for a city',
  strict: true,
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
    required: ['city', 'unit'],
    additionalProperties: false,
  },
};
const tool = (name: string): OpenAI.Responses.FunctionTool => ({ ...weather, name });

describe('POST /v1/responses', () => {
  it('responses.create answers with a completed response, a message item and usage', async () => {
    const response = await client.responses.create({ model: 'sim-model', input: 'Tell me a story' });
    expect(response.object).toBe('response');
    expect(response.id).toMatch(/^resp_/);
    expect(response.status).toBe('completed');
    expect(response.output).toHaveLength(1);
    expect(response.output[0]!.type).toBe('message');
    expect(response.output_text.split(' ').length).toBeGreaterThanOrEqual(5);
    expect(response.usage!.output_tokens).toBe(10);
    expect(response.usage!.total_tokens).toBe(response.usage!.input_tokens + 10);
    expect(response.usage!.input_tokens_details.cached_tokens).toBe(0);
  });

  it('max_output_tokens ends the response incomplete', async () => {
    const response = await client.responses.create({
      model: 'sim-model',
      input: 'Tell me a story',
      max_output_tokens: 4,
    });
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details?.reason).toBe('max_output_tokens');
  });

  it('responses.stream() streams text that finalResponse() assembles', async () => {
    const stream = client.responses.stream({ model: 'sim-model', input: 'Tell me a story' });
    let streamed = '';
    const types: string[] = [];
    stream.on('event', (event) => types.push(event.type));
    stream.on('response.output_text.delta', (event) => (streamed += event.delta));
    const final = await stream.finalResponse();
    expect(final.output_text).toBe(streamed);
    expect(types[0]).toBe('response.created');
    expect(types[1]).toBe('response.in_progress');
    expect(types.at(-1)).toBe('response.completed');
  });

  it('streams a reasoning item before the message', async () => {
    const final = await client.responses
      .stream({ model: 'sim-model@reasoning=6', input: 'Think first', reasoning: { effort: 'medium' } })
      .finalResponse();
    expect(final.output.map((item) => item.type)).toEqual(['reasoning', 'message']);
    const reasoning = final.output[0]!;
    if (reasoning.type !== 'reasoning') throw new Error('expected reasoning');
    expect(JSON.stringify(reasoning.content ?? reasoning.summary).length).toBeGreaterThan(10);
  });

  it('streams one function call with a call_id and valid arguments', async () => {
    const final = await client.responses
      .stream({ model: 'sim-model@tool-calls=1', input: 'Weather in Paris?', tools: [weather] })
      .finalResponse();
    const calls = final.output.filter((item) => item.type === 'function_call');
    expect(calls).toHaveLength(1);
    const call = calls[0]!;
    if (call.type !== 'function_call') throw new Error('expected a function call');
    expect(call.call_id.length).toBeGreaterThan(0);
    expect(call.name).toBe('get_weather');
    const args = JSON.parse(call.arguments) as { city: unknown; unit: unknown };
    expect(typeof args.city).toBe('string');
    expect(['c', 'f']).toContain(args.unit);
  });

  it('streams several function calls as separate items', async () => {
    const final = await client.responses
      .stream({
        model: 'sim-model@tool-calls=3',
        input: 'All of them',
        tools: [tool('a_tool'), tool('b_tool'), tool('c_tool')],
      })
      .finalResponse();
    const calls = final.output.filter((item) => item.type === 'function_call');
    expect(calls).toHaveLength(3);
    expect(new Set(calls.map((call) => call.type === 'function_call' && call.call_id)).size).toBe(3);
  });

  /** A first response that calls get_weather, and its function_call item. */
  async function weatherCall(): Promise<{
    first: OpenAI.Responses.Response;
    call: OpenAI.Responses.ResponseFunctionToolCall;
  }> {
    const first = await client.responses.create({
      model: 'sim-model',
      input: 'Weather in Paris?',
      tools: [weather],
      tool_choice: 'required',
    });
    const call = first.output.find((item) => item.type === 'function_call');
    if (call?.type !== 'function_call') throw new Error('expected a function call');
    return { first, call };
  }

  it('round-trips a function call with function_call_output', async () => {
    const { call } = await weatherCall();
    const second = await client.responses.create({
      model: 'sim-model',
      tools: [weather],
      input: [
        { role: 'user', content: 'Weather in Paris?' },
        call,
        { type: 'function_call_output', call_id: call.call_id, output: '18 degrees and sunny' },
      ],
    });
    expect(second.status).toBe('completed');
    expect(second.output[0]!.type).toBe('message');
  });

  it('the tool loop with previous_response_id: only the function_call_output is sent, the call comes from the stored response', async () => {
    const { first, call } = await weatherCall();
    const second = await client.responses.create({
      model: 'sim-model',
      tools: [weather],
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: '18 degrees and sunny' }],
    });
    expect(second.status).toBe('completed');
    expect(second.previous_response_id).toBe(first.id);
    expect(second.output[0]!.type).toBe('message');
    // An output for a call that exists nowhere in the conversation is the client's mistake.
    await expect(
      client.responses.create({
        model: 'sim-model',
        tools: [weather],
        previous_response_id: first.id,
        input: [{ type: 'function_call_output', call_id: 'call_unknown', output: 'x' }],
      }),
    ).rejects.toMatchObject({ status: 400 });
  });

  it('continues a conversation with previous_response_id, and serves the stored response', async () => {
    const first = await client.responses.create({
      model: 'sim-model',
      instructions: 'Be brief.',
      input: 'My name is Ada.',
    });
    const second = await client.responses.create({
      model: 'sim-model',
      previous_response_id: first.id,
      input: 'What is my name?',
    });
    expect(second.previous_response_id).toBe(first.id);
    expect(second.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens + 10);
    const stored = await client.responses.retrieve(second.id);
    expect(stored.id).toBe(second.id);
    expect(stored.output_text).toBe(second.output_text);
    const items = await client.responses.inputItems.list(second.id);
    expect(items.data.length).toBeGreaterThan(0);
    const deleted = await client.responses.delete(first.id);
    expect(deleted as unknown).toEqual({ id: first.id, object: 'response', deleted: true });
    await expect(client.responses.retrieve(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(
      client.responses.create({ model: 'sim-model', previous_response_id: 'resp_nope', input: 'hi' }),
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('a response id with broken percent-encoding is a 400, not a 500', async () => {
    for (const [method, path] of [
      ['GET', '/responses/%ZZ'],
      ['DELETE', '/responses/%ZZ'],
      ['GET', '/responses/%E0%A4%A/input_items'],
    ] as const) {
      const response = await fetch(`${edge.baseURL}${path}`, {
        method,
        headers: { authorization: `Bearer ${API_KEY}` },
      });
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { message: string } }).error.message).toBe(
        'the request path has invalid percent-encoding',
      );
    }
  });

  it('store: false keeps nothing', async () => {
    const response = await client.responses.create({ model: 'sim-model', input: 'hi', store: false });
    await expect(client.responses.retrieve(response.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('structured output with text.format json_schema gives valid JSON', async () => {
    const response = await client.responses.create({
      model: 'sim-model',
      input: 'A person',
      text: {
        format: {
          type: 'json_schema',
          name: 'person',
          strict: true,
          schema: {
            type: 'object',
            properties: { name: { type: 'string' }, age: { type: 'integer' } },
            required: ['name', 'age'],
            additionalProperties: false,
          },
        },
      },
      max_output_tokens: 200,
    });
    const person = JSON.parse(response.output_text) as { name: unknown; age: unknown };
    expect(typeof person.name).toBe('string');
    expect(Number.isInteger(person.age)).toBe(true);
  });

  it('accepts a request shaped like Codex CLI’s (developer message, ids on items, namespace/custom/web_search tools, store:false, replayed items)', async () => {
    const body = {
      model: 'sim-model',
      stream: true,
      store: false,
      parallel_tool_calls: true,
      tool_choice: 'auto',
      reasoning: { effort: 'medium', summary: 'auto' },
      include: ['reasoning.encrypted_content'],
      prompt_cache_key: 'session-123',
      text: { verbosity: 'low' },
      client_metadata: { originator: 'codex' },
      tools: [
        {
          type: 'function',
          name: 'shell',
          description: 'Run a command',
          strict: false,
          parameters: {
            type: 'object',
            properties: { command: { type: 'array', items: { type: 'string' } } },
            required: ['command'],
          },
        },
        {
          type: 'namespace',
          name: 'mcp_fs',
          description: 'files',
          tools: [
            {
              type: 'function',
              name: 'read',
              strict: false,
              parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
            },
          ],
        },
        {
          type: 'custom',
          name: 'apply_patch',
          description: 'Apply a patch',
          format: { type: 'grammar', syntax: 'lark', definition: 'start: /.+/' },
        },
        { type: 'web_search' },
        { type: 'tool_search' },
      ],
      input: [
        { type: 'message', id: 'msg_1', role: 'developer', content: [{ type: 'input_text', text: 'You are Codex.' }] },
        { type: 'message', id: 'msg_2', role: 'user', content: [{ type: 'input_text', text: 'List files' }] },
        {
          type: 'reasoning',
          id: 'rs_1',
          summary: [{ type: 'summary_text', text: 'thinking' }],
          encrypted_content: 'opaque',
        },
        {
          type: 'function_call',
          id: 'fc_1',
          call_id: 'call_1',
          name: 'shell',
          arguments: '{"command":["ls"]}',
          status: 'completed',
        },
        { type: 'function_call_output', id: 'fco_1', call_id: 'call_1', output: 'a.txt\nb.txt' },
        { type: 'custom_tool_call', id: 'ctc_1', call_id: 'call_2', name: 'apply_patch', input: '*** Begin Patch' },
        { type: 'custom_tool_call_output', id: 'ctco_1', call_id: 'call_2', output: 'ok' },
        { type: 'message', id: 'msg_3', role: 'user', content: [{ type: 'input_text', text: 'Now summarize' }] },
      ],
    };
    const stream = client.responses.stream(body as unknown as OpenAI.Responses.ResponseCreateParamsStreaming);
    const final = await stream.finalResponse();
    expect(final.status).toBe('completed');
    expect(final.id).toMatch(/^resp_/);
    const raw = await fetch(`${edge.baseURL}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(raw.status).toBe(200);
    expect(raw.headers.get('x-iop-warnings')).toMatch(/web_search/);
  });
});

describe('stored responses belong to the client key that created them', () => {
  /** The raw answer to a GET with `key`: status and body. */
  async function rawGet(path: string, key: string): Promise<{ status: number; body: unknown }> {
    const response = await fetch(`${edge.baseURL}${path}`, { headers: { authorization: `Bearer ${key}` } });
    return { status: response.status, body: await response.json() };
  }

  it('another key gets NotFoundError for retrieve, inputItems.list, delete and previous_response_id; the owner still can', async () => {
    const first = await client.responses.create({ model: 'sim-model', input: 'My name is Ada.' });

    await expect(other.responses.retrieve(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.responses.inputItems.list(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(other.responses.delete(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const continued = other.responses.create({
      model: 'sim-model',
      previous_response_id: first.id,
      input: 'What is my name?',
    });
    await expect(continued).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(continued).rejects.toMatchObject({
      status: 404,
      param: 'previous_response_id',
      message: `404 Response with id '${first.id}' not found.`,
    });

    // The other key's failed delete removed nothing: the owner reads, pages, continues and deletes.
    expect((await client.responses.retrieve(first.id)).output_text).toBe(first.output_text);
    expect((await client.responses.inputItems.list(first.id)).data.length).toBeGreaterThan(0);
    const second = await client.responses.create({
      model: 'sim-model',
      previous_response_id: first.id,
      input: 'What is my name?',
    });
    expect(second.previous_response_id).toBe(first.id);
    // A continuation is the continuing key's too.
    await expect(other.responses.retrieve(second.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);

    // The other key learns nothing: its answer for the live id is byte for byte the answer for a gone id.
    const whileLive = await rawGet(`/responses/${first.id}`, OTHER_KEY);
    const itemsWhileLive = await rawGet(`/responses/${first.id}/input_items`, OTHER_KEY);
    expect(await client.responses.delete(first.id)).toEqual({ id: first.id, object: 'response', deleted: true });
    expect(whileLive).toEqual(await rawGet(`/responses/${first.id}`, API_KEY));
    expect(itemsWhileLive).toEqual(await rawGet(`/responses/${first.id}/input_items`, API_KEY));
    expect(whileLive).toEqual({
      status: 404,
      body: {
        error: {
          message: `Response with id '${first.id}' not found.`,
          type: 'invalid_request_error',
          param: null,
          code: 'not_found',
        },
      },
    });
  });

  it("the other key's own responses are its own", async () => {
    const mine = await other.responses.create({ model: 'sim-model', input: 'Hello' });
    expect((await other.responses.retrieve(mine.id)).id).toBe(mine.id);
    await expect(client.responses.retrieve(mine.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});
