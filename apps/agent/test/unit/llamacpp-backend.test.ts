/**
 * The embedded backend with a real model: ../shared/models/stories260K.gguf beside the repository
 * (found through the models search path).
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import vm from 'node:vm';
import { ProviderTunnelFrame_Kind as Kind } from '@iop/proto';
import { LlamaCppBackend } from '../../src/backends/llamacpp/llamacpp-backend.js';
import { modelSearchPath } from '../../src/backends/llamacpp/model-file.js';
import { startAgent } from '../../src/start-agent.js';
import type { BackendResponse } from '@iop/backend';
import type { NodeLlamaCpp } from '../../src/backends/llamacpp/library.js';
import { captureLogs } from './helpers/log-capture';
import { TestEdge, waitFor } from './helpers/test-edge';

/** jest runs CommonJS in a vm context without ESM support: import the ESM library through the main context's loader. */
const loadLibrary = (): Promise<NodeLlamaCpp> =>
  new vm.Script('import("node-llama-cpp")', {
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  }).runInThisContext() as Promise<NodeLlamaCpp>;

let backend: LlamaCppBackend;

beforeAll(async () => {
  backend = await LlamaCppBackend.create({ loadLibrary, threads: 1, gpu: 'none', sequences: 2 });
}, 30_000);

afterAll(async () => {
  await backend.close();
});

async function call(
  path: string,
  body: unknown,
  signal = new AbortController().signal,
  method = 'POST',
): Promise<BackendResponse> {
  return backend.handle({
    method,
    path,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? new Uint8Array() : Buffer.from(JSON.stringify(body)),
    signal,
    requestId: 'req_test',
  });
}

async function text(response: BackendResponse): Promise<string> {
  const slices: Buffer[] = [];
  for await (const slice of response.body) slices.push(Buffer.from(slice));
  return Buffer.concat(slices).toString('utf8');
}

function events(sse: string): unknown[] {
  expect(sse.endsWith('data: [DONE]\n\n')).toBe(true);
  return sse
    .split('\n\n')
    .filter((event) => event !== '' && event !== 'data: [DONE]')
    .map((event) => {
      expect(event.startsWith('data: ')).toBe(true);
      return JSON.parse(event.slice(6)) as unknown;
    });
}

const MESSAGES = [{ role: 'user', content: 'Once upon a time, there was a little girl' }];

describe('LlamaCppBackend (stories260K.gguf)', () => {
  test('the default model comes from the models search path', () => {
    const sharedModels = resolve(__dirname, '../../../../../shared/models');
    expect(existsSync(join(sharedModels, 'stories260K.gguf'))).toBe(true);
    expect(modelSearchPath()).toContain(sharedModels);
    // The modelsPath setting (colon-separated) comes first.
    expect(modelSearchPath('/opt/models::/srv/gguf').slice(0, 2)).toEqual(['/opt/models', '/srv/gguf']);
    expect(backend.modelId).toBe('stories260K');
    expect(backend.contextSize).toBe(2048);
  });

  test('streams chat.completion.chunk events in the Chat stream order with exact usage; max_tokens gives finish_reason length', async () => {
    const tokenized = JSON.parse(await text(await call('/tokenize', { model: 'stories260K', messages: MESSAGES }))) as {
      count: number;
      tokens: number[];
      max_model_len: number;
    };
    expect(tokenized.count).toBe(tokenized.tokens.length);
    expect(tokenized.count).toBeGreaterThan(5);
    expect(tokenized.max_model_len).toBe(2048);

    const response = await call('/v1/chat/completions', {
      model: 'stories260K',
      messages: MESSAGES,
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 12,
      temperature: 0,
    });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('text/event-stream');
    const chunks = events(await text(response)) as {
      id: string;
      object: string;
      model: string;
      choices: { delta: Record<string, unknown>; finish_reason: string | null }[];
      usage: unknown;
    }[];
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk' && chunk.model === 'stories260K')).toBe(
      true,
    );
    const content = chunks.map((chunk) => (chunk.choices[0]?.delta.content as string | undefined) ?? '').join('');
    expect(content.length).toBeGreaterThan(0);
    const last = chunks.at(-2)!;
    expect(last.choices[0]).toMatchObject({ delta: {}, finish_reason: 'length' });
    const usageChunk = chunks.at(-1)!;
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.usage).toEqual({
      prompt_tokens: tokenized.count,
      completion_tokens: 12,
      total_tokens: tokenized.count + 12,
    });
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
  }, 20_000);

  test('non-stream: a stop sequence cuts the output before it, finish_reason stop; seed and temperature accepted', async () => {
    const base = JSON.parse(
      await text(
        await call('/v1/chat/completions', {
          model: 'stories260K',
          messages: MESSAGES,
          max_completion_tokens: 30,
          temperature: 0,
        }),
      ),
    ) as {
      object: string;
      choices: { message: { role: string; content: string }; finish_reason: string }[];
      usage: { completion_tokens: number };
    };
    expect(base.object).toBe('chat.completion');
    expect(base.choices[0]!.message.role).toBe('assistant');
    expect(base.choices[0]!.finish_reason).toBe('length');
    expect(base.usage.completion_tokens).toBe(30);
    const full = base.choices[0]!.message.content;
    const words = full.trim().split(/\s+/);
    const stop = words[Math.min(3, words.length - 1)]!;
    const cut = JSON.parse(
      await text(
        await call('/v1/chat/completions', {
          model: 'stories260K',
          messages: MESSAGES,
          max_tokens: 30,
          temperature: 0,
          stop: [stop],
          seed: 7,
          top_p: 0.9,
        }),
      ),
    ) as typeof base;
    expect(cut.choices[0]!.finish_reason).toBe('stop');
    expect(cut.choices[0]!.message.content).toBe(full.slice(0, full.indexOf(stop)));
    expect(cut.usage.completion_tokens).toBeLessThan(30);
  }, 20_000);

  test('response_format json_schema constrains the output through a grammar', async () => {
    const schema = { type: 'object', properties: { color: { enum: ['red', 'blue'] } }, required: ['color'] };
    const result = JSON.parse(
      await text(
        await call('/v1/chat/completions', {
          model: 'stories260K',
          messages: MESSAGES,
          max_tokens: 40,
          response_format: { type: 'json_schema', json_schema: { name: 'c', schema } },
        }),
      ),
    ) as { choices: { message: { content: string } }[] };
    const value = JSON.parse(result.choices[0]!.message.content) as { color: string };
    expect(['red', 'blue']).toContain(value.color);
  }, 20_000);

  test('bad input is a 400 in the OpenAI error shape naming the field', async () => {
    const response = await call('/v1/chat/completions', { model: 'stories260K', messages: MESSAGES, temperature: 5 });
    expect(response.status).toBe(400);
    expect(JSON.parse(await text(response))).toEqual({
      error: {
        message: 'temperature must be a number in [0, 2]',
        type: 'invalid_request_error',
        param: 'temperature',
        code: null,
      },
    });
    const models = JSON.parse(await text(await call('/v1/models', undefined, undefined, 'GET'))) as {
      data: { id: string }[];
    };
    expect(models.data.map((model) => model.id)).toEqual(['stories260K']);
  });

  test('abort stops generation promptly', async () => {
    const controller = new AbortController();
    const response = await call(
      '/v1/chat/completions',
      { model: 'stories260K', messages: MESSAGES, stream: true, max_tokens: 1500 },
      controller.signal,
    );
    const iterator = response.body[Symbol.asyncIterator]();
    await iterator.next();
    const abortedAt = performance.now();
    controller.abort(new Error('cancelled'));
    await expect(
      (async () => {
        for (;;) if ((await iterator.next()).done === true) return 'ended';
      })(),
    ).rejects.toThrow('cancelled');
    expect(performance.now() - abortedAt).toBeLessThan(500);
  }, 20_000);

  test('through the tunnel: an embedded run streams real text with a USAGE frame before END', async () => {
    const edge = new TestEdge({ joinToken: 't' });
    await edge.start();
    const logs = captureLogs();
    const agent = await startAgent({
      edgeUrl: edge.url,
      joinToken: 't',
      backendInstance: backend,
      logger: logs.logger,
      maxConcurrency: 2,
    });
    try {
      await agent.agent.registered;
      expect(edge.registrations[0]).toMatchObject({
        backend: 'llamacpp',
        capabilities: ['tokenize'],
        maxConcurrency: 2,
      });
      expect(edge.registrations[0]!.models.map((model) => [model.id, model.contextLength])).toEqual([
        ['stories260K', 2048],
      ]);
      edge.assign({
        runId: 'e1',
        body: JSON.stringify({
          model: 'stories260K',
          messages: MESSAGES,
          stream: true,
          stream_options: { include_usage: true },
          max_tokens: 8,
        }),
      });
      await waitFor(() => edge.runs.get('e1')?.ended === true, 10_000, 'run end');
      const frames = edge.runs.get('e1')!.frames;
      expect(frames[0]).toMatchObject({ kind: Kind.ACCEPTED });
      expect(frames[1]).toMatchObject({ kind: Kind.RESPONSE_START, status: 200 });
      expect(frames.at(-2)).toMatchObject({ kind: Kind.USAGE, usage: { completionTokens: 8 } });
      expect(frames.at(-1)!.kind).toBe(Kind.END);
      const body = Buffer.concat(
        frames.filter((frame) => frame.kind === Kind.BODY).map((frame) => frame.body),
      ).toString();
      expect(body.endsWith('data: [DONE]\n\n')).toBe(true);
    } finally {
      // The backend is shared with the other tests: stop the agent without closing it.
      (agent.agent as unknown as { backend: { close: () => Promise<void> } }).backend.close = () => Promise.resolve();
      await agent.close();
      await edge.stop();
    }
  }, 20_000);
});
