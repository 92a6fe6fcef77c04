/**
 * The one logger set-up of the edge and the agent (pino): JSON lines when stdout is not a
 * terminal (files, pipes, containers, log shippers), human-readable lines (pino-pretty) on a
 * terminal; `IOP_LOG_FORMAT=json|pretty` forces either. Both formats carry the same time, ISO 8601
 * in UTC with milliseconds (`2026-01-02T03:04:05.678Z`): `time` in JSON.
 *
 * Inside a sampled trace span every line carries `trace_id` and `span_id` (tracing.ts), so logs
 * and traces join on them.
 */
import pino, { type Logger } from 'pino';
import type PinoPretty from 'pino-pretty';
import { stdoutDestination } from './log-destination.js';
import { activeTraceFields } from './tracing.js';

export type { Logger };

export type LogFormat = 'json' | 'pretty';

export interface LoggerOptions {
  /** `name` field of every line, e.g. `iop-edge`. */
  name: string;
  /** fatal, error, warn, info, debug, trace or silent. */
  level: string;
  /** Fields on every line (e.g. `agentId`). */
  base?: Record<string, unknown>;
  /** Default: `logFormat()` (pretty on a terminal, JSON otherwise). */
  format?: LogFormat;
}

/**
 * The log format: `forced` when given (the `logFormat` setting: `--log-format` / `IOP_LOG_FORMAT`
 * of the edge and the agent), else pretty on a terminal and JSON otherwise.
 */
export function logFormat(forced?: LogFormat, isTty = process.stdout.isTTY === true): LogFormat {
  return forced ?? (isTty ? 'pretty' : 'json');
}

/** pino-pretty's pattern for the same UTC ISO 8601 time the JSON lines carry. */
const PRETTY_TIME = "UTC:yyyy-mm-dd'T'HH:MM:ss.l'Z'";

/** pino-pretty's stream, loaded only for the pretty format: JSON logging keeps its 40 modules out of memory. */
function prettyDestination(): PinoPretty.PrettyStream {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const pretty = require('pino-pretty') as typeof PinoPretty;
  return pretty({ sync: true, colorize: true, translateTime: PRETTY_TIME, ignore: 'pid,hostname', destination: 1 });
}

export function createLogger(options: LoggerOptions): Logger {
  const format = logFormat(options.format);
  const destination = format === 'pretty' ? prettyDestination() : stdoutDestination();
  return pino(
    {
      name: options.name,
      level: options.level,
      base: { pid: process.pid, ...options.base },
      timestamp: pino.stdTimeFunctions.isoTime,
      mixin: () => activeTraceFields() ?? {},
    },
    destination,
  );
}
