import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { OpenAiBackend } from '../../src/backends/openai-backend';

/** A server that records request paths and answers `/v1/models` like vLLM. */
async function recordingServer(): Promise<{ url: string; paths: string[]; close: () => Promise<void> }> {
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    paths.push(req.url ?? '');
    if (req.url === '/v1/models') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ object: 'list', data: [{ id: 'm', object: 'model', max_model_len: 4096 }] }));
    } else {
      res.statusCode = 404;
      res.end('{}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    paths,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('OpenAiBackend base URL', () => {
  test.each(['', '/', '/v1', '/v1/'])(
    'base URL ending in %j reaches /v1/models, never /v1/v1/models',
    async (suffix) => {
      const server = await recordingServer();
      const backend = new OpenAiBackend({ baseUrl: server.url + suffix, probeTimeoutMs: 2_000 });
      try {
        const models = await backend.models();
        expect(models).toEqual([{ id: 'm', contextLength: 4096 }]);
        expect(server.paths[0]).toBe('/v1/models');
        expect(server.paths.some((path) => path.includes('/v1/v1'))).toBe(false);
      } finally {
        await backend.close();
        await server.close();
      }
    },
  );

  test('a path prefix before /v1 is kept', async () => {
    const server = await recordingServer();
    const backend = new OpenAiBackend({ baseUrl: `${server.url}/proxy/v1`, probeTimeoutMs: 2_000 });
    try {
      await expect(backend.models()).rejects.toThrow();
      expect(server.paths[0]).toBe('/proxy/v1/models');
    } finally {
      await backend.close();
      await server.close();
    }
  });
});
