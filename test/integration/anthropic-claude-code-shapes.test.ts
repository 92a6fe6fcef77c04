/**
 * Claude Code's request shapes (docs/protocols.md "Claude Code") against a chat backend with a 4k context: its
 * `max_tokens: 32000` is lowered to what fits (a warning, not "Prompt is too long"), a
 * mid-conversation system message reaches the backend folded into the leading one, the billing
 * line leaves the top of the system prompt, backend-request warnings reach `x-iop-warnings`, and
 * an unanswered tool_use is a 400 before any backend call.
 */
import Anthropic from '@anthropic-ai/sdk';
import {
  API_KEY,
  simRequests,
  startAgent,
  startEdge,
  startSim,
  stopAll,
  type EdgeHandle,
  type SimHandle,
} from './harness';

let sim: SimHandle;
let edge: EdgeHandle;
let anthropic: Anthropic;
const BILLING = 'x-anthropic-billing-header: cc_version=2.1.332.a1b; cc_entrypoint=cli; cch=4f2e1;';

beforeAll(async () => {
  sim = await startSim(['--models', 'sim-model', '--max-model-len', '4096', '--output-tokens', '8', '--ttft-ms', '50']);
  edge = await startEdge();
  // Models discovered from /v1/models, so the edge knows the context window (max_model_len).
  await startAgent({ tunnelPort: edge.tunnelPort, id: 'agent-cc', backendUrl: sim.url });
  anthropic = new Anthropic({ apiKey: API_KEY, baseURL: edge.url, maxRetries: 0 });
});

afterAll(stopAll);

async function lastBackendBody(): Promise<Record<string, unknown>> {
  const chat = (await simRequests(sim)).filter((record) => record.path === '/v1/chat/completions');
  return chat.at(-1)!.body as Record<string, unknown>;
}

describe('Claude Code shapes on a 4k-context chat backend', () => {
  it('max_tokens 32000 is lowered to what fits, with a warning; system folded, billing line moved to the end', async () => {
    // Streamed, as Claude Code asks (the SDK refuses a non-stream request this large).
    const { data: stream, response } = await anthropic.messages
      .create({
        model: 'sim-model',
        stream: true,
        max_tokens: 32000,
        system: [{ type: 'text', text: `${BILLING}\nYou are Claude Code.` }],
        messages: [
          { role: 'user', content: 'fix the bug' },
          // Claude Code's mid-conversation system message (not in the SDK's types).
          { role: 'system', content: 'Plan mode is on.' } as unknown as Anthropic.MessageParam,
          { role: 'user', content: 'go on' },
        ],
      })
      .withResponse();
    let stopReason: string | null | undefined;
    for await (const event of stream) if (event.type === 'message_delta') stopReason = event.delta.stop_reason;
    expect(stopReason).toBe('end_turn');
    expect(response.headers.get('x-iop-warnings')).toMatch(
      /max_tokens 32000 lowered to \d+: the model's context holds 4096 tokens/,
    );
    const body = await lastBackendBody();
    expect(body.max_tokens).toBeGreaterThan(3000);
    expect(body.max_tokens).toBeLessThan(4096);
    expect(body.messages).toEqual([
      { role: 'system', content: `You are Claude Code.\n\nPlan mode is on.\n\n${BILLING}` },
      { role: 'user', content: 'fix the bug\n\ngo on' },
    ]);
  });

  it('is_error rendered as text and a tool image moved into a user message are reported in x-iop-warnings', async () => {
    const { response } = await anthropic.messages
      .create({
        model: 'sim-model',
        max_tokens: 16,
        messages: [
          { role: 'user', content: 'look' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'Shot', input: {} }] },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 'toolu_1',
                is_error: true,
                content: [
                  { type: 'text', text: 'partly failed' },
                  { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
                ],
              },
            ],
          },
        ],
        tools: [{ name: 'Shot', input_schema: { type: 'object', properties: {} } }],
      })
      .withResponse();
    const warnings = response.headers.get('x-iop-warnings') ?? '';
    expect(warnings).toContain('is_error carried as an "Error: " prefix');
    expect(warnings).toContain('image/file part(s) moved to a following user message');
  });

  it('an assistant tool_use with no tool_result in the next user turn is a 400 before any backend call', async () => {
    const before = (await simRequests(sim)).length;
    const error = await anthropic.messages
      .create({
        model: 'sim-model',
        max_tokens: 16,
        messages: [
          { role: 'user', content: 'read it' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_9', name: 'Read', input: {} }] },
          { role: 'user', content: 'never mind' },
        ],
        tools: [{ name: 'Read', input_schema: { type: 'object', properties: {} } }],
      })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect((error as InstanceType<typeof Anthropic.APIError>).status).toBe(400);
    expect((error as InstanceType<typeof Anthropic.APIError>).message).toContain(
      '`tool_use` ids were found without `tool_result` blocks immediately after: toolu_9',
    );
    expect((await simRequests(sim)).length).toBe(before);
  });
});
