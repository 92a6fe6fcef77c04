/**
 * What real clients read early or ask for about reasoning, through the real edge, agent and sim
 * (which answers `stream_options.continuous_usage_stats` as vLLM does: usage on every chunk):
 * - Anthropic `message_start.usage.input_tokens` is the prompt count the backend reports, the
 *   same as the final count in `message_delta`, and 0 never;
 * - `thinking.display: "omitted"` (Claude Code 2.1.332) gets thinking blocks without their text
 *   and with a signature, streaming and not;
 * - a Responses `reasoning.summary` (Codex) is reported as dropped in `x-iop-warnings`.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { API_KEY, startAgent, startEdge, startSim, stopAll, type EdgeHandle, type SimHandle } from './harness';
import { chatRequests, clearSim } from './stream-gate-helpers';

const MODEL = 'sim-model';
const THINKING = 'sim-model@reasoning=12';

let sim: SimHandle;
let edge: EdgeHandle;
let anthropic: Anthropic;
let openai: OpenAI;

beforeAll(async () => {
  sim = await startSim(['--models', 'sim-model', '--seed', '5']);
  edge = await startEdge({ env: { IOP_LOG_LEVEL: 'info' } });
  await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-usage', backendUrl: sim.url, models: [MODEL, THINKING] });
  anthropic = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 });
  openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
});

afterAll(stopAll);

beforeEach(async () => clearSim(sim));

const content = 'Tell me, in a few words, what the weather is like in Paris today and tomorrow.';

describe('Anthropic message_start usage', () => {
  it('input_tokens in message_start equals the final count and the backend’s prompt count', async () => {
    const stream = await anthropic.messages.create({
      model: MODEL,
      max_tokens: 64,
      stream: true,
      messages: [{ role: 'user', content }],
    });
    let startInput: number | undefined;
    let finalInput: number | undefined;
    for await (const event of stream) {
      if (event.type === 'message_start') startInput = event.message.usage.input_tokens;
      if (event.type === 'message_delta') finalInput = event.usage.input_tokens ?? undefined;
    }
    const records = await chatRequests(sim);
    expect(records).toHaveLength(1);
    const prompt = (records[0]!.output as { promptTokens: number }).promptTokens;
    expect(prompt).toBeGreaterThan(10);
    expect(startInput).toBe(prompt);
    expect(finalInput).toBe(prompt);
    // the edge asked for usage on every chunk (vLLM / SGLang continuous_usage_stats)
    expect((records[0]!.body as { stream_options?: unknown }).stream_options).toEqual({
      include_usage: true,
      continuous_usage_stats: true,
    });
  });

  it('the SDK’s final message carries the same count', async () => {
    const message = await anthropic.messages
      .stream({ model: MODEL, max_tokens: 64, messages: [{ role: 'user', content }] })
      .finalMessage();
    const prompt = ((await chatRequests(sim))[0]!.output as { promptTokens: number }).promptTokens;
    expect(message.usage.input_tokens).toBe(prompt);
  });
});

describe.each([
  ['streaming', true],
  ['non-stream', false],
] as const)('thinking.display (%s)', (_name, stream) => {
  async function thinkingBlocks(
    display: 'omitted' | undefined,
  ): Promise<{ blocks: Anthropic.ThinkingBlock[]; thinkingDeltas: number }> {
    // `display` is newer than the SDK's types.
    const thinking = {
      type: 'enabled',
      budget_tokens: 1024,
      ...(display === undefined ? {} : { display }),
    } as Anthropic.ThinkingConfigParam;
    const params = { model: THINKING, max_tokens: 2048, thinking, messages: [{ role: 'user' as const, content }] };
    if (!stream) {
      const message = await anthropic.messages.create(params);
      return {
        blocks: message.content.filter((block): block is Anthropic.ThinkingBlock => block.type === 'thinking'),
        thinkingDeltas: 0,
      };
    }
    let thinkingDeltas = 0;
    const messageStream = anthropic.messages.stream(params);
    messageStream.on('streamEvent', (event) => {
      if (event.type === 'content_block_delta' && event.delta.type === 'thinking_delta') thinkingDeltas++;
    });
    const message = await messageStream.finalMessage();
    return {
      blocks: message.content.filter((block): block is Anthropic.ThinkingBlock => block.type === 'thinking'),
      thinkingDeltas,
    };
  }

  it('omitted: thinking blocks with an empty text and a signature', async () => {
    const { blocks, thinkingDeltas } = await thinkingBlocks('omitted');
    expect(blocks).toHaveLength(1);
    expect(blocks[0]!.thinking).toBe('');
    expect(blocks[0]!.signature.length).toBeGreaterThan(0);
    expect(thinkingDeltas).toBe(0);
  });

  it('not given: the thinking text', async () => {
    const { blocks } = await thinkingBlocks(undefined);
    expect(blocks).toHaveLength(1);
    expect(blocks[0]!.thinking.length).toBeGreaterThan(0);
  });
});

describe('Responses reasoning.summary', () => {
  it.each(['auto', 'detailed'] as const)(
    'summary %s is reported as dropped in x-iop-warnings, streaming and not',
    async (summary) => {
      const params = { model: THINKING, input: content, reasoning: { effort: 'high' as const, summary }, store: false };
      const plain = await openai.responses.create(params).withResponse();
      expect(plain.response.headers.get('x-iop-warnings')).toContain(`dropped reasoning.summary ${summary}`);
      const reasoning = plain.data.output.find((item) => item.type === 'reasoning');
      expect(reasoning?.summary).toEqual([]);
      const streamed = await openai.responses.create({ ...params, stream: true }).withResponse();
      expect(streamed.response.headers.get('x-iop-warnings')).toContain(`dropped reasoning.summary ${summary}`);
      for await (const event of streamed.data) void event;
    },
  );

  it('no summary asked: no such warning', async () => {
    const plain = await openai.responses
      .create({ model: THINKING, input: content, reasoning: { effort: 'high' }, store: false })
      .withResponse();
    expect(plain.response.headers.get('x-iop-warnings') ?? '').not.toContain('reasoning.summary');
  });
});
