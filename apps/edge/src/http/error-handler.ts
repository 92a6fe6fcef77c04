/**
 * The one terminal error middleware: any failure becomes the client's dialect's error body with
 * the right status (and `Retry-After`); the cause goes to the log, never on the wire. After the
 * first byte of a response, the writer has already rendered an in-band error, so here the
 * response is only ended.
 */
import type { NextFunction, Request, Response } from 'express';
import { IopError, toIopError, type Dialect } from '@iop/core';
import { headerValue } from './header-value.js';
import { bodyDecodeError, bodyParserError } from './json-body.js';
import { locals } from './request-context.js';

/** A path parameter with broken percent-encoding (express's router throws URIError): the client's fault. */
function pathDecodeError(error: unknown): IopError | undefined {
  return error instanceof URIError
    ? new IopError('invalid_request', 'the request path has invalid percent-encoding')
    : undefined;
}

export function errorHandler(dialectFor: (path: string) => Dialect) {
  return function errorHandlerMiddleware(error: unknown, req: Request, res: Response, _next: NextFunction): void {
    const iopError =
      error instanceof IopError
        ? error
        : (bodyParserError(error) ?? bodyDecodeError(error) ?? pathDecodeError(error) ?? toIopError(error));
    const { requestId, log } = locals(res);
    if (iopError.status >= 500 && !(error instanceof IopError)) log.error({ err: error }, 'unhandled error');
    else log.info({ code: iopError.code, status: iopError.status, message: iopError.message }, 'request failed');
    if (res.headersSent) {
      if (!res.writableEnded) res.end();
      return;
    }
    const rendered = dialectFor(req.path).errorResponse(iopError, requestId);
    res.status(rendered.status);
    if (rendered.statusMessage !== undefined) res.statusMessage = rendered.statusMessage;
    for (const [name, value] of Object.entries(rendered.headers)) res.setHeader(name, headerValue(value));
    res.json(rendered.body);
  };
}
