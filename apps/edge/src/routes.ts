/**
 * Which dialect serves which path. Adding a dialect = adding its routes here; the pipeline
 * (`http/inference.ts`) is shared by all.
 */
import type { Dialect } from '@iop/core';
import type { EdgeContext } from './edge-context.js';
import type { DialectRoutes } from './http/app.js';
import { chatDialect } from './dialects.js';

export async function buildDialectRoutes(_edge: EdgeContext): Promise<DialectRoutes> {
  const dialectForPath = (_path: string): Dialect => chatDialect;
  return {
    dialectForPath,
    inference: {
      '/v1/chat/completions': { dialect: chatDialect, passthrough: true },
    },
  };
}
