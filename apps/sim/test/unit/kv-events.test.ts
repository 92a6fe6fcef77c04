/**
 * The sim's KV events over real ZMQ sockets, decoded as vLLM's subscribers decode them
 * (examples/online_serving/kv_events_subscriber.py): multipart [topic, seq, msgpack batch], and the
 * replay socket's [seq, payload] … [-1, empty] answer.
 */
import { decode } from '@msgpack/msgpack';
import { Dealer, Subscriber } from 'zeromq';
import { parseCli } from '../../src/index.js';
import { postRaw, startFixture, type Fixture } from './sim-fixture.js';

type Batch = { seq: bigint; topic: string; body: unknown };

/** Subscribes and collects batches until `close`. */
function subscribe(endpoint: string): {
  batches: Batch[];
  next(count: number, timeoutMs?: number): Promise<Batch[]>;
  close(): void;
} {
  const socket = new Subscriber();
  socket.connect(endpoint);
  socket.subscribe();
  const batches: Batch[] = [];
  void (async () => {
    try {
      for await (const [topic, seq, payload] of socket)
        batches.push({ topic: topic!.toString(), seq: seq!.readBigInt64BE(), body: decode(payload!) });
    } catch {
      // closed
    }
  })();
  return {
    batches,
    async next(count, timeoutMs = 5_000) {
      const start = Date.now();
      while (batches.length < count) {
        if (Date.now() - start > timeoutMs)
          throw new Error(`${batches.length} of ${count} batches within ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      return batches.slice(0, count);
    },
    close: () => socket.close(),
  };
}

/** A ZMQ subscriber's slow joiner: publish until the subscription is live. */
async function untilSubscribed(fixture: Fixture, sub: ReturnType<typeof subscribe>, prompt: string): Promise<void> {
  for (let i = 0; i < 50 && sub.batches.length === 0; i++) {
    await chat(fixture, `${prompt} warm-up ${i} ${'filler '.repeat(20)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  if (sub.batches.length === 0) throw new Error('no batch reached the subscriber');
}

async function chat(fixture: Fixture, content: string): Promise<void> {
  await fixture.client.chat.completions.create({
    model: 'sim-model',
    max_tokens: 2,
    messages: [{ role: 'user', content }],
  });
}

const PROMPT = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' '); // 40 tokens: 2 full blocks of 16

describe('KV events (array format, the default)', () => {
  let fixture: Fixture;
  beforeAll(async () => {
    fixture = await startFixture({
      profile: 'gpu-h100-8b',
      timeScale: 0.01,
      kvEvents: { endpoint: 'tcp://127.0.0.1:*', replayEndpoint: 'tcp://127.0.0.1:*' },
    });
  });
  afterAll(() => fixture.sim.close());

  it('publishes BlockStored with the prompt blocks tokenize names, and replays every batch from a sequence number', async () => {
    const sub = subscribe(fixture.sim.kvEvents!.endpoint);
    try {
      await untilSubscribed(fixture, sub, 'first');
      const before = sub.batches.length;
      await chat(fixture, PROMPT);
      const [batch] = (await sub.next(before + 1)).slice(before);
      const tokens = (
        JSON.parse(
          (await postRaw(fixture.sim, '/tokenize', { messages: [{ role: 'user', content: PROMPT }] })).text,
        ) as { tokens: number[] }
      ).tokens;
      expect(tokens).toHaveLength(40);
      expect(batch!.topic).toBe('');
      const [ts, events, rank] = batch!.body as [number, unknown[][], number];
      expect(Math.abs(ts - Date.now() / 1000)).toBeLessThan(10);
      expect(rank).toBe(0);
      expect(events).toHaveLength(1);
      const [tag, hashes, parent, tokenIds, blockSize, loraId, medium] = events[0]!;
      expect([tag, parent, blockSize, loraId, medium]).toEqual(['BlockStored', null, 16, null, 'GPU']);
      expect(hashes).toHaveLength(2);
      expect(tokenIds).toEqual(tokens.slice(0, 32));
      // Sequence numbers count batches from 0 without a gap.
      expect(sub.batches.map((entry) => entry.seq)).toEqual(
        sub.batches.map((_, i) => BigInt(sub.batches[0]!.seq) + BigInt(i)),
      );

      // The same prompt again hits its blocks: nothing new to store, no batch.
      const published = sub.batches.length;
      await chat(fixture, PROMPT);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(sub.batches.length).toBe(published);

      const dealer = new Dealer();
      dealer.connect(fixture.sim.kvEvents!.replayEndpoint!);
      const start = Buffer.alloc(8);
      start.writeBigInt64BE(batch!.seq);
      await dealer.send([Buffer.alloc(0), start]);
      const replayed: bigint[] = [];
      for (;;) {
        const [, seq, payload] = await dealer.receive();
        const number = seq!.readBigInt64BE();
        if (number === -1n) {
          expect(payload!.length).toBe(0);
          break;
        }
        replayed.push(number);
        if (number === batch!.seq) expect(decode(payload!)).toEqual(batch!.body);
      }
      dealer.close();
      expect(replayed[0]).toBe(batch!.seq);
      expect(replayed.at(-1)).toBe(sub.batches.at(-1)!.seq);
    } finally {
      sub.close();
    }
  });

  it('publishes AllBlocksCleared on POST /reset_prefix_cache', async () => {
    const sub = subscribe(fixture.sim.kvEvents!.endpoint);
    try {
      await untilSubscribed(fixture, sub, 'reset');
      const before = sub.batches.length;
      expect((await postRaw(fixture.sim, '/reset_prefix_cache', {})).status).toBe(200);
      const [batch] = (await sub.next(before + 1)).slice(before);
      expect((batch!.body as [number, unknown[][]])[1]).toEqual([['AllBlocksCleared']]);
    } finally {
      sub.close();
    }
  });
});

describe('KV events (map format) and eviction', () => {
  let fixture: Fixture;
  beforeAll(async () => {
    // 4 blocks of 16 tokens: a second 40-token prompt evicts the first one's free blocks.
    fixture = await startFixture({
      profile: 'gpu-h100-8b',
      profileOverrides: { numGpuBlocks: 4 },
      timeScale: 0.01,
      kvEvents: { endpoint: 'tcp://127.0.0.1:*', format: 'map', topic: 'kv' },
    });
  });
  afterAll(() => fixture.sim.close());

  it('encodes tagged maps and tells evictions as BlockRemoved', async () => {
    const sub = subscribe(fixture.sim.kvEvents!.endpoint);
    try {
      await untilSubscribed(fixture, sub, 'map');
      await chat(fixture, PROMPT);
      await chat(fixture, `${PROMPT} other`.replace('word0', 'other0'));
      await new Promise((resolve) => setTimeout(resolve, 100));
      const events = sub.batches.flatMap((batch) => (batch.body as { events: Array<Record<string, unknown>> }).events);
      expect(sub.batches[0]!.topic).toBe('kv');
      expect(sub.batches[0]!.body).toMatchObject({ data_parallel_rank: 0 });
      const stored = events.filter((event) => event.type === 'BlockStored');
      const removed = events.filter((event) => event.type === 'BlockRemoved');
      expect(stored.at(-1)).toMatchObject({ block_size: 16, medium: 'GPU', parent_block_hash: null });
      expect(removed.length).toBeGreaterThan(0);
      expect(removed[0]).toMatchObject({ medium: 'GPU' });
      // Replaying the events gives at most the cache's 4 blocks.
      const cached = new Set<unknown>();
      for (const event of events) {
        if (event.type === 'BlockStored') for (const hash of event.block_hashes as unknown[]) cached.add(hash);
        if (event.type === 'BlockRemoved') for (const hash of event.block_hashes as unknown[]) cached.delete(hash);
      }
      expect(cached.size).toBeLessThanOrEqual(4);
      const stats = (await (await fetch(`${fixture.sim.url}/_sim/stats`)).json()) as {
        gpu: { cachedBlocks: number; evictedBlocks: number };
      };
      expect(stats.gpu.cachedBlocks).toBe(cached.size);
      expect(stats.gpu.evictedBlocks).toBe(
        removed.reduce((sum, event) => sum + (event.block_hashes as unknown[]).length, 0),
      );
    } finally {
      sub.close();
    }
  });
});

describe('KV event flags', () => {
  it('parses the endpoints and refuses them without a profile or with a bad format', () => {
    const parsed = parseCli([
      '--profile',
      'gpu-a10g-7b',
      '--kv-events-endpoint',
      'tcp://127.0.0.1:5557',
      '--kv-events-replay-endpoint',
      'tcp://127.0.0.1:5558',
      '--kv-events-format',
      'map',
    ]);
    expect(parsed).toMatchObject({
      options: {
        profile: 'gpu-a10g-7b',
        kvEvents: { endpoint: 'tcp://127.0.0.1:5557', replayEndpoint: 'tcp://127.0.0.1:5558', format: 'map' },
      },
    });
    expect(() => parseCli(['--kv-events-endpoint', 'tcp://127.0.0.1:5557'])).toThrow(
      '--kv-events-endpoint needs --profile',
    );
    expect(() =>
      parseCli(['--profile', 'gpu-h100-8b', '--kv-events-endpoint', 'tcp://x:1', '--kv-events-format', 'json']),
    ).toThrow("--kv-events-format: expected array or map, got 'json'");
    expect(() => parseCli(['--profile', 'gpu-h100-8b', '--kv-events-topic', 'kv'])).toThrow(
      '--kv-events-topic needs --kv-events-endpoint',
    );
  });
});
