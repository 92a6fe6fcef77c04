/**
 * The edge's pino logger (the shared set-up of @iop/core: JSON lines, or pino-pretty on a
 * terminal; ISO 8601 UTC times; `trace_id` inside traced requests). Every request's lines carry
 * its `requestId`.
 */
import { createLogger as createIopLogger, type Logger } from '@iop/core';

export type { Logger };

export function createLogger(level: string, name = 'iop-edge'): Logger {
  return createIopLogger({ name, level });
}
