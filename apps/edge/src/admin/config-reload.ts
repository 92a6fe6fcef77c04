/**
 * Config reload (SIGHUP, or a change of the config file with `--watch-config`) without dropping a stream. Reloadable
 * settings take effect for the next request: client API keys (`apiKeys`, `keys`), agent join tokens (`joinTokens`,
 * checked at each Register; connected agents stay), admin keys (`adminKeys`), the stream gate (`gate`), `logLevel`, the
 * per-request knobs `maxAttempts`, `runAcceptedTimeoutMs`, `firstByteTimeoutMs`, `idleTimeoutMs`, `requestDeadlineMs`,
 * `writeStallTimeoutMs`, `shutdownDeadlineMs`, the price table (`pricing`), and the whole provider pool (`pool`): model
 * groups, aliases, targets and their weights and labels, fallbacks, queues, direct providers, retry, outlier-ejection
 * and prefix-affinity settings (see `ProviderPool.applyReload` for what happens to queued waiters, runs in flight and
 * per-group state). Everything else (listen addresses and ports, TLS files, `maxBodyBytes`, `maxRequestBytesInFlight`,
 * `bodyTimeoutMs`, `heartbeatIntervalMs`, `responsesStore`) needs a restart: a change there is reported in
 * `restartRequired` and the running value is kept.
 *
 * The swap is atomic for a request: the new gate registry and pool state are built and validated first (an invalid
 * section throws and nothing changes), then assigned in one synchronous step. Requests in flight keep the gate and the
 * provider they started with; connected agents stay.
 */
import { isDeepStrictEqual } from 'node:util';
import type { EdgeConfig } from '../config.js';
import type { EdgeContext } from '../edge-context.js';
import type { GateRegistry } from '../gate/gate-registry.js';
import { compactChanges, jsonEqual, type PoolConfigChanges } from '../pool/pool-reload.js';

/** Keys whose new value is applied by a reload. */
export const RELOADABLE_KEYS = [
  'apiKeys',
  'keys',
  'joinTokens',
  'adminKeys',
  'gate',
  'logLevel',
  'maxAttempts',
  'runAcceptedTimeoutMs',
  'firstByteTimeoutMs',
  'idleTimeoutMs',
  'requestDeadlineMs',
  'writeStallTimeoutMs',
  'shutdownDeadlineMs',
  'pool',
  'pricing',
] as const;

type ReloadableKey = (typeof RELOADABLE_KEYS)[number];

export interface ReloadResult {
  /** Reloadable settings whose value changed (now applied). */
  changed: ReloadableKey[];
  /** Settings that changed but need a restart (ignored; the running value stays). */
  restartRequired: string[];
  /** What changed in the pool (non-empty lists only), when the pool section changed. */
  pool?: Partial<PoolConfigChanges>;
}

/**
 * `pool.retry.maxAttempts` follows the top-level `maxAttempts` unless the pool section sets it: a
 * change that only follows `maxAttempts` is applied but not reported as a pool change.
 */
function poolChanged(current: EdgeConfig, next: EdgeConfig): boolean {
  const withoutAttempts = (config: EdgeConfig) => ({
    ...config.pool,
    retry: { ...config.pool.retry, maxAttempts: undefined },
  });
  if (!jsonEqual(withoutAttempts(current), withoutAttempts(next))) return true;
  return current.pool.retry.maxAttempts !== next.pool.retry.maxAttempts && current.maxAttempts === next.maxAttempts;
}

/**
 * Applies `next` to the running edge.
 * @param buildGates builds the gate registry of a gate section; throws (IopError/ConfigError) on a bad one.
 * @throws whatever `buildGates` throws, or ConfigError for an invalid pool section — then nothing
 *   has changed.
 */
export function applyConfigReload(
  edge: EdgeContext,
  next: EdgeConfig,
  buildGates: (section: EdgeConfig['gate']) => GateRegistry,
): ReloadResult {
  const current = edge.config;
  const changed = RELOADABLE_KEYS.filter((key) =>
    key === 'pool' ? poolChanged(current, next) : !isDeepStrictEqual(current[key], next[key]),
  );
  const restartRequired = (Object.keys(next) as Array<keyof EdgeConfig>).filter(
    (key) => !(RELOADABLE_KEYS as readonly string[]).includes(key) && !isDeepStrictEqual(current[key], next[key]),
  );
  const gates = changed.includes('gate') ? buildGates(next.gate) : edge.gates;
  // Last step that may throw: the pool state is built and validated before anything is swapped.
  const pool = jsonEqual(current.pool, next.pool) ? undefined : edge.pool.prepareReload(next.pool);
  const merged: EdgeConfig = { ...current };
  for (const key of RELOADABLE_KEYS)
    (merged as unknown as Record<string, unknown>)[key] =
      key === 'pool' && pool !== undefined ? pool.config : next[key];
  edge.config = merged;
  edge.gates = gates;
  const poolChanges = pool === undefined ? undefined : edge.pool.applyReload(pool);
  if (edge.logger.level !== next.logLevel) edge.logger.level = next.logLevel;
  return {
    changed,
    restartRequired,
    ...(poolChanges === undefined || !changed.includes('pool') ? {} : { pool: compactChanges(poolChanges) }),
  };
}
