/**
 * Loopback ports for processes that log too little to announce their own (an edge at log level
 * `warn` never prints its port): pick a free port up front, then poll an HTTP route until it answers.
 */
import net from 'node:net';
import { request } from 'undici';
import { sleep } from '@iop/core';

/** A TCP port that was free on 127.0.0.1 a moment ago (the OS's choice for port 0). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Resolves once `GET url` answers with any HTTP status.
 * @throws Error when nothing answers within `timeoutMs`.
 */
export async function waitForHttp(url: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const response = await request(url);
      await response.body.dump();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`${url} did not answer within ${timeoutMs} ms`, { cause: error });
      await sleep(50);
    }
  }
}
