/**
 * The edge's pino logger: JSON lines on stdout; every request's lines carry its `requestId`.
 * Writes are asynchronous (sonic-boom, `sync: false`): a slow stdout reader (a container log
 * driver, a pipe) never blocks the event loop in the middle of a request; pino flushes what is
 * pending when the process exits.
 */
import pino, { type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string, name = 'iop-edge'): Logger {
  return pino({ name, level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: 1, sync: false }));
}
