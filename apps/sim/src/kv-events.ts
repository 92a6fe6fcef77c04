/**
 * vLLM's KV-cache event stream, as `--kv-events-config '{"enable_kv_cache_events": true,
 * "publisher": "zmq", "endpoint": "tcp://*:5557", "replay_endpoint": "tcp://*:5558"}'` publishes
 * it (vllm/distributed/kv_events.py `ZmqEventPublisher`; SGLang publishes the same format):
 * - a ZMQ PUB socket sends one multipart message per batch: `[topic, seq, payload]`, `seq` the
 *   batch's sequence number as 8 bytes big-endian (0, 1, 2, … from start), `payload` the msgpack
 *   `KVEventBatch`;
 * - a ZMQ ROUTER socket answers replay requests: a client (REQ or DEALER) sends the first sequence
 *   number it wants as 8 bytes big-endian and receives `[seq, payload]` for every buffered batch
 *   from there, then `[-1 as 8 bytes, empty]`.
 *
 * Two encodings, as vLLM releases differ (`--kv-events-format`):
 * - `array` (msgspec `array_like`): a batch is `[ts, events, data_parallel_rank?]` and an event a
 *   tagged array: `["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id,
 *   medium]`, `["BlockRemoved", block_hashes, medium]`, `["AllBlocksCleared"]`;
 * - `map` (newer releases): `{ts, events, data_parallel_rank}` with events as maps tagged by
 *   `type`: `{type: "BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id,
 *   medium, lora_name}`, …
 * Block hashes are the sim's 53-bit chained hashes (kv-cache.ts) as msgpack integers (vLLM's
 * `ExternalBlockHash` is an integer or bytes); `medium` is "GPU".
 *
 * Events of one event-loop turn (one scheduler step) leave as one batch.
 */
import { encode } from '@msgpack/msgpack';
import { Publisher, Router } from 'zeromq';
import type { KvCacheObserver } from './kv-cache.js';

export type KvEventsFormat = 'array' | 'map';

export interface KvEventsOptions {
  /** PUB endpoint to bind, e.g. `tcp://127.0.0.1:5557` (`*` as the port = any free port). */
  endpoint: string;
  /** ROUTER endpoint for replay, or none. */
  replayEndpoint?: string;
  topic?: string;
  format?: KvEventsFormat;
  /** Batches kept for replay (vLLM's `buffer_steps`, default 10 000). */
  bufferSteps?: number;
  dataParallelRank?: number;
}

type Event =
  | { kind: 'stored'; hashes: readonly number[]; parent: number | null; tokenIds: readonly number[]; blockSize: number }
  | { kind: 'removed'; hashes: readonly number[] }
  | { kind: 'cleared' };

const END_SEQ = Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);

function seqBytes(seq: number): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeBigUInt64BE(BigInt(seq));
  return bytes;
}

function encodeEvent(event: Event, format: KvEventsFormat): unknown {
  if (format === 'array') {
    if (event.kind === 'stored')
      return ['BlockStored', event.hashes, event.parent, event.tokenIds, event.blockSize, null, 'GPU'];
    if (event.kind === 'removed') return ['BlockRemoved', event.hashes, 'GPU'];
    return ['AllBlocksCleared'];
  }
  if (event.kind === 'stored') {
    return {
      type: 'BlockStored',
      block_hashes: event.hashes,
      parent_block_hash: event.parent,
      token_ids: event.tokenIds,
      block_size: event.blockSize,
      lora_id: null,
      medium: 'GPU',
      lora_name: null,
    };
  }
  if (event.kind === 'removed') return { type: 'BlockRemoved', block_hashes: event.hashes, medium: 'GPU' };
  return { type: 'AllBlocksCleared' };
}

/** Publishes the cache's changes; `observer` is what the cache calls. */
export class KvEventPublisher {
  readonly observer: KvCacheObserver;
  private readonly pub = new Publisher({ sendHighWaterMark: 100_000, linger: 0 });
  private readonly router: Router | undefined;
  private readonly buffer: Array<[number, Buffer]> = [];
  private pending: Event[] = [];
  private flushScheduled = false;
  private nextSeq = 0;
  private sending: Promise<void> = Promise.resolve();
  private closed = false;
  /** Batches still to leave out of the PUB socket (kept for replay): a lossy network, for tests. */
  private dropping = 0;
  private readonly topic: Buffer;
  private readonly format: KvEventsFormat;
  private readonly bufferSteps: number;

  private constructor(private readonly options: KvEventsOptions) {
    this.topic = Buffer.from(options.topic ?? '', 'utf8');
    this.format = options.format ?? 'array';
    this.bufferSteps = options.bufferSteps ?? 10_000;
    this.router = options.replayEndpoint === undefined ? undefined : new Router({ linger: 0 });
    this.observer = {
      stored: (hashes, parent, tokenIds, blockSize) =>
        this.add({ kind: 'stored', hashes, parent, tokenIds, blockSize }),
      removed: (hashes) => this.add({ kind: 'removed', hashes }),
      cleared: () => this.add({ kind: 'cleared' }),
    };
  }

  /**
   * Binds the sockets.
   * @throws Error when an endpoint cannot be bound (address in use, bad endpoint).
   */
  static async start(options: KvEventsOptions): Promise<KvEventPublisher> {
    const publisher = new KvEventPublisher(options);
    await publisher.pub.bind(options.endpoint);
    if (publisher.router !== undefined) {
      await publisher.router.bind(options.replayEndpoint!);
      void publisher.serveReplay();
    }
    return publisher;
  }

  /** The bound endpoints (with the port chosen for `*`). */
  get endpoints(): { endpoint: string; replayEndpoint?: string } {
    return {
      endpoint: this.pub.lastEndpoint ?? this.options.endpoint,
      ...(this.router === undefined ? {} : { replayEndpoint: this.router.lastEndpoint ?? '' }),
    };
  }

  /** Batches published so far (the next batch's sequence number). */
  get published(): number {
    return this.nextSeq;
  }

  /**
   * Leaves the next `count` batches out of the PUB stream (they stay in the replay buffer), as a subscriber that fell
   * behind its high-water mark loses them.
   */
  dropNext(count: number): void {
    this.dropping += count;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    await this.sending.catch(() => undefined);
    this.pub.close();
    this.router?.close();
  }

  private add(event: Event): void {
    if (this.closed) return;
    this.pending.push(event);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.pending.length === 0 || this.closed) return;
    const events = this.pending.map((event) => encodeEvent(event, this.format));
    this.pending = [];
    const ts = Date.now() / 1000;
    const rank = this.options.dataParallelRank ?? 0;
    const batch = this.format === 'array' ? [ts, events, rank] : { ts, events, data_parallel_rank: rank };
    const payload = Buffer.from(encode(batch));
    const seq = this.nextSeq++;
    this.buffer.push([seq, payload]);
    if (this.buffer.length > this.bufferSteps) this.buffer.shift();
    if (this.dropping > 0) {
      this.dropping--;
      return;
    }
    // One send at a time, in sequence order (zeromq.js rejects a send while another is pending).
    this.sending = this.sending.then(() => this.pub.send([this.topic, seqBytes(seq), payload])).catch(() => undefined);
  }

  private async serveReplay(): Promise<void> {
    const router = this.router!;
    try {
      for await (const frames of router) {
        if (frames.length !== 3 || frames[2]!.length !== 8) continue; // [identity, empty, start seq]
        const [identity] = frames;
        const start = frames[2]!.readBigInt64BE();
        // A snapshot: batches published meanwhile may push old ones out of the buffer.
        const batches = this.buffer.filter(([seq]) => BigInt(seq) >= start);
        for (const [seq, payload] of batches) await router.send([identity!, Buffer.alloc(0), seqBytes(seq), payload]);
        await router.send([identity!, Buffer.alloc(0), END_SEQ, Buffer.alloc(0)]);
      }
    } catch {
      // The socket was closed.
    }
  }
}
