#!/usr/bin/env node
/**
 * `iop-edge`: the iop edge. Flags override environment variables (IOP_*), which override the
 * config file (`--config`, JSON), which overrides the defaults. See README "Configuration".
 *
 * Signals: SIGTERM/SIGINT stop gracefully (streams may finish up to `--shutdown-deadline-ms`; a
 * second signal stops at once). SIGHUP — or a change of the config file with `--watch-config` —
 * reloads the config: the reloadable settings (admin/config-reload.ts, the `pool` section included)
 * apply to the next request;
 * an invalid config is refused with a log line naming the problem and the running one is kept.
 */
import { watch } from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import { ConfigError, TIMEOUT_ENV, configFromEnv, readConfigFile, resolveConfig } from './config.js';
import { printReadiness, startTracing } from '@iop/core';
import { createLogger } from './logger.js';
import { startEdge } from './server.js';
import { EDGE_VERSION } from './version.js';

const integer = (value: string): number => {
  const parsed = Number(value);
  if (!Number.isInteger(parsed)) throw new InvalidArgumentError('not an integer');
  return parsed;
};

const program = new Command('iop-edge')
  // Bad usage exits 2 (commander uses 1) on every iop command; --help and --version exit 0.
  .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2))
  .description('iop edge: OpenAI Chat/Responses and Anthropic Messages APIs in front of a pool of node agents')
  .version(EDGE_VERSION)
  .option('-c, --config <file>', 'JSON config file (env IOP_CONFIG)')
  .option('--host <host>', 'HTTP API listen address (env IOP_HOST, default 127.0.0.1)')
  .option('-p, --port <port>', 'HTTP API port, 0 = any free port (env IOP_PORT, default 8080)', integer)
  .option('--tunnel-host <host>', 'tunnel listen address (env IOP_TUNNEL_HOST, default 127.0.0.1)')
  .option('--tunnel-port <port>', 'gRPC tunnel port for agents (env IOP_TUNNEL_PORT, default 8081)', integer)
  .option('--tls-cert <file>', 'PEM certificate: serve the tunnel over TLS (env IOP_TLS_CERT)')
  .option('--tls-key <file>', 'PEM private key for --tls-cert (env IOP_TLS_KEY)')
  .option('--api-keys <keys>', 'comma-separated client API keys (env IOP_API_KEYS)')
  .option('--join-tokens <tokens>', 'comma-separated agent join tokens (env IOP_JOIN_TOKENS)')
  .option('--max-body-bytes <bytes>', 'largest request body, bytes (env IOP_MAX_BODY_BYTES, default 33554432)', integer)
  .option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent (env IOP_LOG_LEVEL, default info)')
  .option('--admin-keys <keys>', 'comma-separated admin API keys for /admin, distinct from client keys (env IOP_ADMIN_KEYS)')
  .option('--shutdown-deadline-ms <ms>', 'on SIGTERM, longest wait for in-flight streams, ms (env IOP_SHUTDOWN_DEADLINE_MS, default 10000)', integer)
  .option('--heartbeat-interval-ms <ms>', 'agents heartbeat this often; one silent for 3 intervals is dropped, ms (env IOP_HEARTBEAT_INTERVAL_MS, default 5000)', integer)
  .option('--run-accepted-timeout-ms <ms>', 'longest wait for an agent to accept an assigned run, ms (env IOP_RUN_ACCEPTED_TIMEOUT_MS, default 5000)', integer)
  .option('--first-byte-timeout-ms <ms>', 'streamed backend requests: longest wait for the first body byte, ms (env IOP_FIRST_BYTE_TIMEOUT_MS, default 120000)', integer)
  .option('--idle-timeout-ms <ms>', 'longest backend silence between body slices, ms (env IOP_IDLE_TIMEOUT_MS, default 60000)', integer)
  .option('--request-deadline-ms <ms>', 'total time of a request across attempts, ms (env IOP_REQUEST_DEADLINE_MS, default 600000)', integer)
  .option('--write-stall-timeout-ms <ms>', 'longest wait for a client that stopped reading, ms (env IOP_WRITE_STALL_TIMEOUT_MS, default 30000)', integer)
  .option('--startup-grace-ms <ms>', 'after start, a model no agent serves yet is a 503 with Retry-After (agents reconnecting), not a 404, ms (env IOP_STARTUP_GRACE_MS, default 15000)', integer)
  .option('--tunnel-register-timeout-ms <ms>', 'a tunnel connection must register an agent within this time, ms (env IOP_TUNNEL_REGISTER_TIMEOUT_MS, default 10000)', integer)
  .option('--tunnel-max-unauthenticated-connections <n>', 'tunnel connections not yet registered at once (env IOP_TUNNEL_MAX_UNAUTHENTICATED_CONNECTIONS, default 64)', integer)
  .option('--tunnel-max-unauthenticated-streams <n>', 'open streams per tunnel connection not yet registered (env IOP_TUNNEL_MAX_UNAUTHENTICATED_STREAMS, default 4)', integer)
  .option('--responses-max-response-bytes <bytes>', 'largest stored Response (input + output), bytes (env IOP_RESPONSES_MAX_RESPONSE_BYTES, default 16777216)', integer)
  .option('--responses-max-total-bytes <bytes>', 'stored Responses in all, bytes; the oldest go first (env IOP_RESPONSES_MAX_TOTAL_BYTES, default 2147483648)', integer)
  .option('--watch-config', 'reload the config file when it changes (SIGHUP always reloads)')
  .showHelpAfterError();

async function main(): Promise<void> {
  program.parse();
  const flags = program.opts<Record<string, string | number | boolean | undefined>>();
  const configPath = (flags.config as string | undefined) ?? process.env.IOP_CONFIG;
  const fromFlags: Record<string, unknown> = {};
  const tunnel: Record<string, unknown> = {};
  const set = (target: Record<string, unknown>, key: string, value: unknown) => {
    if (value !== undefined) target[key] = value;
  };
  set(fromFlags, 'host', flags.host);
  set(fromFlags, 'port', flags.port);
  set(tunnel, 'host', flags.tunnelHost);
  set(tunnel, 'port', flags.tunnelPort);
  set(tunnel, 'tlsCertFile', flags.tlsCert);
  set(tunnel, 'tlsKeyFile', flags.tlsKey);
  const unauthenticated: Record<string, unknown> = {};
  set(unauthenticated, 'registerTimeoutMs', flags.tunnelRegisterTimeoutMs);
  set(unauthenticated, 'maxUnauthenticatedConnections', flags.tunnelMaxUnauthenticatedConnections);
  set(unauthenticated, 'maxUnauthenticatedStreams', flags.tunnelMaxUnauthenticatedStreams);
  if (Object.keys(unauthenticated).length > 0) tunnel.unauthenticated = unauthenticated;
  if (Object.keys(tunnel).length > 0) fromFlags.tunnel = tunnel;
  const responsesStore: Record<string, unknown> = {};
  set(responsesStore, 'maxResponseBytes', flags.responsesMaxResponseBytes);
  set(responsesStore, 'maxTotalBytes', flags.responsesMaxTotalBytes);
  if (Object.keys(responsesStore).length > 0) fromFlags.responsesStore = responsesStore;
  set(fromFlags, 'apiKeys', (flags.apiKeys as string | undefined)?.split(',').map((key) => key.trim()).filter(Boolean));
  set(fromFlags, 'joinTokens', (flags.joinTokens as string | undefined)?.split(',').map((key) => key.trim()).filter(Boolean));
  set(fromFlags, 'maxBodyBytes', flags.maxBodyBytes);
  set(fromFlags, 'logLevel', flags.logLevel);
  set(fromFlags, 'adminKeys', (flags.adminKeys as string | undefined)?.split(',').map((key) => key.trim()).filter(Boolean));
  set(fromFlags, 'shutdownDeadlineMs', flags.shutdownDeadlineMs);
  for (const [key] of TIMEOUT_ENV) set(fromFlags, key, flags[key]);
  const load = () => resolveConfig(configPath === undefined ? {} : readConfigFile(configPath), configFromEnv(process.env), fromFlags);
  let config;
  try {
    config = load();
  } catch (error) {
    // An invalid setting (flag, environment or config file) is bad usage: exit 2, as every iop command does.
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(2);
  }
  const tracing = startTracing({ serviceName: 'iop-edge', serviceVersion: EDGE_VERSION });
  const logger = createLogger(config.logLevel);
  const edge = await startEdge(config, logger);
  // Ready: both ports listen.
  printReadiness({ port: edge.port, tunnelPort: edge.tunnelPort });

  const reload = (trigger: string) => {
    try {
      const result = edge.reload(load());
      if (result.restartRequired.length > 0) logger.warn({ trigger, settings: result.restartRequired }, 'config reload: these settings need a restart; running values kept');
      logger.info({ trigger, changed: result.changed, ...(result.pool === undefined ? {} : { pool: result.pool }) }, 'config reloaded');
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
