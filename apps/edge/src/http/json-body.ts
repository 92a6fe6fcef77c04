/**
 * Request bodies: read raw (bounded by `maxBodyBytes`, 413 past it) so passthrough can forward the
 * client's exact bytes, then parsed once.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { IopError, invalidRequest } from '@iop/core';
import type { BodyBudget } from '../limits/body-budget.js';
import type { EdgeContext } from '../edge-context.js';

/**
 * The body middleware of every endpoint that takes one: sets `req.body` to the raw bytes. An
 * identity-encoded body (nearly all) is read by `readBody`; a gzip, deflate or br body is inflated
 * by body-parser (its failures are mapped by `bodyParserError` / `bodyDecodeError`; the budget
 * and the time limit apply to identity bodies only: compressed request bodies are rare and
 * bounded by `maxBodyBytes` and Node's `requestTimeout`).
 */
export function rawBody(limits: BodyLimits) {
  const inflating = express.raw({ type: () => true, limit: limits.maxBodyBytes });
  return function rawBodyMiddleware(req: Request, res: Response, next: NextFunction): void {
    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && encoding !== 'identity') {
      inflating(req, res, next);
      return;
    }
    readBody(req, limits, res).then((body) => {
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
    throw invalidRequest(
      `malformed JSON in the request body: ${error instanceof Error ? error.message : 'parse error'}`,
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalidRequest('the request body must be a JSON object');
  return value as Record<string, unknown>;
}

/** Maps body-parser's failures (size, encoding, aborted) to IopErrors. */
export function bodyParserError(error: unknown): IopError | undefined {
  if (typeof error !== 'object' || error === null || !('type' in error)) return undefined;
  const type = (error as { type: unknown }).type;
  if (type === 'entity.too.large') {
    const limit = (error as { limit?: number }).limit;
    return new IopError(
      'request_too_large',
      `request body too large${limit === undefined ? '' : `: the limit is ${limit} bytes`}`,
    );
  }
  if (type === 'encoding.unsupported' || type === 'charset.unsupported')
    return invalidRequest('unsupported content encoding');
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
    return invalidRequest(
      `the request body could not be decoded${typeof code === 'string' ? ` (${code})` : ''}: check its content-encoding`,
    );
  }
  return undefined;
}

/** The body limits of `edge`'s config, with its budget. */
export function bodyLimitsOf(edge: EdgeContext): BodyLimits {
  return { maxBodyBytes: edge.config.maxBodyBytes, timeoutMs: edge.config.bodyTimeoutMs, budget: edge.bodyBudget };
}

/** How a body is read: its size limit, its time limit and the edge's budget of bytes in flight. */
export interface BodyLimits {
  /** Largest body, bytes: 413 past it. */
  maxBodyBytes: number;
  /** The whole body must arrive within this long of the edge starting to read it, ms: then 408 (0 = no limit). */
  timeoutMs?: number;
  /** The edge-wide budget of request bytes in flight: 503 when the body would exceed it. */
  budget?: BodyBudget | undefined;
}

/**
 * Reads a request body whole, bounded by `limits.maxBodyBytes` bytes (the messages body-parser's
 * failures get from `bodyParserError`), by `limits.timeoutMs` and by the budget: the bytes read
 * are held against it until `res` closes (a declared `Content-Length` is taken whole before the
 * first byte is read).
 * @throws IopError 413 `request_too_large` past the limit (declared `content-length` or bytes
 *   read); 503 `no_capacity` (Retry-After) over the budget; 408 `request_timeout` when the body
 *   did not arrive in time (the connection is then closed after the answer: the rest of the body
 *   will never be read); 400 `invalid_request` when the client aborts the body.
 */
export function readBody(req: IncomingMessage, limits: BodyLimits, res?: ServerResponse): Promise<Buffer> {
  const { maxBodyBytes: limit, timeoutMs = 0, budget } = limits;
  return new Promise((resolve, reject) => {
    const tooLarge = () => new IopError('request_too_large', `request body too large: the limit is ${limit} bytes`);
    const declared = req.headers['content-length'];
    const declaredBytes = declared === undefined ? undefined : Number(declared);
    if (declaredBytes !== undefined && declaredBytes > limit) {
      req.resume();
      reject(tooLarge());
      return;
    }
    /** Bytes taken from the budget, given back when the response closes (or at once on a failure). */
    let taken = 0;
    const take = (bytes: number): boolean => {
      if (budget === undefined) return true;
      if (!budget.take(bytes)) return false;
      if (taken === 0) res?.once('close', () => budget.give(taken));
      taken += bytes;
      return true;
    };
    const giveBack = () => {
      if (taken === 0 || budget === undefined) return;
      budget.give(taken);
      taken = 0; // the close listener gives back nothing more
    };
    const refuse = (error: IopError) => {
      cleanup();
      giveBack();
      req.resume(); // the rest is read and dropped, so the client reads the answer
      reject(error);
    };
    if (declaredBytes !== undefined && declaredBytes > 0 && !take(declaredBytes)) {
      req.resume();
      reject(budget!.refusal());
      return;
    }
    const chunks: Buffer[] = [];
    let received = 0;
    const timer =
      timeoutMs > 0
        ? setTimeout(() => {
            cleanup();
            giveBack();
            // The rest of the body never came: answer, then close the connection (it is mid-request).
            res?.setHeader('connection', 'close');
            reject(
              new IopError(
                'request_timeout',
                `the request body did not arrive within ${timeoutMs} ms (${received} bytes received); send it faster or in full`,
              ),
            );
          }, timeoutMs)
        : undefined;
    const cleanup = () => {
      if (timer !== undefined) clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onAbort);
      req.off('aborted', onAbort);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit) return refuse(tooLarge());
      // Chunked (or longer than declared, which Node refuses anyway): held as the bytes arrive.
      if (received > (declaredBytes ?? 0) && !take(chunk.length)) return refuse(budget!.refusal());
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received));
    };
    const onAbort = () => {
      cleanup();
      giveBack();
      reject(invalidRequest('the client aborted the request body'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onAbort);
    req.on('aborted', onAbort);
  });
}
