/**
 * The edge's pino logger (the shared set-up of @iop/core: JSON lines, or pino-pretty on a
 * terminal; ISO 8601 UTC times; `trace_id` inside traced requests). Every request's lines carry
 * its `requestId`.
 */
import { createLogger as createIopLogger, type LogFormat, type Logger } from '@iop/core';

export type { Logger };

/** @param format the `logFormat` setting; default pretty on a terminal, JSON otherwise. */
export function createLogger(level: string, name = 'iop-edge', format?: LogFormat): Logger {
  return createIopLogger({ name, level, ...(format === undefined ? {} : { format }) });
}
