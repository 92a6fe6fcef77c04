/**
 * The edge's pino logger: JSON lines on stdout; every request's lines carry its `requestId`.
 * Writes go to stdout through `stdoutDestination()` (see there why they are synchronous).
 */
import pino, { type Logger } from 'pino';
import { stdoutDestination } from '@iop/core';

export type { Logger };

export function createLogger(level: string, name = 'iop-edge'): Logger {
  return pino({ name, level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime }, stdoutDestination());
}
