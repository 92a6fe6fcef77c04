/**
 * Config reload on SIGHUP: a new client key works at once, the old one is refused, a stream
 * started before the reload completes; an invalid file is refused with a log line and the running
 * config is kept. The pool section reloads too: a new alias and group answer at once (official
 * `openai` client), a removed group is a 404 `model_not_found` while a stream already running on
 * it completes, and `GET /v1/models` follows. The edge is started with only `--config` (flags
 * would override the file).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { launch } from '../../apps/bench/src/processes';
import { API_KEY, JOIN_TOKEN, startAgent, startSim, stopAll, type Proc } from './harness';
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
    const base = {
      port: 0,
      tunnel: { port: 0 },
      joinTokens: [JOIN_TOKEN],
      adminKeys: [ADMIN_KEY],
      responsesStore: { kind: 'memory' },
    };
    write({ ...base, apiKeys: [OLD_KEY] });
    edge = launch('edge', 'apps/edge/dist/main.js', ['--config', file], {
      IOP_LOG_LEVEL: 'info',
      IOP_STARTUP_GRACE_MS: '0',
    });
    const listening = await edge.ready();
    const baseURL = `http://127.0.0.1:${listening.port as number}/v1`;
    const sim = await startSim(['--models', 'sim-model', '--output-tokens', '20', '--itl-ms', '75']);
    await startAgent({
      tunnelPort: listening.tunnelPort as number,
      id: 'agent-r',
      backendUrl: sim.url,
      models: ['sim-model'],
    });

    const stream = await openStream(baseURL, 'sim-model', OLD_KEY);
    expect(stream.status).toBe(200);
    write({ ...base, apiKeys: [NEW_KEY], maxAttempts: 2, port: 1 });
    edge.child.kill('SIGHUP');
    const reloaded = await edge.waitFor((line) => line.msg === 'config reloaded');
    expect(reloaded.changed).toEqual(['apiKeys', 'maxAttempts']);
    expect(edge.lines.find((line) => String(line.msg).includes('need a restart'))).toMatchObject({
      settings: ['port'],
    });
    expect((await ask(baseURL, NEW_KEY)).status).toBe(200);
    expect((await ask(baseURL, OLD_KEY)).status).toBe(401);
    expect(readChatStream(await stream.body)).toEqual({ deltas: 20, done: true, error: undefined });

    writeFileSync(file, '{ "apiKeys": ["short"] ');
    edge.child.kill('SIGHUP');
    const refused = await edge.waitFor((line) => line.msg === 'config reload refused: the running config is kept');
    expect(refused.error).toContain('cannot read config file');
    write({ ...base, apiKeys: ['short'] });
    edge.child.kill('SIGHUP');
    await edge.waitFor(
      (line) =>
        line.msg === 'config reload refused: the running config is kept' &&
        String(line.error).includes('apiKeys[0] must NOT have fewer than 8 characters'),
    );
    write({ ...base, apiKeys: [NEW_KEY], gate: { default: { filters: ['no-such-filter'] } } });
    edge.child.kill('SIGHUP');
    await edge.waitFor(
      (line) => line.msg === 'config reload refused: the running config is kept' && String(line.error).includes('gate'),
    );
    expect((await ask(baseURL, NEW_KEY)).status).toBe(200);
    expect((await ask(baseURL, OLD_KEY)).status).toBe(401);
    expect((await admin(baseURL.replace('/v1', ''), 'GET', '/admin/agents')).status).toBe(200);
  });

  it('SIGHUP applies a new pool: new alias and group at once, a removed group 404s, its running stream completes, /v1/models follows', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'iop-reload-pool-'));
    const file = path.join(dir, 'edge.json');
    const write = (pool: Record<string, unknown>) =>
      writeFileSync(
        file,
        JSON.stringify({
          port: 0,
          tunnel: { port: 0 },
          apiKeys: [API_KEY],
          joinTokens: [JOIN_TOKEN],
          responsesStore: { kind: 'memory' },
          pool,
        }),
      );
    const target = { targets: [{ model: 'sim-model' }] };
    write({
      modelGroups: [
        { name: 'story', ...target },
        { name: 'retired', aliases: ['old-alias'], ...target },
      ],
    });
    edge = launch('edge', 'apps/edge/dist/main.js', ['--config', file], {
      IOP_LOG_LEVEL: 'info',
      IOP_STARTUP_GRACE_MS: '0',
    });
    const listening = await edge.ready();
    const baseURL = `http://127.0.0.1:${listening.port as number}/v1`;
    const client = new OpenAI({ apiKey: API_KEY, baseURL, maxRetries: 0 });
    const sim = await startSim(['--models', 'sim-model', '--output-tokens', '20', '--itl-ms', '75']);
    await startAgent({
      tunnelPort: listening.tunnelPort as number,
      id: 'agent-p',
      backendUrl: sim.url,
      models: ['sim-model'],
    });
    const ids = async () => (await client.models.list()).data.map((model) => model.id);
    expect(await ids()).toEqual(['story', 'retired', 'old-alias', 'sim-model']);

    const stream = await openStream(baseURL, 'retired', API_KEY);
    expect(stream.status).toBe(200);
    let ended = false;
    const body = stream.body.finally(() => (ended = true));
    write({
      modelGroups: [
        { name: 'story', aliases: ['gpt-4o-mini'], ...target },
        { name: 'tales', ...target },
      ],
    });
    edge.child.kill('SIGHUP');
    const reloaded = await edge.waitFor((line) => line.msg === 'config reloaded');
    expect(reloaded.changed).toEqual(['pool']);
    expect(reloaded.pool).toEqual({
      groupsAdded: ['tales'],
      groupsRemoved: ['retired'],
      aliasesAdded: ['gpt-4o-mini'],
      aliasesRemoved: ['old-alias'],
    });
    expect(ended).toBe(false);

    const viaAlias = await client.chat.completions
      .create({ model: 'gpt-4o-mini', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(viaAlias.response.headers.get('x-iop-agent-id')).toBe('agent-p');
    expect(viaAlias.data.choices[0]!.message.content).toEqual(expect.any(String));
    expect(
      (
        await client.chat.completions.create({
          model: 'tales',
          max_tokens: 2,
          messages: [{ role: 'user', content: 'hi' }],
        })
      ).choices,
    ).toHaveLength(1);
    for (const removed of ['retired', 'old-alias']) {
      const error = await client.chat.completions
        .create({ model: removed, max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] })
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(OpenAI.NotFoundError);
      expect(error).toMatchObject({ status: 404, code: 'model_not_found' });
    }
    expect(await ids()).toEqual(['story', 'gpt-4o-mini', 'tales', 'sim-model']);
    expect(readChatStream(await body)).toEqual({ deltas: 20, done: true, error: undefined });

    // An invalid pool (an alias that clashes with a group name) is refused; the running pool stays.
    write({
      modelGroups: [
        { name: 'story', ...target },
        { name: 'tales', aliases: ['story'], ...target },
      ],
    });
    edge.child.kill('SIGHUP');
    const refused = await edge.waitFor((line) => line.msg === 'config reload refused: the running config is kept');
    expect(refused.error).toContain('pool.modelGroups[1].aliases[0] `story` is already used by pool.modelGroups[0]');
    expect(await ids()).toEqual(['story', 'gpt-4o-mini', 'tales', 'sim-model']);
    expect(
      (
        await client.chat.completions.create({
          model: 'gpt-4o-mini',
          max_tokens: 2,
          messages: [{ role: 'user', content: 'hi' }],
        })
      ).choices,
    ).toHaveLength(1);
  });
});
