/**
 * Which dialect serves which path. Adding a dialect = adding its routes here; the pipeline
 * (`http/inference.ts`) is shared by all.
 */
import type { Dialect } from '@iop/core';
import type { EdgeContext } from './edge-context.js';
import type { DialectRoutes } from './http/app.js';
import { anthropicDialect, chatDialect } from './dialects.js';
import { countTokensHandler } from './http/count-tokens.js';
import { bodyLimitsOf, rawBody } from './http/json-body.js';
import { mountResponsesRetrieval, responsesInferenceRoute } from './http/responses-routes.js';
import type { ResponseStore } from './responses-store/index.js';
import { GuardedResponseStore } from './responses-store/guarded-store.js';

export function buildDialectRoutes(edge: EdgeContext, responses: ResponseStore): DialectRoutes {
  // Store outages become 503s with Retry-After, and refuse the next store before it runs.
  const store = new GuardedResponseStore(responses, (error) =>
    edge.logger.warn({ error: error instanceof Error ? error.message : String(error) }, 'Responses store call failed'),
  );
  const dialectForPath = (path: string): Dialect => (path.startsWith('/v1/messages') ? anthropicDialect : chatDialect);
  return {
    dialectForPath,
    inference: {
      '/v1/chat/completions': { dialect: chatDialect, passthrough: true },
      '/v1/messages': { dialect: anthropicDialect, passthrough: false },
      '/v1/responses': responsesInferenceRoute(store, edge),
    },
    extra: [
      (app) => {
        app.post('/v1/messages/count_tokens', rawBody(bodyLimitsOf(edge)), countTokensHandler(edge));
        mountResponsesRetrieval(app, store);
      },
    ],
  };
}
