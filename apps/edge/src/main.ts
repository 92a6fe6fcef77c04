#!/usr/bin/env node
/**
 * `iop-edge`: the iop edge. Flags override environment variables (IOP_*), which override the
 * config file (`--config`, JSON or YAML), which overrides the defaults; flags and variables come
 * from the config schema (config-schema.ts). See README "Configuration".
 *
 * Signals: SIGTERM/SIGINT stop gracefully (streams may finish up to `--shutdown-deadline-ms`; a
 * second signal stops at once). SIGHUP — or a change of the config file with `--watch-config` —
 * reloads the config: the reloadable settings (admin/config-reload.ts, the `pool` section included)
 * apply to the next request;
 * an invalid config is refused with a log line naming the problem and the running one is kept.
 */
import { watch } from 'node:fs';
import { addBindingFlags, iopCommand } from '@iop/core';
import { ConfigError, configFromEnv, configFromFlags, readConfigFile, resolveConfig } from './config.js';
import { EDGE_BINDINGS } from './config-schema.js';
import { applyHeapGrowth, printReadiness, startTracing } from '@iop/core';
import { createLogger } from './logger.js';
import { startEdge } from './server.js';
import { EDGE_VERSION } from './version.js';

/** Short forms of a few flags. */
const SHORT: Record<string, string> = { '--port': '-p' };

const program = iopCommand(
  'iop-edge',
  EDGE_VERSION,
  'iop edge: OpenAI Chat/Responses and Anthropic Messages APIs in front of a pool of node agents.\nEvery setting a.b.c of the config file is also --a-b-c and IOP_A_B_C (docs/configuration.md).',
)
  .option('-c, --config <file>', 'config file, JSON or YAML (env IOP_CONFIG)')
  .option('--watch-config', 'reload the config file when it changes (SIGHUP always reloads)');

/** Each flag (aliases too), from the schema's one table. */
const givenFlags = addBindingFlags(program, EDGE_BINDINGS, SHORT);

async function main(): Promise<void> {
  program.parse();
  const flags = program.opts<Record<string, string | boolean | undefined>>();
  const configPath = (flags.config as string | undefined) ?? (process.env.IOP_CONFIG || undefined);
  const fromFlags = configFromFlags(givenFlags());
  const load = () =>
    resolveConfig(configPath === undefined ? {} : readConfigFile(configPath), configFromEnv(process.env), fromFlags);
  let config;
  try {
    config = load();
  } catch (error) {
    // An invalid setting (flag, environment or config file) is bad usage: exit 2, as every iop command does.
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(2);
  }
  applyHeapGrowth(config.heapGrowthPercent);
  const tracing = startTracing({ serviceName: 'iop-edge', serviceVersion: EDGE_VERSION });
  const logger = createLogger(config.logLevel, undefined, config.logFormat);
  const edge = await startEdge(config, logger);
  // Ready: both ports listen.
  printReadiness({ port: edge.port, tunnelPort: edge.tunnelPort });

  const reload = (trigger: string) => {
    try {
      const result = edge.reload(load());
      if (result.restartRequired.length > 0)
        logger.warn(
          { trigger, settings: result.restartRequired },
          'config reload: these settings need a restart; running values kept',
        );
      logger.info(
        { trigger, changed: result.changed, ...(result.pool === undefined ? {} : { pool: result.pool }) },
        'config reloaded',
      );
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      logger.error({ trigger, error: message }, 'config reload refused: the running config is kept');
    }
  };
  process.on('SIGHUP', () => reload('SIGHUP'));
  if (flags.watchConfig === true && configPath !== undefined) {
    let pending: NodeJS.Timeout | undefined;
    // Editors replace files in several steps: reload once the writes settle.
    watch(configPath, () => {
      clearTimeout(pending);
      pending = setTimeout(() => reload('file change'), 200);
    }).unref();
  }

  let signals = 0;
  const stop = (signal: string) => {
    signals++;
    if (signals > 1) {
      logger.warn({ signal }, 'second signal: stopping now');
      process.exit(1);
    }
    logger.info({ signal }, 'signal received');
    void edge.close().then(async () => {
      await tracing?.shutdown();
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) console.error(error.message);
  else console.error(error);
  process.exit(1);
});
