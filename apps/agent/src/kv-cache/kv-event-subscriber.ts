/**
 * Follows a backend's KV-event stream (vLLM `--kv-events-config`, SGLang the same): a ZMQ SUB on
 * its publisher's endpoint, and, where it has one, a DEALER on its replay endpoint
 * (vllm/distributed/kv_events.py `ZmqEventPublisher`; examples/online_serving/kv_events_subscriber.py).
 *
 * Messages are `[topic, seq, payload]`: `seq` an 8-byte big-endian batch number from 0. Batches
 * reach `onBatch` in sequence order, each once:
 * - a gap (`seq` beyond the next expected) is filled from the replay socket: the request is the
 *   first missing number as 8 bytes big-endian, the answer `[seq, payload]` per buffered batch and
 *   `[-1, empty]` at the end; batches that arrive meanwhile wait behind it;
 * - a gap the replay cannot fill (no replay endpoint, the engine's buffer no longer holds it, no
 *   answer within `replayTimeoutMs`) is a resync: `onResync` (the caller forgets what it knew,
 *   since nothing can say which blocks went meanwhile) and the stream goes on from there;
 * - a lost connection to the publisher is a resync once it is back (`reconnect`): the publisher
 *   drops what it sends meanwhile, and an engine that restarted numbers its batches from 0 again,
 *   which sequence numbers alone cannot always tell from a gap;
 * - a number below the expected one (an engine restart seen without a disconnect) is a resync
 *   too (`restart`); a repeated number is ignored;
 * - a message that is not three frames, or whose payload does not decode, is dropped and counted
 *   (`onDropped`) and never stops the stream.
 * The topic filter is `topic` (default: every topic).
 */
import { Dealer, Subscriber } from 'zeromq';
import {
  decodeKvEventBatch,
  KvEventDecodeError,
  DEFAULT_DECODE_LIMITS,
  type DecodeLimits,
  type KvEventBatch,
  type DecodeFailure,
} from './kv-event-decoder.js';

export type ResyncReason = 'gap' | 'restart' | 'reconnect' | 'replay_timeout';

export interface KvEventSubscriberOptions {
  endpoint: string;
  replayEndpoint?: string;
  topic?: string;
  limits?: DecodeLimits;
  replayTimeoutMs?: number;
  onBatch(batch: KvEventBatch, seq: bigint): void;
  onResync(reason: ResyncReason): void;
  onDropped(reason: DecodeFailure | 'frames', detail: string): void;
}

const END_SEQ = -1n;

function seqBuffer(seq: bigint): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeBigInt64BE(seq);
  return bytes;
}

export class KvEventSubscriber {
  private readonly sub = new Subscriber();
  private expected: bigint | undefined;
  private closed = false;
  /** Batches received, applied and replayed, for the metrics. */
  readonly counts = { received: 0, applied: 0, replayed: 0, resyncs: 0, dropped: 0 };

  constructor(private readonly options: KvEventSubscriberOptions) {}

  /** Connects and follows the stream until `close` (connecting does not wait for the publisher). */
  start(): void {
    this.sub.connect(this.options.endpoint);
    if (this.options.topic === undefined || this.options.topic === '') this.sub.subscribe();
    else this.sub.subscribe(this.options.topic);
    void this.run();
    void this.watchConnection();
  }

  close(): void {
    this.closed = true;
    this.sub.close();
  }

  private async run(): Promise<void> {
    try {
      for await (const frames of this.sub) {
        if (this.closed) return;
        await this.receive(frames);
      }
    } catch (error) {
      if (!this.closed) this.options.onDropped('frames', `subscriber stopped: ${(error as Error).message}`);
    }
  }

  private async watchConnection(): Promise<void> {
    try {
      for await (const event of this.sub.events) {
        if (this.closed) return;
        // What was known is stale once the link dropped; the numbering may start over too.
        if (event.type === 'disconnect' && this.expected !== undefined) {
          this.expected = undefined;
          this.resync('reconnect');
        }
      }
    } catch {
      // The socket was closed.
    }
  }

  private async receive(frames: Buffer[]): Promise<void> {
    if (frames.length !== 3 || frames[1]!.length !== 8) {
      this.drop('frames', `a message of ${frames.length} frames`);
      return;
    }
    this.counts.received++;
    const seq = frames[1]!.readBigInt64BE();
    const expected = this.expected;
    if (expected !== undefined && seq < expected) {
      // A repeat of the last numbers is a duplicate; numbers that start over are a restarted engine.
      if (seq === 0n || seq < expected - 1n) {
        this.resync('restart');
        this.expected = undefined;
      } else return;
    } else if (expected !== undefined && seq > expected) {
      await this.fillGap(expected, seq);
    }
    this.apply(seq, frames[2]!);
  }

  private apply(seq: bigint, payload: Buffer): void {
    this.expected = seq + 1n;
    let batch: KvEventBatch;
    try {
      batch = decodeKvEventBatch(payload, this.options.limits ?? DEFAULT_DECODE_LIMITS);
    } catch (error) {
      if (error instanceof KvEventDecodeError) {
        this.drop(error.reason, error.message);
        return;
      }
      throw error;
    }
    this.counts.applied++;
    this.options.onBatch(batch, seq);
  }

  /** Applies the batches in [from, to) from the replay socket, or resyncs. */
  private async fillGap(from: bigint, to: bigint): Promise<void> {
    if (this.options.replayEndpoint === undefined) {
      this.resync('gap');
      return;
    }
    const dealer = new Dealer({ receiveTimeout: this.options.replayTimeoutMs ?? 2_000, linger: 0 });
    try {
      dealer.connect(this.options.replayEndpoint);
      await dealer.send([Buffer.alloc(0), seqBuffer(from)]);
      let next = from;
      for (;;) {
        const reply = await dealer.receive();
        const seqFrame = reply.length === 3 ? reply[1]! : reply[0]!;
        const payload = reply.length === 3 ? reply[2]! : reply[1];
        if (seqFrame === undefined || seqFrame.length !== 8 || payload === undefined)
          throw new Error('a replay reply that is not [seq, payload]');
        const seq = seqFrame.readBigInt64BE();
        if (seq === END_SEQ) break;
        if (seq < next) continue;
        if (seq > next) {
          // The engine's buffer no longer holds what is missing.
          this.resync('gap');
          return;
        }
        if (seq >= to) break;
        this.counts.replayed++;
        this.apply(seq, payload);
        next = seq + 1n;
      }
      if (next < to) this.resync('gap');
    } catch {
      this.resync('replay_timeout');
    } finally {
      dealer.close();
    }
  }

  private resync(reason: ResyncReason): void {
    this.counts.resyncs++;
    this.options.onResync(reason);
  }

  private drop(reason: DecodeFailure | 'frames', detail: string): void {
    this.counts.dropped++;
    this.options.onDropped(reason, detail);
  }
}
