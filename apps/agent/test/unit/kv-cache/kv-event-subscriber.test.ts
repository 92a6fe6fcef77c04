/**
 * The agent's subscriber against the sim's real ZMQ publisher (vLLM's wire format): batches in
 * order, a dropped batch repaired from the replay socket, a gap without replay and an engine
 * restart as resyncs, garbage dropped and counted.
 */
import { encode } from '@msgpack/msgpack';
import { Publisher } from 'zeromq';
import OpenAI from 'openai';
import { startSim, type SimServer } from '../../../../sim/src/index.js';
import { KvEventSubscriber, type ResyncReason } from '../../../src/kv-cache/kv-event-subscriber.js';
import { ResidentBlocks } from '../../../src/kv-cache/resident-blocks.js';

interface Follower {
  subscriber: KvEventSubscriber;
  index: ResidentBlocks;
  resyncs: ResyncReason[];
  dropped: string[];
}

function follow(endpoint: string, replayEndpoint?: string): Follower {
  const index = new ResidentBlocks(100_000);
  const resyncs: ResyncReason[] = [];
  const dropped: string[] = [];
  const subscriber = new KvEventSubscriber({
    endpoint,
    ...(replayEndpoint === undefined ? {} : { replayEndpoint }),
    replayTimeoutMs: 1_000,
    onBatch: (batch) => {
      for (const event of batch.events) {
        if (event.type === 'stored') index.stored(event.hashes, event.parent, event.tokenIds, event.blockSize);
        else if (event.type === 'removed') index.removed(event.hashes);
        else index.clear();
      }
    },
    onResync: (reason) => {
      resyncs.push(reason);
      index.clear();
    },
    onDropped: (reason, detail) => dropped.push(`${reason}: ${detail}`),
  });
  subscriber.start();
  return { subscriber, index, resyncs, dropped };
}

const words = (tag: string, count: number) => Array.from({ length: count }, (_, i) => `${tag}${i}`).join(' ');

async function chat(sim: SimServer, content: string): Promise<void> {
  const client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'k', maxRetries: 0 });
  await client.chat.completions.create({ model: 'sim-model', max_tokens: 2, messages: [{ role: 'user', content }] });
}

async function until(predicate: () => boolean, timeoutMs = 5_000): Promise<void> {
  const start = Date.now();
  while (!predicate()) {
    if (Date.now() - start > timeoutMs) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Sends prompts until the subscriber has applied one batch (ZMQ's slow joiner). */
async function joined(sim: SimServer, follower: Follower): Promise<void> {
  for (let i = 0; follower.subscriber.counts.applied === 0; i++) {
    if (i > 100) throw new Error('the subscriber never joined');
    await chat(sim, words(`join${i}-`, 20));
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const tokenize = async (sim: SimServer, content: string) =>
  (
    (await (
      await fetch(`${sim.url}/tokenize`, {
        method: 'POST',
        body: JSON.stringify({ messages: [{ role: 'user', content }] }),
      })
    ).json()) as {
      tokens: number[];
    }
  ).tokens;

describe('KvEventSubscriber', () => {
  let sim: SimServer;
  afterEach(() => sim?.close());

  it('repairs dropped batches from the replay socket and matches the engine block for block', async () => {
    sim = await startSim({
      port: 0,
      profile: 'gpu-h100-8b',
      timeScale: 0.01,
      kvEvents: { endpoint: 'tcp://127.0.0.1:*', replayEndpoint: 'tcp://127.0.0.1:*' },
    });
    const follower = follow(sim.kvEvents!.endpoint, sim.kvEvents!.replayEndpoint);
    try {
      await joined(sim, follower);
      await fetch(`${sim.url}/_sim/kv-events/drop`, { method: 'POST', body: JSON.stringify({ count: 2 }) });
      const prompts = ['a', 'b', 'c'].map((tag) => words(tag, 40));
      for (const prompt of prompts) await chat(sim, prompt);
      await until(() => follower.subscriber.counts.replayed === 2 && follower.subscriber.counts.applied >= 4);
      expect(follower.resyncs).toEqual([]);
      // 40 tokens: 2 blocks of 16
      for (const prompt of prompts) expect(follower.index.cachedPrefix(await tokenize(sim, prompt))).toHaveLength(2);
    } finally {
      follower.subscriber.close();
    }
  });

  it('resyncs on a gap it cannot fill and when the engine restarts (its connection dropped), and forgets what it knew', async () => {
    sim = await startSim({
      port: 0,
      profile: 'gpu-h100-8b',
      timeScale: 0.01,
      kvEvents: { endpoint: 'tcp://127.0.0.1:*' },
    });
    const endpoint = sim.kvEvents!.endpoint;
    const follower = follow(endpoint);
    try {
      await joined(sim, follower);
      await fetch(`${sim.url}/_sim/kv-events/drop`, { method: 'POST', body: JSON.stringify({ count: 1 }) });
      await chat(sim, words('lost', 40));
      await chat(sim, words('seen', 40));
      await until(() => follower.resyncs.length === 1);
      expect(follower.resyncs).toEqual(['gap']);
      expect(follower.index.cachedPrefix(await tokenize(sim, words('seen', 40)))).toHaveLength(2);

      // The engine restarts on the same endpoint: its numbers start again at 0.
      await sim.close();
      for (let attempt = 0; ; attempt++) {
        try {
          sim = await startSim({ port: 0, profile: 'gpu-h100-8b', timeScale: 0.01, kvEvents: { endpoint } });
          break;
        } catch (error) {
          // ZMQ releases a closed socket's port from its I/O thread, a moment later.
          if (attempt > 50) throw error;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
      for (let i = 0; follower.resyncs.length < 2; i++) {
        if (i > 100)
          throw new Error(
            `no resync after the restart: ${JSON.stringify({ counts: follower.subscriber.counts, dropped: follower.dropped, resyncs: follower.resyncs })}`,
          );
        await chat(sim, words(`after${i}-`, 20));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(follower.resyncs).toEqual(['gap', 'reconnect']);
      expect(follower.index.cachedPrefix(await tokenize(sim, words('seen', 40)))).toEqual([]);
    } finally {
      follower.subscriber.close();
    }
  });

  it('drops and counts messages that are not KV event batches, and goes on', async () => {
    // A broken engine: a publisher of garbage, then of a valid batch.
    const publisher = new Publisher();
    await publisher.bind('tcp://127.0.0.1:*');
    sim = await startSim({ port: 0 }); // unused; keeps afterEach uniform
    const follower = follow(publisher.lastEndpoint!);
    try {
      const seq = (n: number) => {
        const bytes = Buffer.alloc(8);
        bytes.writeBigInt64BE(BigInt(n));
        return bytes;
      };
      // Until the valid batch is applied and both kinds of garbage were seen (a slow joiner loses the first messages).
      const seen = (prefix: string) => follower.dropped.some((entry) => entry.startsWith(prefix));
      for (
        let i = 0;
        follower.subscriber.counts.applied === 0 ||
        !seen('frames: a message of 2 frames') ||
        !seen('malformed: not msgpack');
        i++
      ) {
        if (i > 200)
          throw new Error(
            `not within 200 rounds: ${JSON.stringify({ counts: follower.subscriber.counts, dropped: follower.dropped })}`,
          );
        await publisher.send(['', 'not a seq']);
        await publisher.send(['', seq(i), Buffer.from([0xc1, 0x00])]);
        await publisher.send(['', seq(i + 1000), Buffer.from(encode([1.5, [['AllBlocksCleared']]]))]);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(follower.dropped.some((entry) => entry.startsWith('frames: a message of 2 frames'))).toBe(true);
      expect(follower.dropped.some((entry) => entry.startsWith('malformed: not msgpack'))).toBe(true);
    } finally {
      follower.subscriber.close();
      publisher.close();
    }
  });
});
