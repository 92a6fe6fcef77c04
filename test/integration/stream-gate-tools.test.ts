/**
 * The stream gate against a model that gets tool arguments wrong 30 % of the time: the sim
 * (`--invalid-tool-args 0.3`) emits unparsable JSON, wrong types, missing required properties and
 * undeclared tools in turn. Through the edge, every client — OpenAI Chat (stream and non-stream),
 * OpenAI Responses and Anthropic Messages — receives only tool calls whose arguments validate
 * against the declared schema, or a clean typed error; the discarded attempts show in the sim's
 * request log and in `iop_gate_attempts_total{outcome="retried"}`.
 */
import Anthropic from '@anthropic-ai/sdk';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { API_KEY, startAgent, startEdge, startSim, stopAll, type EdgeHandle, type SimHandle } from './harness';
import { chatRequests, clearSim, metricSum } from './stream-gate-helpers';
import { WEATHER_PARAMETERS as parameters } from '../../apps/bench/src/weather-tool';

const MODEL = 'sim-model@tool-calls=1';
const REQUESTS_PER_CLIENT = 20;

const validArguments = new Ajv({ strict: true }).compile(parameters);

let sim: SimHandle;
let edge: EdgeHandle;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  sim = await startSim(['--models', 'sim-model', '--invalid-tool-args', '0.3', '--seed', '7']);
  edge = await startEdge({ env: { IOP_LOG_LEVEL: 'info' } });
  await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-tools', backendUrl: sim.url, models: [MODEL] });
  openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 });
});

afterAll(stopAll);

interface Call {
  name: string;
  /** Arguments as the client received them: JSON text (OpenAI) or an object (Anthropic). */
  arguments: string | unknown;
}

/**
 * Runs `send` REQUESTS_PER_CLIENT times; every answer's calls must be schema-valid, every failure a typed API error.
 */
async function exercise(
  send: (index: number) => Promise<Call[]>,
  errorClass: new (...args: never[]) => Error & { status?: number },
) {
  await clearSim(sim);
  const retriedBefore = await metricSum(edge, 'iop_gate_attempts_total', { outcome: 'retried' });
  let answered = 0;
  let failed = 0;
  for (let index = 0; index < REQUESTS_PER_CLIENT; index++) {
    let calls: Call[];
    try {
      calls = await send(index);
    } catch (error) {
      expect(error).toBeInstanceOf(errorClass);
      expect((error as { status?: number }).status).toBe(502);
      expect((error as Error).message).toMatch(/tool-calls.*after 3 attempts/);
      failed++;
      continue;
    }
    expect(calls).toHaveLength(1);
    const call = calls[0]!;
    expect(call.name).toBe('get_weather');
    const parsed: unknown = typeof call.arguments === 'string' ? JSON.parse(call.arguments) : call.arguments;
    if (!validArguments(parsed))
      throw new Error(
        `invalid arguments reached the client: ${JSON.stringify(parsed)} ${JSON.stringify(validArguments.errors)}`,
      );
    answered++;
  }
  const records = await chatRequests(sim);
  const invalid = records.filter((record) =>
    (record.output as { toolCalls: Array<{ invalid: string | null }> } | null)?.toolCalls.some(
      (call) => call.invalid !== null,
    ),
  );
  const retried = (await metricSum(edge, 'iop_gate_attempts_total', { outcome: 'retried' })) - retriedBefore;
  // At 30 % per attempt and 3 attempts, a request fails with probability 0.027.
  expect(answered).toBeGreaterThanOrEqual(REQUESTS_PER_CLIENT - 3);
  expect(answered + failed).toBe(REQUESTS_PER_CLIENT);
  expect(invalid.length).toBeGreaterThan(0);
  // Each extra backend request is one retried attempt, and every invalid attempt was retried
  // (or was the last of a failed request).
  expect(records.length).toBeGreaterThan(REQUESTS_PER_CLIENT);
  expect(retried).toBe(records.length - REQUESTS_PER_CLIENT);
  expect(invalid.length).toBe(retried + failed);
}

const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
  { role: 'user', content: 'Weather in Paris for the next days?' },
];
const chatTools: OpenAI.Chat.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'get_weather', description: 'Forecast for a city', parameters } },
];

describe('invalid tool arguments at 30 %: clients see only schema-valid calls', () => {
  it('OpenAI Chat, streaming', async () => {
    await exercise(async () => {
      const stream = await openai.chat.completions.create({ model: MODEL, messages, tools: chatTools, stream: true });
      const calls: Array<{ name: string; arguments: string }> = [];
      let finish: string | null = null;
      for await (const chunk of stream) {
        for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
          const call = (calls[delta.index] ??= { name: '', arguments: '' });
          call.name += delta.function?.name ?? '';
          call.arguments += delta.function?.arguments ?? '';
        }
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      expect(finish).toBe('tool_calls');
      return calls;
    }, OpenAI.APIError);
  });

  it('OpenAI Chat, non-stream', async () => {
    await exercise(async () => {
      const completion = await openai.chat.completions.create({ model: MODEL, messages, tools: chatTools });
      expect(completion.choices[0]!.finish_reason).toBe('tool_calls');
      return (completion.choices[0]!.message.tool_calls ?? []).map((call) =>
        call.type === 'function'
          ? { name: call.function.name, arguments: call.function.arguments }
          : { name: call.type, arguments: '' },
      );
    }, OpenAI.APIError);
  });

  it('OpenAI Responses, streaming and not', async () => {
    const tools: OpenAI.Responses.Tool[] = [
      { type: 'function', name: 'get_weather', description: 'Forecast for a city', parameters, strict: false },
    ];
    await exercise(async (index) => {
      const input = 'Weather in Paris for the next days?';
      const response =
        index % 2 === 0
          ? await openai.responses.create({ model: MODEL, input, tools, store: false })
          : await openai.responses.stream({ model: MODEL, input, tools, store: false }).finalResponse();
      expect(response.status).toBe('completed');
      return response.output.flatMap((item) =>
        item.type === 'function_call' ? [{ name: item.name, arguments: item.arguments }] : [],
      );
    }, OpenAI.APIError);
  });

  it('Anthropic Messages, streaming and not', async () => {
    const tools: Anthropic.Tool[] = [
      {
        name: 'get_weather',
        description: 'Forecast for a city',
        input_schema: parameters as Anthropic.Tool.InputSchema,
      },
    ];
    await exercise(async (index) => {
      const params = {
        model: MODEL,
        max_tokens: 512,
        tools,
        messages: [{ role: 'user' as const, content: 'Weather in Paris for the next days?' }],
      };
      const message =
        index % 2 === 0
          ? await anthropic.messages.create(params)
          : await anthropic.messages.stream(params).finalMessage();
      expect(message.stop_reason).toBe('tool_use');
      return message.content.flatMap((block) =>
        block.type === 'tool_use' ? [{ name: block.name, arguments: block.input }] : [],
      );
    }, Anthropic.APIError);
  });
});
