/**
 * Stored Responses across a PostgreSQL outage: a response is reported stored (`store: true` in a
 * non-stream body or a stream's terminal event) only when its row exists. The test runs its own
 * PostgreSQL server (own-postgres.ts), drives both `storage.onFailure` modes with stream and
 * non-stream requests while it stops the server mid-run and starts it again, and then reads every
 * id that was claimed stored back (GET and `previous_response_id`). What is not stored must be a
 * clean refusal: a 503 with `Retry-After` in OpenAI's envelope, or a stream ending with
 * `response.failed` (`store: false`).
 */
import OpenAI from 'openai';
import { edgeReady, startAgent, startEdge, startSim, stopAll, API_KEY, type EdgeHandle } from './harness';
import { OwnPostgres, havePostgresBinaries } from './own-postgres';
import { sleep } from '@iop/core';

const describeIfPg = havePostgresBinaries() ? describe : describe.skip;

type Outcome =
  | { kind: 'stored'; id: string; stream: boolean }
  | { kind: 'refused'; stream: boolean; status: number; retryAfter: string | null; type: string | undefined }
  | { kind: 'failed-in-band'; stream: boolean; store: unknown; message: string };

/** The Response's `store` field (sent by the Responses API; not in openai-node's `Response` type). */
function storeOf(response: OpenAI.Responses.Response): unknown {
  return (response as unknown as { store?: unknown }).store;
}

async function nonStream(client: OpenAI): Promise<Outcome> {
  try {
    const response = await client.responses.create({ model: 'sim-model', input: 'hi' });
    if (storeOf(response) !== true)
      throw new Error(`a 200 that was not stored must say so, and only for a size limit: ${JSON.stringify(response)}`);
    return { kind: 'stored', id: response.id, stream: false };
  } catch (error) {
    if (!(error instanceof OpenAI.APIError)) throw error;
    const type = (error.error as { type?: string } | undefined)?.type;
    return {
      kind: 'refused',
      stream: false,
      status: error.status ?? 0,
      retryAfter: error.headers?.get('retry-after') ?? null,
      type,
    };
  }
}

async function streamed(client: OpenAI): Promise<Outcome> {
  try {
    const stream = await client.responses.create({ model: 'sim-model', input: 'hi', stream: true });
    let terminal: OpenAI.Responses.ResponseStreamEvent | undefined;
    for await (const event of stream) {
      if (
        event.type === 'response.completed' ||
        event.type === 'response.incomplete' ||
        event.type === 'response.failed'
      )
        terminal = event;
    }
    if (terminal === undefined) throw new Error('a stream ended without its terminal event');
    const response = (terminal as { response: OpenAI.Responses.Response }).response;
    if (terminal.type === 'response.failed')
      return { kind: 'failed-in-band', stream: true, store: storeOf(response), message: response.error?.message ?? '' };
    if (storeOf(response) !== true) throw new Error(`a completed stream not stored: ${JSON.stringify(response)}`);
    return { kind: 'stored', id: response.id, stream: true };
  } catch (error) {
    if (!(error instanceof OpenAI.APIError)) throw error;
    const type = (error.error as { type?: string } | undefined)?.type;
    return {
      kind: 'refused',
      stream: true,
      status: error.status ?? 0,
      retryAfter: error.headers?.get('retry-after') ?? null,
      type,
    };
  }
}

describeIfPg('Responses store outage (own PostgreSQL, stopped mid-run)', () => {
  let pg: OwnPostgres;
  const edges: Record<'open' | 'closed', EdgeHandle> = {} as Record<'open' | 'closed', EdgeHandle>;

  beforeAll(async () => {
    pg = await OwnPostgres.create();
    // ~10 tokens at 30 ms: requests are in flight when the server stops, so some fail at the write.
    const sim = await startSim(['--models', 'sim-model', '--output-tokens', '10', '--itl-ms', '30']);
    for (const mode of ['open', 'closed'] as const) {
      edges[mode] = await startEdge({
        env: {
          IOP_STORAGE_POSTGRES_URL: pg.url,
          IOP_STORAGE_POSTGRES_SCHEMA: `outage_${mode}`,
          IOP_STORAGE_ON_FAILURE: mode,
        },
      });
    }
    await startAgent({
      tunnelPort: edges.open.tunnelPort,
      id: 'agent-outage',
      backendUrl: sim.url,
      args: ['--edge', `http://127.0.0.1:${edges.open.tunnelPort},http://127.0.0.1:${edges.closed.tunnelPort}`],
    });
    await edgeReady(edges.open);
    await edgeReady(edges.closed);
  }, 90_000);

  afterAll(async () => {
    await stopAll();
    await pg?.destroy();
  });

  it('claims store only for rows that exist, in stream and non-stream, failing open and closed; every claimed id is retrievable after the restart', async () => {
    const clients = {
      open: new OpenAI({ apiKey: API_KEY, baseURL: edges.open.baseURL, maxRetries: 0, timeout: 30_000 }),
      closed: new OpenAI({ apiKey: API_KEY, baseURL: edges.closed.baseURL, maxRetries: 0, timeout: 30_000 }),
    };
    const outcomes: Record<'open' | 'closed', Outcome[]> = { open: [], closed: [] };
    let running = true;
    // Four workers per edge, alternating stream and non-stream, until the outage is over.
    const workers = (['open', 'closed'] as const).flatMap((mode) =>
      [0, 1, 2, 3].map(async (worker) => {
        for (let i = 0; running; i++)
          outcomes[mode].push(await ((i + worker) % 2 === 0 ? nonStream(clients[mode]) : streamed(clients[mode])));
      }),
    );
    await sleep(1_500);
    await pg.stop();
    await sleep(4_000);
    await pg.start();
    await sleep(2_500);
    running = false;
    await Promise.all(workers);

    for (const mode of ['open', 'closed'] as const) {
      const all = outcomes[mode];
      const stored = all.filter((outcome) => outcome.kind === 'stored');
      const refused = all.filter((outcome) => outcome.kind === 'refused');
      const inBand = all.filter((outcome) => outcome.kind === 'failed-in-band');
      // The outage was seen, in both shapes, and so was the recovery.
      expect(refused.filter((outcome) => !outcome.stream).length).toBeGreaterThan(0);
      expect(refused.filter((outcome) => outcome.stream).length + inBand.length).toBeGreaterThan(0);
      expect(stored.filter((outcome) => outcome.stream).length).toBeGreaterThan(2);
      expect(stored.filter((outcome) => !outcome.stream).length).toBeGreaterThan(2);
      for (const outcome of refused) {
        expect(outcome).toMatchObject({ status: 503, retryAfter: '1', type: 'server_error' });
      }
      for (const outcome of inBand) {
        expect(outcome.store).toBe(false);
        expect(outcome.message).toMatch(/Responses store is unavailable/);
      }
      // Every id claimed stored exists, on the edge's own schema, now that the server is back.
      for (const outcome of stored) {
        if (outcome.kind !== 'stored') continue;
        const got = await fetch(`${edges[mode].baseURL}/responses/${outcome.id}`, {
          headers: { authorization: `Bearer ${API_KEY}` },
        });
        expect({ id: outcome.id, status: got.status }).toEqual({ id: outcome.id, status: 200 });
      }
      const last = stored.at(-1) as { id: string };
      const next = await clients[mode].responses.create({
        model: 'sim-model',
        input: 'and then?',
        previous_response_id: last.id,
      });
      expect(next.previous_response_id).toBe(last.id);
      expect(storeOf(next)).toBe(true);
    }
  }, 120_000);
});
