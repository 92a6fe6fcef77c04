/**
 * The `agent-output` policy per model, end to end: a Cline-style client (XML tools in the text,
 * Chat Completions) on a model configured with `xmlCompletionTool` gets a plain answer wrapped in
 * `attempt_completion`; the completion log line names the response mode and the policy applied.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { API_KEY, startAgent, startEdge, startSim, stopAll, type EdgeHandle, type SimHandle } from './harness';

let sim: SimHandle;
let edge: EdgeHandle;
let openai: OpenAI;

beforeAll(async () => {
  sim = await startSim(['--models', 'cline-model,plain-model', '--output-tokens', '6', '--ttft-ms', '30']);
  const file = join(mkdtempSync(join(tmpdir(), 'iop-agent-output-')), 'edge.json');
  writeFileSync(
    file,
    JSON.stringify({
      gate: {
        default: { filters: ['tool-calls', 'structured-output', 'empty-output'] },
        models: {
          'cline-model': {
            filters: [
              {
                name: 'agent-output',
                options: { mode: 'xmlCompletionTool', xmlTools: ['read_file', 'attempt_completion'] },
              },
            ],
            policy: 'buffered',
          },
        },
      },
    }),
  );
  edge = await startEdge({ args: ['--config', file], env: { IOP_LOG_LEVEL: 'info' } });
  await startAgent({
    tunnelPort: edge.tunnelPort,
    id: 'agent-cline',
    backendUrl: sim.url,
    models: ['cline-model', 'plain-model'],
  });
  openai = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
});

afterAll(stopAll);

describe('agent-output policy through the edge', () => {
  it('xmlCompletionTool wraps a plain answer in attempt_completion, stream and non-stream; logs mode and policy', async () => {
    const completion = await openai.chat.completions.create({
      model: 'cline-model',
      messages: [{ role: 'user', content: 'fix it' }],
    });
    const content = completion.choices[0]!.message.content ?? '';
    expect(content).toMatch(/^<attempt_completion>\n<result>\n[\s\S]+\n<\/result>\n<\/attempt_completion>$/);
    const stream = await openai.chat.completions.create({
      model: 'cline-model',
      messages: [{ role: 'user', content: 'fix it' }],
      stream: true,
    });
    let streamed = '';
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? '';
    expect(streamed).toMatch(/^<attempt_completion>\n<result>\n[\s\S]+\n<\/result>\n<\/attempt_completion>$/);
    const line = await edge.proc.waitFor((l) => l.msg === 'request completed' && l.model === 'cline-model');
    expect(line).toMatchObject({
      mode: 'normalized',
      policy: { release: 'buffered', agentOutput: 'xmlCompletionTool' },
    });
  });

  it('a model without the policy keeps its plain answer, relayed (passthrough in the log)', async () => {
    const completion = await openai.chat.completions.create({
      model: 'plain-model',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(completion.choices[0]!.message.content).not.toContain('attempt_completion');
    const line = await edge.proc.waitFor((l) => l.msg === 'request completed' && l.model === 'plain-model');
    expect(line.mode).toBe('passthrough');
  });
});
