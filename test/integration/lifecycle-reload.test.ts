/**
 * Config reload on SIGHUP: a new client key works at once, the old one is refused, a stream
 * started before the reload completes; an invalid file is refused with a log line and the running
 * config is kept. The edge is started with only `--config` (flags would override the file).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { launch } from '../../apps/bench/src/processes';
import { JOIN_TOKEN, startAgent, startSim, stopAll, type Proc } from './harness';
import { ADMIN_KEY, admin, ask, openStream, readChatStream } from './lifecycle-helpers';

const OLD_KEY = 'sk-iop-reload-old-0001';
const NEW_KEY = 'sk-iop-reload-new-0002';

let edge: Proc | undefined;
afterEach(async () => {
  await edge?.kill();
  await stopAll();
});

describe('config reload', () => {
  it('SIGHUP applies new keys without dropping a stream; an invalid file is refused', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'iop-reload-'));
    const file = path.join(dir, 'edge.json');
    const write = (config: Record<string, unknown>) => writeFileSync(file, JSON.stringify(config));
    const base = { port: 0, tunnel: { port: 0 }, joinTokens: [JOIN_TOKEN], adminKeys: [ADMIN_KEY], responsesStore: { kind: 'memory' } };
    write({ ...base, apiKeys: [OLD_KEY] });
    edge = launch('edge', 'apps/edge/dist/main.js', ['--config', file], { IOP_LOG_LEVEL: 'info' });
    const listening = await edge.waitFor((line) => line.msg === 'edge listening');
    const baseURL = `http://127.0.0.1:${listening.port as number}/v1`;
    const sim = await startSim(['--models', 'sim-model', '--output-tokens', '20', '--itl-ms', '75']);
    await startAgent({ tunnelPort: listening.tunnelPort as number, id: 'agent-r', backendUrl: sim.url, models: ['sim-model'] });

    const stream = await openStream(baseURL, 'sim-model', OLD_KEY);
    expect(stream.status).toBe(200);
    write({ ...base, apiKeys: [NEW_KEY], maxAttempts: 2, port: 1 });
    edge.child.kill('SIGHUP');
    const reloaded = await edge.waitFor((line) => line.msg === 'config reloaded');
    expect(reloaded.changed).toEqual(['apiKeys', 'maxAttempts']);
    expect(edge.lines.find((line) => String(line.msg).includes('need a restart'))).toMatchObject({ settings: ['port'] });
    expect((await ask(baseURL, NEW_KEY)).status).toBe(200);
    expect((await ask(baseURL, OLD_KEY)).status).toBe(401);
    expect(readChatStream(await stream.body)).toEqual({ deltas: 20, done: true, error: undefined });

    writeFileSync(file, '{ "apiKeys": ["short"] ');
    edge.child.kill('SIGHUP');
    const refused = await edge.waitFor((line) => line.msg === 'config reload refused: the running config is kept');
    expect(refused.error).toContain('cannot read config file');
    write({ ...base, apiKeys: ['short'] });
    edge.child.kill('SIGHUP');
    await edge.waitFor((line) => line.msg === 'config reload refused: the running config is kept' && String(line.error).includes('/apiKeys/0'));
    write({ ...base, apiKeys: [NEW_KEY], gate: { default: { filters: ['no-such-filter'] } } });
    edge.child.kill('SIGHUP');
    await edge.waitFor((line) => line.msg === 'config reload refused: the running config is kept' && String(line.error).includes('gate'));
    expect((await ask(baseURL, NEW_KEY)).status).toBe(200);
    expect((await ask(baseURL, OLD_KEY)).status).toBe(401);
    expect((await admin(baseURL.replace('/v1', ''), 'GET', '/admin/agents')).status).toBe(200);
  });
});
