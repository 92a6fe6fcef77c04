/**
 * Models whose server leaves markup in the content: `<think>…</think>` reasoning and Hermes
 * `<tool_call>{…}</tool_call>` text. The edge's per-model gate config (`reasoning`,
 * `text-tool-calls`) turns them into reasoning and native tool calls, in all three dialects.
 * The sim gives 6 reasoning tokens by default (a served model name carries only one knob).
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { API_KEY, startAgent, startEdge, startSim, stopAll, type EdgeHandle } from './harness';
import { writeGateConfig } from './stream-gate-helpers';

const THINK = 'sim-model@think-tags';
const XML = 'sim-model@xml-tool-calls';
const TAG = /<\/?think>|<\/?tool_call>/;

let edge: EdgeHandle;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  const sim = await startSim(['--models', 'sim-model', '--reasoning', '6', '--output-tokens', '10']);
  const config = writeGateConfig({
    models: {
      [THINK]: { filters: ['reasoning', 'tool-calls', 'empty-output'], policy: 'evidence-tail' },
      [XML]: {
        filters: ['reasoning', { name: 'text-tool-calls', options: { formats: ['hermes'] } }, 'tool-calls'],
        policy: 'evidence-tail',
      },
    },
  });
  edge = await startEdge({ args: ['--config', config], env: { IOP_LOG_LEVEL: 'info' } });
  await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-markup', backendUrl: sim.url, models: [THINK, XML] });
  openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 });
});

afterAll(stopAll);

const parameters = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
const prompt = 'Weather in Paris?';

/** 6 reasoning tokens of lorem: words, no markup. */
function expectReasoning(text: string): void {
  expect(text).not.toMatch(TAG);
  expect(text.trim().split(/\s+/).length).toBeGreaterThanOrEqual(3);
}

function expectCityArguments(json: unknown): void {
  const args = (typeof json === 'string' ? JSON.parse(json) : json) as Record<string, unknown>;
  expect(typeof args.city).toBe('string');
}

describe('<think> tags become reasoning', () => {
  it('OpenAI Chat stream: reasoning_content deltas, then content without tags', async () => {
    const stream = await openai.chat.completions.create({
      model: THINK,
      messages: [{ role: 'user', content: prompt }],
      stream: true,
    });
    let reasoning = '';
    let content = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { content?: string | null; reasoning_content?: string } | undefined;
      if (delta?.reasoning_content !== undefined) {
        expect(content).toBe(''); // reasoning comes first
        reasoning += delta.reasoning_content;
      }
      content += delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expectReasoning(reasoning);
    expect(content).not.toMatch(TAG);
    expect(content.trim().split(/\s+/).length).toBeGreaterThanOrEqual(5);
    expect(finish).toBe('stop');
  });

  it('OpenAI Chat non-stream: message.reasoning_content and clean content', async () => {
    const completion = await openai.chat.completions.create({
      model: THINK,
      messages: [{ role: 'user', content: prompt }],
    });
    const message = completion.choices[0]!.message as OpenAI.Chat.ChatCompletionMessage & {
      reasoning_content?: string;
    };
    expectReasoning(message.reasoning_content ?? '');
    expect(message.content).not.toMatch(TAG);
    expect(message.content!.trim().length).toBeGreaterThan(0);
  });

  it('Anthropic: a thinking block, then a text block without tags', async () => {
    const stream = anthropic.messages.stream({
      model: THINK,
      max_tokens: 4096,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      messages: [{ role: 'user', content: prompt }],
    });
    let thinking = '';
    stream.on('thinking', (delta) => (thinking += delta));
    const final = await stream.finalMessage();
    expect(final.content.map((block) => block.type)).toEqual(['thinking', 'text']);
    expectReasoning(thinking);
    const [think, text] = final.content;
    expect(think?.type === 'thinking' && think.thinking).toBe(thinking);
    expect(text?.type === 'text' && text.text).not.toMatch(TAG);
    expect(final.stop_reason).toBe('end_turn');
  });

  it('OpenAI Responses: a reasoning item, then a message without tags', async () => {
    const final = await openai.responses
      .stream({ model: THINK, input: prompt, reasoning: { effort: 'medium' }, store: false })
      .finalResponse();
    expect(final.output.map((item) => item.type)).toEqual(['reasoning', 'message']);
    const reasoning = final.output[0]!;
    if (reasoning.type !== 'reasoning') throw new Error('expected a reasoning item');
    expectReasoning([...(reasoning.content ?? []), ...reasoning.summary].map((part) => part.text).join(''));
    expect(final.output_text).not.toMatch(TAG);
    expect(final.output_text.trim().length).toBeGreaterThan(0);
  });
});

describe('Hermes <tool_call> text becomes native tool calls', () => {
  it('OpenAI Chat stream: tool_calls deltas, finish_reason tool_calls, no markup in content', async () => {
    const stream = await openai.chat.completions.create({
      model: XML,
      messages: [{ role: 'user', content: prompt }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters } }],
      tool_choice: 'required',
      stream: true,
    });
    let content = '';
    const calls: Array<{ id: string; name: string; arguments: string }> = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      content += chunk.choices[0]?.delta.content ?? '';
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
        const call = (calls[delta.index] ??= { id: '', name: '', arguments: '' });
        call.id += delta.id ?? '';
        call.name += delta.function?.name ?? '';
        call.arguments += delta.function?.arguments ?? '';
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(finish).toBe('tool_calls');
    expect(content).not.toMatch(TAG);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.name).toBe('get_weather');
    expect(calls[0]!.id).toMatch(/^call_/);
    expectCityArguments(calls[0]!.arguments);
  });

  it('Anthropic: a tool_use block with its input as an object, stop_reason tool_use', async () => {
    const final = await anthropic.messages
      .stream({
        model: XML,
        max_tokens: 1024,
        tools: [{ name: 'get_weather', input_schema: parameters as Anthropic.Tool.InputSchema }],
        tool_choice: { type: 'any' },
        messages: [{ role: 'user', content: prompt }],
      })
      .finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    const uses = final.content.flatMap((block) => (block.type === 'tool_use' ? [block] : []));
    expect(uses).toHaveLength(1);
    expect(uses[0]!.name).toBe('get_weather');
    expectCityArguments(uses[0]!.input);
    for (const block of final.content) if (block.type === 'text') expect(block.text).not.toMatch(TAG);
  });

  it('OpenAI Responses: a function_call item with a call_id', async () => {
    const final = await openai.responses
      .stream({
        model: XML,
        input: prompt,
        tools: [{ type: 'function', name: 'get_weather', parameters, strict: false }],
        tool_choice: 'required',
        store: false,
      })
      .finalResponse();
    const calls = final.output.filter((item) => item.type === 'function_call');
    expect(calls).toHaveLength(1);
    const call = calls[0]!;
    if (call.type !== 'function_call') throw new Error('expected a function call');
    expect(call.name).toBe('get_weather');
    expect(call.call_id.length).toBeGreaterThan(0);
    expectCityArguments(call.arguments);
    expect(final.output_text).not.toMatch(TAG);
  });
});
