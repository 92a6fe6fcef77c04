/**
 * Request bodies: read raw (bounded by `maxBodyBytes`, 413 past it) so passthrough can forward the
 * client's exact bytes, then parsed once.
 */
import type { IncomingMessage } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { IopError, invalidRequest } from '@iop/core';

/**
 * The body middleware of every endpoint that takes one: sets `req.body` to the raw bytes. An
 * identity-encoded body (nearly all) is read by `readBody`; a gzip, deflate or br body is inflated
 * by body-parser (its failures are mapped by `bodyParserError` / `bodyDecodeError`).
 */
export function rawBody(maxBodyBytes: number) {
  const inflating = express.raw({ type: () => true, limit: maxBodyBytes });
  return function rawBodyMiddleware(req: Request, res: Response, next: NextFunction): void {
    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && encoding !== 'identity') {
      inflating(req, res, next);
      return;
    }
    readBody(req, maxBodyBytes).then((body) => {
      req.body = body;
      next();
    }, next);
  };
}

/**
 * Parses the raw body as a JSON object.
 * @throws IopError 400 `invalid_request` for an empty body, malformed JSON or a non-object.
 */
export function parseJsonObject(body: unknown): Record<string, unknown> {
  if (!Buffer.isBuffer(body) || body.length === 0) throw invalidRequest('the request body must be a JSON object');
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw invalidRequest(`malformed JSON in the request body: ${error instanceof Error ? error.message : 'parse error'}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidRequest('the request body must be a JSON object');
  return value as Record<string, unknown>;
}

/** Maps body-parser's failures (size, encoding, aborted) to IopErrors. */
export function bodyParserError(error: unknown): IopError | undefined {
  if (typeof error !== 'object' || error === null || !('type' in error)) return undefined;
  const type = (error as { type: unknown }).type;
  if (type === 'entity.too.large') {
    const limit = (error as { limit?: number }).limit;
    return new IopError('request_too_large', `request body too large${limit === undefined ? '' : `: the limit is ${limit} bytes`}`);
  }
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') return invalidRequest('unsupported content encoding');
  if (type === 'request.aborted') return invalidRequest('the client aborted the request body');
  return undefined;
}

/**
 * Decompression failures (a body that does not match its `content-encoding`) come from zlib
 * through body-parser as http-errors with a 4xx `status` and no `type`.
 */
export function bodyDecodeError(error: unknown): IopError | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { status, expose, code } = error as { status?: unknown; expose?: unknown; code?: unknown };
  if (typeof status === 'number' && status >= 400 && status < 500 && expose === true) {
    return invalidRequest(`the request body could not be decoded${typeof code === 'string' ? ` (${code})` : ''}: check its content-encoding`);
  }
  return undefined;
}

/** First non-space byte `{`, last `}`: catches a truncated or garbled JSON answer without parsing it. */
export function looksLikeJsonObject(body: Uint8Array): boolean {
  let from = 0;
  let to = body.length;
  while (from < to && body[from]! <= 0x20) from++;
  while (to > from && body[to - 1]! <= 0x20) to--;
  return to > from && body[from] === 0x7b && body[to - 1] === 0x7d;
}

/**
 * Reads a request body whole, bounded by `limit` bytes (the messages body-parser's failures get
 * from `bodyParserError`).
 * @throws IopError 413 `request_too_large` past `limit` (declared `content-length` or bytes read);
 *   400 `invalid_request` when the client aborts the body.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const tooLarge = () => new IopError('request_too_large', `request body too large: the limit is ${limit} bytes`);
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > limit) {
      req.resume();
      reject(tooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let received = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onAbort);
      req.off('aborted', onAbort);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit) {
        cleanup();
        req.resume();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received));
    };
    const onAbort = () => {
      cleanup();
      reject(invalidRequest('the client aborted the request body'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onAbort);
    req.on('aborted', onAbort);
  });
}
