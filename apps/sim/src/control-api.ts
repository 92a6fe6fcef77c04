/**
 * The control API under `/_sim/` (for tests):
 * - `GET /_sim/requests` → `{object:"list", data: RequestRecord[]}` (oldest first); `DELETE` clears it.
 * - `POST /_sim/faults` `{fault, count?, ...knobs}` → `{queued: QueuedFault}`; `GET` lists; `DELETE` clears.
 * - `GET /_sim/stats` → `{requests, inFlight, completed, aborted, faulted, streamBytes, pausedWrites,
 *   completionsInFlight, completionsAborted, queuedFaults, gpu}`; `gpu` is null without a profile, else
 *   `{profile, running, waiting, kvCacheUsage, prefixCacheQueries, prefixCacheHits, numGpuBlocks,
 *   cachedBlocks, evictedBlocks, kvEventBatches}`.
 * - `POST /_sim/kv-events/drop` `{count}`: the next `count` KV event batches leave out of the PUB
 *   stream (kept for replay), as a subscriber past its high-water mark loses them.
 */
import type { SimContext } from './chat-handler.js';
import { sendError, sendJson, type Exchange } from './exchange.js';
import type { RequestRecord } from './request-log.js';

/**
 * The request log as JSON. A recorded body nested too deeply for JSON.stringify (it parsed, but
 * serializing overflows the stack) is replaced by `{"unserializable": reason}` in its record only.
 */
function requestList(records: readonly RequestRecord[]): string {
  try {
    return JSON.stringify({ object: 'list', data: records });
  } catch {
    const data = records.map((record) => {
      try {
        return JSON.stringify(record);
      } catch (error) {
        return JSON.stringify({
          ...record,
          body: { unserializable: error instanceof Error ? error.message : 'cannot serialize' },
        });
      }
    });
    return `{"object":"list","data":[${data.join(',')}]}`;
  }
}

function gpuStats(context: SimContext): Record<string, unknown> | null {
  const gpu = context.gpu;
  if (gpu === undefined) return null;
  return {
    profile: gpu.profile.name,
    timeScale: gpu.timeScale,
    maxNumSeqs: gpu.profile.maxNumSeqs,
    running: gpu.running.size,
    waiting: gpu.waitingCount,
    kvCacheUsage: gpu.kvCacheUsage(),
    prefixCacheQueries: gpu.prefixCache.queriesTokens,
    prefixCacheHits: gpu.prefixCache.hitsTokens,
    numGpuBlocks: gpu.profile.numGpuBlocks,
    cachedBlocks: gpu.prefixCache.size,
    evictedBlocks: gpu.prefixCache.evictedBlocks,
    kvEventBatches: context.kvEvents?.published ?? null,
  };
}

/** Handles a `/_sim/*` request; `body` is the parsed JSON body (or undefined). */
export function handleControl(context: SimContext, exchange: Exchange, path: string, body: unknown): void {
  const method = exchange.req.method;
  switch (`${method} ${path}`) {
    case 'GET /_sim/requests':
      sendJson(exchange, 200, requestList(context.log.list()));
      return;
    case 'DELETE /_sim/requests':
      context.log.clear();
      sendJson(exchange, 200, '{"cleared":true}');
      return;
    case 'GET /_sim/faults':
      sendJson(exchange, 200, JSON.stringify({ object: 'list', data: context.faults.list() }));
      return;
    case 'POST /_sim/faults':
      sendJson(exchange, 200, JSON.stringify({ queued: context.faults.push(body) }));
      return;
    case 'DELETE /_sim/faults':
      context.faults.clear();
      sendJson(exchange, 200, '{"cleared":true}');
      return;
    case 'GET /_sim/stats':
      sendJson(
        exchange,
        200,
        JSON.stringify({
          ...context.log.stats,
          queuedFaults: context.faults.list().reduce((sum, entry) => sum + entry.remaining, 0),
          gpu: gpuStats(context),
        }),
      );
      return;
    case 'POST /_sim/kv-events/drop': {
      const count = (body as { count?: unknown } | undefined)?.count;
      if (context.kvEvents === undefined) sendError(exchange, 404, 'KV events are off (--kv-events-endpoint)');
      else if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 1)
        sendError(exchange, 400, "'count' must be an integer >= 1", 'count');
      else {
        context.kvEvents.dropNext(count);
        sendJson(exchange, 200, JSON.stringify({ dropping: count }));
      }
      return;
    }
    default:
      sendError(exchange, 404, `no control route ${method} ${path}`);
  }
}
