/**
 * How far V8 lets a gateway process's old generation grow past its live heap before the next full
 * collection: the `heapGrowthPercent` setting of the edge and the agent.
 *
 * V8 sizes the old generation's next limit as the live size after a full collection times a
 * growing factor it picks between 1.1 and 4 from how much time the process spends collecting
 * (V8 `src/heap/heap-controller.cc`, `MemoryController`). A gateway at saturation allocates fast
 * and keeps little: each request's objects that outlive two young-generation collections are
 * promoted and die soon after, so a factor near 4 lets garbage pile up in the old generation —
 * the edge's resident memory rose from ~90 MiB idle to 190–220 MiB at 64 concurrent streams on a
 * ~22 MiB live heap. A fixed factor (V8's `--heap-growing-percent`) collects that garbage sooner,
 * for more frequent (concurrent, mostly off-thread) marking: README "Performance" gives the
 * measured trade.
 */
import { setFlagsFromString } from 'node:v8';
import { Type } from '@sinclair/typebox';

/** The V8 flag behind the setting; on the `node` command line it takes precedence. */
const V8_FLAG = '--heap-growing-percent';

/** Default of `heapGrowthPercent`: a limit 1.3 × the live heap (README "Performance"). */
export const DEFAULT_HEAP_GROWTH_PERCENT = 30;

/** The `heapGrowthPercent` field of the edge's and the agent's config schemas (restart to change). */
export const HEAP_GROWTH_PERCENT_SCHEMA = Type.Integer({
  minimum: 0,
  maximum: 400,
  default: DEFAULT_HEAP_GROWTH_PERCENT,
  description:
    "Old generation's limit after a full garbage collection, as percent over the live heap (V8's --heap-growing-percent); 0 = V8's adaptive factor (up to 300). Lower holds resident memory down at saturation for more collections.",
});

/**
 * Applies `heapGrowthPercent` to this process: from the next full collection on, the old
 * generation's limit is `(1 + percent / 100)` × the live heap. 0 leaves V8's own adaptive factor.
 * A `--heap-growing-percent` given to `node` itself wins (nothing is changed).
 * @param percent 0–400.
 * @returns the percent in force afterwards, or `undefined` when V8 chooses (0, or set on the command line).
 * @throws RangeError for a percent outside 0–400 or not an integer (the config schema keeps it in range).
 */
export function applyHeapGrowth(percent: number, execArgv: readonly string[] = process.execArgv): number | undefined {
  if (!Number.isInteger(percent) || percent < 0 || percent > 400)
    throw new RangeError(`heapGrowthPercent must be an integer from 0 to 400, got ${percent}`);
  if (execArgv.some((arg) => /^--heap[-_]growing[-_]percent(=|$)/.test(arg))) return undefined;
  // V8 reads the flag each time it sets a new old-generation limit, so setting it at run time takes
  // effect from the next full collection on (unlike the young generation's size, fixed at start).
  setFlagsFromString(`${V8_FLAG}=${percent}`);
  return percent === 0 ? undefined : percent;
}
