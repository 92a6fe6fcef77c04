/**
 * Stop reasons and `tool_choice` as clients rely on them, through the real edge, agent and sim
 * with the official SDKs, in all three dialects, streaming and not:
 * - a backend's `tool_calls` finish label on a text answer (sim `finish-label=tool_calls`) reaches
 *   the client as a natural end (`stop`, `end_turn`, `completed`), on the Chat passthrough and on
 *   the normalized path;
 * - a backend that ignores `tool_choice` (sim `ignore-tool-choice`) is retried until it answers as
 *   asked, and when it never does the client gets a clean 502 and none of the prose;
 * - `tool_choice: none` answered with a call is retried into a text answer.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { API_KEY, startAgent, startEdge, startSim, stopAll, type EdgeHandle, type SimHandle } from './harness';
import { chatRequests, clearSim, queueFault } from './stream-gate-helpers';

/** A text answer labelled `tool_calls`. */
const LABELLED = 'sim-model@finish-label=tool_calls';
/** Text whatever the tool_choice. */
const IGNORING = 'sim-model@ignore-tool-choice';
/** Honours tool_choice (a queued fault makes its next answer ignore it). */
const HONEST = 'sim-model';

let sim: SimHandle;
let edge: EdgeHandle;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  sim = await startSim(['--models', 'sim-model', '--seed', '3']);
  edge = await startEdge({ env: { IOP_LOG_LEVEL: 'info' } });
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'agent-choice',
    backendUrl: sim.url,
    models: [LABELLED, IGNORING, HONEST],
  });
  openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 });
});

afterAll(stopAll);

beforeEach(async () => clearSim(sim));

const parameters = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris?' }];
const chatTools: OpenAI.Chat.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'get_weather', parameters } },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
];
const responseTools: OpenAI.Responses.Tool[] = [
  { type: 'function', name: 'get_weather', parameters, strict: false },
  { type: 'function', name: 'get_time', parameters: { type: 'object', properties: {} }, strict: false },
];
const anthropicTools: Anthropic.Tool[] = [
  { name: 'get_weather', input_schema: parameters as Anthropic.Tool.InputSchema },
  { name: 'get_time', input_schema: { type: 'object', properties: {} } },
];

interface ChatOutcome {
  content: string;
  calls: string[];
  finish: string | null;
}

/** One Chat request, streamed (chunks reassembled as they arrive) or not. */
async function chat(
  stream: boolean,
  body: Omit<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming, 'messages'>,
): Promise<ChatOutcome> {
  if (!stream) {
    const completion = await openai.chat.completions.create({ ...body, messages });
    const choice = completion.choices[0]!;
    const calls = (choice.message.tool_calls ?? []).map((call) =>
      call.type === 'function' ? call.function.name : call.type,
    );
    return { content: choice.message.content ?? '', calls, finish: choice.finish_reason };
  }
  const chunks = await openai.chat.completions.create({ ...body, messages, stream: true });
  const outcome: ChatOutcome = { content: '', calls: [], finish: null };
  for await (const chunk of chunks) {
    const choice = chunk.choices[0];
    if (choice === undefined) continue;
    outcome.content += choice.delta.content ?? '';
    for (const call of choice.delta.tool_calls ?? [])
      if (call.function?.name !== undefined) outcome.calls.push(call.function.name);
    outcome.finish = choice.finish_reason ?? outcome.finish;
  }
  return outcome;
}

async function anthropicMessage(
  stream: boolean,
  params: Omit<Anthropic.MessageCreateParamsNonStreaming, 'messages' | 'max_tokens'>,
): Promise<Anthropic.Message> {
  const full = { ...params, max_tokens: 256, messages: [{ role: 'user' as const, content: 'Weather in Paris?' }] };
  return stream ? anthropic.messages.stream(full).finalMessage() : anthropic.messages.create(full);
}

async function response(
  stream: boolean,
  params: Omit<OpenAI.Responses.ResponseCreateParamsNonStreaming, 'input' | 'stream'>,
): Promise<OpenAI.Responses.Response> {
  const full = { ...params, input: 'Weather in Paris?', store: false };
  return stream ? openai.responses.stream(full).finalResponse() : openai.responses.create(full);
}

/** Expects `send` to fail with the gate's 502 naming the tool-choice filter after 3 attempts. */
async function expectGateError(
  send: () => Promise<unknown>,
  errorClass: typeof OpenAI.APIError | typeof Anthropic.APIError,
  reason: RegExp,
) {
  const error = await send().then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(errorClass);
  expect((error as { status?: number }).status).toBe(502);
  expect((error as Error).message).toMatch(/rejected by tool-choice/);
  expect((error as Error).message).toMatch(reason);
  expect((error as Error).message).toMatch(/after 3 attempts/);
}

const modes = [
  ['streaming', true],
  ['non-stream', false],
] as const;

describe.each(modes)('a tool_calls finish label on a text answer (%s)', (_name, stream) => {
  it('Chat passthrough (no tools): finish_reason stop', async () => {
    const outcome = await chat(stream, { model: LABELLED });
    expect(outcome.content.length).toBeGreaterThan(0);
    expect(outcome.calls).toEqual([]);
    expect(outcome.finish).toBe('stop');
    // the backend did say tool_calls
    expect(((await chatRequests(sim))[0]!.output as { finishReason: string }).finishReason).toBe('tool_calls');
  });

  it('Chat with tools (normalized): finish_reason stop', async () => {
    const outcome = await chat(stream, { model: LABELLED, tools: chatTools });
    expect(outcome).toMatchObject({ calls: [], finish: 'stop' });
    expect(outcome.content.length).toBeGreaterThan(0);
  });

  it('Anthropic Messages: stop_reason end_turn, one text block', async () => {
    const message = await anthropicMessage(stream, { model: LABELLED, tools: anthropicTools });
    expect(message.stop_reason).toBe('end_turn');
    expect(message.content.map((block) => block.type)).toEqual(['text']);
  });

  it('OpenAI Responses: completed with a message and no function call', async () => {
    const answer = await response(stream, { model: LABELLED, tools: responseTools });
    expect(answer.status).toBe('completed');
    expect(answer.output.map((item) => item.type)).toEqual(['message']);
  });
});

describe.each(modes)('a forced tool answered with text (%s)', (_name, stream) => {
  it('Chat, a named function: retried, then a 502 and no prose; a retry that calls it succeeds', async () => {
    const tool_choice = { type: 'function' as const, function: { name: 'get_time' } };
    await expectGateError(
      () => chat(stream, { model: IGNORING, tools: chatTools, tool_choice }),
      OpenAI.APIError,
      /names get_time but no tool was called/,
    );
    expect(await chatRequests(sim)).toHaveLength(3);

    await clearSim(sim);
    await queueFault(sim, { fault: 'none', 'tool-calls': 0 });
    const outcome = await chat(stream, { model: HONEST, tools: chatTools, tool_choice });
    expect(outcome).toEqual({ content: '', calls: ['get_time'], finish: 'tool_calls' });
    expect(await chatRequests(sim)).toHaveLength(2);
  });

  it('Chat, required: the prose of every attempt stays with the edge', async () => {
    await expectGateError(
      () => chat(stream, { model: IGNORING, tools: chatTools, tool_choice: 'required' }),
      OpenAI.APIError,
      /required but no tool/,
    );
    await clearSim(sim);
    await queueFault(sim, { fault: 'none', 'tool-calls': 0 });
    const outcome = await chat(stream, { model: HONEST, tools: chatTools, tool_choice: 'required' });
    expect(outcome.content).toBe('');
    expect(outcome.calls).toHaveLength(1);
    expect(outcome.finish).toBe('tool_calls');
  });

  it('Anthropic Messages, {type: tool} and {type: any}', async () => {
    const tool_choice = { type: 'tool' as const, name: 'get_weather' };
    await expectGateError(
      () => anthropicMessage(stream, { model: IGNORING, tools: anthropicTools, tool_choice }),
      Anthropic.APIError,
      /names get_weather/,
    );
    await expectGateError(
      () => anthropicMessage(stream, { model: IGNORING, tools: anthropicTools, tool_choice: { type: 'any' } }),
      Anthropic.APIError,
      /required but no tool/,
    );
    await clearSim(sim);
    await queueFault(sim, { fault: 'none', 'tool-calls': 0 });
    const message = await anthropicMessage(stream, { model: HONEST, tools: anthropicTools, tool_choice });
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content.map((block) => (block.type === 'tool_use' ? block.name : block.type))).toEqual([
      'get_weather',
    ]);
  });

  it('OpenAI Responses, {type: function, name}', async () => {
    const tool_choice = { type: 'function' as const, name: 'get_time' };
    await expectGateError(
      () => response(stream, { model: IGNORING, tools: responseTools, tool_choice }),
      OpenAI.APIError,
      /names get_time/,
    );
    await clearSim(sim);
    await queueFault(sim, { fault: 'none', 'tool-calls': 0 });
    const answer = await response(stream, { model: HONEST, tools: responseTools, tool_choice });
    expect(answer.output.flatMap((item) => (item.type === 'function_call' ? [item.name] : [item.type]))).toEqual([
      'get_time',
    ]);
  });
});

describe.each(modes)('tool_choice none answered with a call (%s)', (_name, stream) => {
  const ignoreOnce = { fault: 'none', 'ignore-tool-choice': true, 'tool-calls': 1 };

  it('Chat: retried into a text answer', async () => {
    await queueFault(sim, ignoreOnce);
    const outcome = await chat(stream, { model: HONEST, tools: chatTools, tool_choice: 'none' });
    expect(outcome.calls).toEqual([]);
    expect(outcome.finish).toBe('stop');
    expect(outcome.content.length).toBeGreaterThan(0);
    const records = await chatRequests(sim);
    expect(records.map((record) => (record.output as { toolCalls: unknown[] }).toolCalls.length)).toEqual([1, 0]);
  });

  it('Anthropic Messages: retried into a text answer', async () => {
    await queueFault(sim, ignoreOnce);
    const message = await anthropicMessage(stream, {
      model: HONEST,
      tools: anthropicTools,
      tool_choice: { type: 'none' },
    });
    expect(message.stop_reason).toBe('end_turn');
    expect(message.content.map((block) => block.type)).toEqual(['text']);
    expect(await chatRequests(sim)).toHaveLength(2);
  });

  it('OpenAI Responses: a call every time ends with a 502', async () => {
    await queueFault(sim, { ...ignoreOnce, count: 3 });
    await expectGateError(
      () => response(stream, { model: HONEST, tools: responseTools, tool_choice: 'none' }),
      OpenAI.APIError,
      /tool_choice is none/,
    );
  });
});
