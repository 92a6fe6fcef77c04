/**
 * The agent's cache-aware routing service (docs/decisions/007-cache-aware-routing.md): follows
 * the backend's KV events (`KvEventSubscriber` into `ResidentBlocks`), maps the edge's prefix keys
 * of finished runs to the blocks they occupy (`PrefixResidency`), and reports the changes to every
 * edge (`ResidencyReport` on the Control stream).
 *
 * - After a run (`afterRun`), for each of the assignment's `prefix_keys` not mapped yet (or cut by
 *   evictions since), the backend's `/tokenize` gives the token ids of the body's leading
 *   `messages` (all of them for `messages = 0`) with its `tools`, and `ResidentBlocks.cachedPrefix`
 *   their resident blocks. This runs off the run's path, one call at a time, at most `MAX_PENDING_RUNS` runs
 *   waiting (more are skipped and counted: a key left unmapped only means a cold routing guess).
 * - `BlockRemoved` cuts the keys whose chain held a removed block; `AllBlocksCleared` and a resync
 *   forget all keys, reported as `reset`.
 * - Changes are sent coalesced, every `REPORT_INTERVAL_MS` at most, `MAX_PREFIXES_PER_REPORT`
 *   keys per message; an edge that has just registered the agent gets the whole state (`reset`
 *   and every resident key), since its index starts empty for the new session.
 */
import { create } from '@bufbuild/protobuf';
import { PrefixResidencySchema, ResidencyReportSchema, type ResidencyReport, type RunAssignment } from '@iop/proto';
import type { Logger } from 'pino';
import type { Backend } from '../backends/backend.js';
import type { KvEventsOptions } from '../options.js';
import type { KvEventBatch } from './kv-event-decoder.js';
import { KvEventSubscriber } from './kv-event-subscriber.js';
import { PrefixResidency, type ResidencyDelta } from './prefix-residency.js';
import { ResidentBlocks } from './resident-blocks.js';

/** Changes within this window share one report, ms. */
export const REPORT_INTERVAL_MS = 150;
/** Most keys in one report (the edge refuses a report with more than its own bound, 4 096). */
export const MAX_PREFIXES_PER_REPORT = 1_024;
/** Runs waiting for their keys to be mapped. */
const MAX_PENDING_RUNS = 64;
/** A capability the agent registers with when it follows events: the edge then sends prefix keys. */
export const KV_EVENTS_CAPABILITY = 'kv-events';

export interface KvResidencyOptions {
  events: KvEventsOptions & { endpoint: string };
  backend: Backend;
  logger: Logger;
  /** Sends a report to every edge the agent is registered with. */
  broadcast(report: ResidencyReport): void;
}

interface PendingRun {
  model: string;
  body: Uint8Array;
  keys: Array<{ key: number; messages: number }>;
}

export class KvResidency {
  readonly blocks: ResidentBlocks;
  readonly prefixes: PrefixResidency;
  private readonly subscriber: KvEventSubscriber;
  private readonly queue: PendingRun[] = [];
  private mapping = false;
  private reportTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly abort = new AbortController();
  /** For the logs and tests: runs skipped (queue full), `/tokenize` failures, keys mapped. */
  readonly counts = { skippedRuns: 0, tokenizeFailures: 0, mapped: 0, reports: 0 };

  constructor(private readonly options: KvResidencyOptions) {
    const { events, logger } = options;
    this.blocks = new ResidentBlocks(events.maxBlocks);
    this.prefixes = new PrefixResidency(events.maxPrefixes);
    this.subscriber = new KvEventSubscriber({
      endpoint: events.endpoint,
      ...(events.replayEndpoint === undefined ? {} : { replayEndpoint: events.replayEndpoint }),
      ...(events.topic === '' ? {} : { topic: events.topic }),
      onBatch: (batch) => this.apply(batch),
      onResync: (reason) => {
        logger.info({ reason }, 'kv events: resync, every prefix forgotten');
        this.blocks.clear();
        this.prefixes.clear();
        this.scheduleReport();
      },
      onDropped: (reason, detail) => logger.warn({ reason, detail }, 'kv events: batch dropped'),
    });
  }

  /** Event-stream figures (received, applied, replayed, resyncs, dropped). */
  get eventCounts(): Readonly<KvEventSubscriber['counts']> {
    return this.subscriber.counts;
  }

  start(): void {
    if (this.options.backend.tokenizeChat === undefined) {
      this.options.logger.warn(
        { backend: this.options.backend.kind },
        'kv events: this backend has no /tokenize for chat messages; no prefix will be reported',
      );
    }
    this.subscriber.start();
    this.options.logger.info(
      { endpoint: this.options.events.endpoint, replayEndpoint: this.options.events.replayEndpoint },
      'kv events: subscribed',
    );
  }

  close(): void {
    this.closed = true;
    this.abort.abort();
    clearTimeout(this.reportTimer);
    this.subscriber.close();
  }

  /** A run ended: maps its prefix keys that need it, soon, off the run's path. */
  afterRun(assignment: RunAssignment): void {
    if (this.closed || assignment.prefixKeys.length === 0) return;
    const keys = assignment.prefixKeys
      .map((entry) => ({ key: Number(entry.key), messages: entry.messages }))
      .filter((entry) => Number.isSafeInteger(entry.key) && this.prefixes.needsMapping(entry.key));
    if (keys.length === 0) return;
    if (this.queue.length >= MAX_PENDING_RUNS) {
      this.counts.skippedRuns++;
      return;
    }
    this.queue.push({ model: assignment.model, body: assignment.body, keys });
    void this.drain();
  }

  /**
   * The whole state for an edge that has just registered this agent (the first report resets); empty when nothing is
   * resident.
   */
  snapshotReports(): ResidencyReport[] {
    if (this.prefixes.size === 0) return [];
    return this.prefixes.snapshot(MAX_PREFIXES_PER_REPORT).map(toReport);
  }

  private apply(batch: KvEventBatch): void {
    for (const event of batch.events) {
      if (event.type === 'stored') this.blocks.stored(event.hashes, event.parent, event.tokenIds, event.blockSize);
      else if (event.type === 'removed') {
        this.blocks.removed(event.hashes);
        this.prefixes.removed(event.hashes);
      } else {
        this.blocks.clear();
        this.prefixes.clear();
      }
    }
    if (this.prefixes.changed) this.scheduleReport();
  }

  private async drain(): Promise<void> {
    if (this.mapping) return;
    this.mapping = true;
    try {
      for (let run = this.queue.shift(); run !== undefined && !this.closed; run = this.queue.shift())
        await this.map(run);
    } finally {
      this.mapping = false;
    }
  }

  private async map(run: PendingRun): Promise<void> {
    const tokenize = this.options.backend.tokenizeChat;
    if (tokenize === undefined) return;
    let messages: unknown[];
    let tools: unknown;
    try {
      const parsed = JSON.parse(
        Buffer.from(run.body.buffer, run.body.byteOffset, run.body.byteLength).toString('utf8'),
      ) as {
        messages?: unknown;
        tools?: unknown;
      };
      if (!Array.isArray(parsed.messages)) return;
      messages = parsed.messages;
      tools = Array.isArray(parsed.tools) && parsed.tools.length > 0 ? parsed.tools : undefined;
    } catch {
      return;
    }
    for (const { key, messages: count } of run.keys) {
      const whole = count === 0 || count >= messages.length;
      try {
        // The prompt as the chat template built it: the tools, and the assistant turn's opening only after the whole
        // conversation.
        const tokens = await tokenize.call(
          this.options.backend,
          run.model,
          whole ? messages : messages.slice(0, count),
          {
            tools,
            addGenerationPrompt: whole,
            signal: this.abort.signal,
          },
        );
        this.prefixes.mapped(key, this.blocks.cachedPrefix(tokens), this.blocks.blockSize ?? 0);
        this.counts.mapped++;
      } catch (error) {
        if (this.closed) return;
        this.counts.tokenizeFailures++;
        this.options.logger.debug({ err: error }, 'kv events: /tokenize failed, prefix left unmapped');
      }
    }
    if (this.prefixes.changed) this.scheduleReport();
  }

  private scheduleReport(): void {
    if (this.reportTimer !== undefined || this.closed) return;
    this.reportTimer = setTimeout(() => {
      this.reportTimer = undefined;
      for (
        let delta = this.prefixes.takeReport(MAX_PREFIXES_PER_REPORT);
        delta !== undefined;
        delta = this.prefixes.takeReport(MAX_PREFIXES_PER_REPORT)
      ) {
        this.counts.reports++;
        this.options.broadcast(toReport(delta));
      }
    }, REPORT_INTERVAL_MS);
    this.reportTimer.unref();
  }
}

function toReport(delta: ResidencyDelta): ResidencyReport {
  return create(ResidencyReportSchema, {
    reset: delta.reset,
    prefixes: delta.prefixes.map((change) =>
      create(PrefixResidencySchema, { key: BigInt(change.key), cachedTokens: change.cachedTokens }),
    ),
  });
}
