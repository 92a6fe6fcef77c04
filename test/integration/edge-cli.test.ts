/**
 * The installed commands: `iop-edge` run through its bin shim (as `npx iop-edge` does) refuses a
 * port that is taken with one plain line naming the address and the flag — exit 1, no stack trace.
 */
import { execFile } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { API_KEY, JOIN_TOKEN, ROOT } from './harness';

const run = promisify(execFile);
const EDGE = path.join(ROOT, 'apps/edge/bin/iop-edge.js');

describe('iop-edge command', () => {
  it('prints its version through the bin shim', async () => {
    const { stdout } = await run(process.execPath, [EDGE, '--version']);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('a taken port is one clear line and exit 1', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const failed = (await run(
        process.execPath,
        [
          EDGE,
          '--port',
          String(port),
          '--host',
          '127.0.0.1',
          '--tunnel-port',
          '0',
          '--api-keys',
          API_KEY,
          '--join-tokens',
          JOIN_TOKEN,
        ],
        { env: { ...process.env, IOP_LOG_LEVEL: 'silent' } },
      ).catch((error: unknown) => error)) as { code: number; stderr: string };
      expect(failed.code).toBe(1);
      expect(failed.stderr.trim()).toBe(
        `cannot listen on 127.0.0.1:${port}: the address is in use by another process; choose another with --port / IOP_PORT`,
      );
    } finally {
      blocker.close();
    }
  });
});
