/**
 * Config reload (SIGHUP, or a change of the config file with `--watch-config`) without dropping a
 * stream. Reloadable settings take effect for the next request: client API keys (`apiKeys`),
 * agent join tokens (`joinTokens`, checked at each Register; connected agents stay), admin keys
 * (`adminKeys`), the stream gate (`gate`), `logLevel`, and the per-request knobs `maxAttempts`,
 * `runOpenTimeoutMs`, `firstByteTimeoutMs`, `shutdownDeadlineMs`. Everything else (listen
 * addresses and ports, TLS files, `maxBodyBytes`, `heartbeatIntervalMs`, `responsesStore`) needs a
 * restart: a change there is reported in `restartRequired` and the running value is kept.
 *
 * The swap is atomic for a request: the new config and gate registry are built and validated
 * first, then assigned to the EdgeContext in one synchronous step. Requests in flight keep the
 * gate they started with.
 */
import { isDeepStrictEqual } from 'node:util';
import type { EdgeConfig } from '../config.js';
import type { EdgeContext } from '../edge-context.js';
import type { GateRegistry } from '../gate/gate-registry.js';

/** Keys whose new value is applied by a reload. */
export const RELOADABLE_KEYS = ['apiKeys', 'joinTokens', 'adminKeys', 'gate', 'logLevel', 'maxAttempts', 'runOpenTimeoutMs', 'firstByteTimeoutMs', 'shutdownDeadlineMs'] as const;

type ReloadableKey = (typeof RELOADABLE_KEYS)[number];

export interface ReloadResult {
  /** Reloadable settings whose value changed (now applied). */
  changed: ReloadableKey[];
  /** Settings that changed but need a restart (ignored; the running value stays). */
  restartRequired: string[];
}

/**
 * Applies `next` to the running edge.
 * @param buildGates builds the gate registry of a gate section; throws (IopError/ConfigError) on a bad one.
 * @throws whatever `buildGates` throws — then nothing has changed.
 */
/** `pool.retry.maxAttempts` follows the top-level `maxAttempts` (reloadable): not a pool change of its own. */
function comparable(key: keyof EdgeConfig, value: unknown): unknown {
  if (key !== 'pool' || typeof value !== 'object' || value === null) return value;
  const pool = value as { retry?: Record<string, unknown> };
  return { ...pool, retry: { ...pool.retry, maxAttempts: undefined } };
}

export function applyConfigReload(edge: EdgeContext, next: EdgeConfig, buildGates: (section: EdgeConfig['gate']) => GateRegistry): ReloadResult {
  const current = edge.config;
  const changed = RELOADABLE_KEYS.filter((key) => !isDeepStrictEqual(current[key], next[key]));
  const restartRequired = (Object.keys(next) as Array<keyof EdgeConfig>).filter(
    (key) => !(RELOADABLE_KEYS as readonly string[]).includes(key) && !isDeepStrictEqual(comparable(key, current[key]), comparable(key, next[key])),
  );
  const gates = changed.includes('gate') ? buildGates(next.gate) : edge.gates;
  const merged: EdgeConfig = { ...current };
  for (const key of RELOADABLE_KEYS) (merged as unknown as Record<string, unknown>)[key] = next[key];
  edge.config = merged;
  edge.gates = gates;
  if (edge.logger.level !== next.logLevel) edge.logger.level = next.logLevel;
  return { changed, restartRequired };
}
