/** The edge's pino logger: JSON lines on stdout; every request's lines carry its `requestId`. */
import pino, { type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string, name = 'iop-edge'): Logger {
  return pino({ name, level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime });
}
