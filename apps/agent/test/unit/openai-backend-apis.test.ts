/**
 * Which APIs the agent registers for a model of an OpenAI-compatible server: probed by route
 * (a validation error = served; 404, 405, 501 = not), or as `--apis` gives them.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { OpenAiBackend } from '../../src/backends/openai-backend';

/** A server with the routes `routes` (answering a body without input with 400), 404 or `missing` for the others. */
async function server(
  routes: Record<string, number>,
  missing = 404,
): Promise<{ url: string; posts: Array<{ path: string; body: string }>; close: () => Promise<void> }> {
  const posts: Array<{ path: string; body: string }> = [];
  const instance = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (req.method === 'GET' && req.url === '/v1/models') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'm', object: 'model' }] }));
        return;
      }
      if (req.method === 'POST' && req.url !== '/tokenize') posts.push({ path: req.url ?? '', body });
      res.statusCode = routes[req.url ?? ''] ?? missing;
      res.end('{"detail":"x"}');
    });
  });
  await new Promise<void>((resolve) => instance.listen(0, '127.0.0.1', resolve));
  const { port } = instance.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    posts,
    close: () => new Promise((resolve) => instance.close(() => resolve())),
  };
}

async function apisOf(routes: Record<string, number>, missing?: number, apis?: Array<'chat' | 'embeddings'>) {
  const running = await server(routes, missing);
  const agent = new OpenAiBackend({
    baseUrl: running.url,
    probeTimeoutMs: 2_000,
    ...(apis === undefined ? {} : { apis }),
  });
  try {
    const [model] = await agent.models();
    return { apis: model!.apis, posts: running.posts };
  } finally {
    await agent.close();
    await running.close();
  }
}

describe('OpenAiBackend API probes', () => {
  it('a generative vLLM model: completions (so chat), no embeddings, no rerank; chat itself is not probed', async () => {
    const { apis, posts } = await apisOf({ '/v1/completions': 400, '/v1/chat/completions': 400 });
    expect(apis).toEqual(['chat', 'completions']);
    expect(posts.map((post) => post.path).sort()).toEqual(['/v1/completions', '/v1/embeddings', '/v1/rerank']);
    // Probes carry no input: nothing is computed.
    expect(posts.every((post) => post.body === '{"model":"m"}')).toBe(true);
  });

  it('a pooling model (embeddings and rerank, no generation): chat is probed and absent', async () => {
    const { apis, posts } = await apisOf({ '/v1/embeddings': 422, '/v1/rerank': 400 });
    expect(apis).toEqual(['embeddings', 'rerank']);
    expect(posts.map((post) => post.path)).toContain('/v1/chat/completions');
  });

  it('llama.cpp server without --embeddings answers 501: not served', async () => {
    const { apis } = await apisOf({ '/v1/completions': 500, '/v1/embeddings': 501, '/v1/rerank': 501 });
    expect(apis).toEqual(['chat', 'completions']);
  });

  it('no route found at all leaves the APIs unknown (every API is tried)', async () => {
    expect((await apisOf({})).apis).toBeUndefined();
  });

  it('--apis is taken as given, without probes', async () => {
    const { apis, posts } = await apisOf({}, 404, ['embeddings']);
    expect(apis).toEqual(['embeddings']);
    expect(posts).toEqual([]);
  });
});
