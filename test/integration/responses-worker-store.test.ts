/**
 * The SQLite Responses store's worker thread (apps/edge/src/responses-store/worker-store.ts, as
 * built): started by the first call, not by the edge's start; a worker that dies fails the calls
 * it held and the next call gets a new one, over the same database file.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { decodeResponsesRequest, encodeResponsesResponse, storedResponseOf } from '@iop/dialects';
import { IopError } from '@iop/core';
import type { StoredResponse } from '../../apps/edge/src/responses-store/index.js';
import type { WorkerResponseStore as Store } from '../../apps/edge/src/responses-store/worker-store.js';
import OpenAI from 'openai';
import { API_KEY, startAgent, startEdge, startSim, stopAll } from './harness';

// The worker runs the compiled sqlite-worker.js beside it: the built module, not the source.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { WorkerResponseStore } = require('../../apps/edge/dist/responses-store/worker-store.js') as {
  WorkerResponseStore: typeof Store;
};

function record(id: string): StoredResponse {
  const request = decodeResponsesRequest({
    model: 'm',
    input: [{ id: `msg_${id}`, role: 'user', content: 'hi' }],
  });
  const response = encodeResponsesResponse(
    [
      { type: 'text-delta', text: `answer ${id}` },
      { type: 'finish', reason: 'stop', raw: 'stop' },
    ],
    { requestId: 'r', model: 'm', request, createdAt: 1764500000 },
  );
  return { ...storedResponseOf(request, response)!, id };
}

const dirs: string[] = [];
const stores: Store[] = [];
afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function open(dataDir?: string, restartDelayMs?: number): Store {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'iop-worker-store-'));
  dirs.push(dir);
  const store = new WorkerResponseStore({ dataDir: dir, pruneIntervalMs: 0 }, restartDelayMs);
  stores.push(store);
  return store;
}

/** The worker thread serving the store now (reached inside to stop it as a crash would). */
const liveWorker = (store: Store) => (store as unknown as { live: Worker | undefined }).live;

describe('SQLite Responses store worker', () => {
  it('starts its worker with the first call, not before', async () => {
    const store = open();
    expect(store.workersStarted).toBe(0);
    expect(liveWorker(store)).toBeUndefined();
    await store.put(record('resp_1'), 'alice');
    expect(store.workersStarted).toBe(1);
    expect((await store.get('resp_1', 'alice'))?.id).toBe('resp_1');
    expect(store.workersStarted).toBe(1);
  });

  it('after its worker dies, fails the calls that worker held and serves the next call from a new worker over the same file', async () => {
    const store = open();
    await store.put(record('resp_kept'), 'alice');
    const worker = liveWorker(store)!;
    const held = store.get('resp_kept', 'alice').catch((error: unknown) => error);
    await worker.terminate();
    const failure = await held;
    // Answered before the stop, or failed with it: never left hanging.
    if (failure instanceof Error) {
      expect(failure).toBeInstanceOf(IopError);
      expect(failure).toMatchObject({ code: 'internal', message: expect.stringContaining('worker stopped') });
    } else expect(failure).toMatchObject({ id: 'resp_kept' });
    expect((await store.get('resp_kept', 'alice'))?.id).toBe('resp_kept');
    expect(store.workersStarted).toBe(2);
    expect(liveWorker(store)).not.toBe(worker);
  });

  it('fails calls with IopError internal while its database cannot be opened, starting a worker at most once per restartDelayMs', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'iop-worker-store-'));
    const notADirectory = join(dir, 'file');
    writeFileSync(notADirectory, 'x');
    dirs.push(dir);
    const store = open(notADirectory, 400);
    const cannotOpen = { code: 'internal', message: expect.stringContaining('cannot open its database') };
    await expect(store.get('resp_x', 'alice')).rejects.toMatchObject(cannotOpen);
    // Within the delay: the same answer at once, no new thread.
    for (let i = 0; i < 20; i++) await expect(store.get('resp_x', 'alice')).rejects.toMatchObject(cannotOpen);
    expect(store.workersStarted).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 450));
    // The directory is usable again: the next call after the delay starts a worker that serves.
    rmSync(notADirectory);
    expect(await store.get('resp_x', 'alice')).toBeUndefined();
    expect(store.workersStarted).toBe(2);
  });
});

describe('an edge with the SQLite Responses store', () => {
  afterAll(stopAll);

  it('starts the store worker thread with the first stored Response, not at start', async () => {
    const sim = await startSim(['--models', 'sim-model', '--output-tokens', '5']);
    const dataDir = mkdtempSync(join(tmpdir(), 'iop-worker-edge-'));
    dirs.push(dataDir);
    const edge = await startEdge({ env: { IOP_DATA_DIR: dataDir } });
    await startAgent({
      tunnelPort: edge.tunnelPort,
      id: 'agent-worker-store',
      backendUrl: sim.url,
      models: ['sim-model'],
    });
    const client = new OpenAI({ apiKey: API_KEY, baseURL: edge.baseURL, maxRetries: 0 });
    const threads = () => Number(/Threads:\s+(\d+)/.exec(readFileSync(`/proc/${edge.proc.pid}/status`, 'utf8'))![1]);
    // Served but not stored: no worker.
    await client.responses.create({ model: 'sim-model', input: 'hi', store: false });
    await client.chat.completions.create({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }] });
    const before = threads();
    expect(existsSync(join(dataDir, 'responses.sqlite'))).toBe(false);
    const stored = await client.responses.create({ model: 'sim-model', input: 'hi' });
    expect(threads()).toBeGreaterThan(before);
    expect(existsSync(join(dataDir, 'responses.sqlite'))).toBe(true);
    expect((await client.responses.retrieve(stored.id)).id).toBe(stored.id);
  });
});
