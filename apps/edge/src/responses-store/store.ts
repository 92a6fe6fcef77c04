/**
 * The response store: finished Responses kept for `previous_response_id`, `GET /v1/responses/{id}` and `GET
 * /v1/responses/{id}/input_items` (docs/protocols.md "Responses request", "Responses input and Chat messages"). Records
 * are `StoredResponse`s (@iop/dialects, the Responses dialect's record): the Response object, its input items (with
 * ids) and the resolved conversation, instructions excluded.
 *
 * Every record has an owner (OpenAI scopes stored responses to the project/key): the edge passes the SHA-256 of the
 * client API key (`ownerOfKey`, http/auth.ts), or `''` when it has no keys. A read, page or delete with another owner
 * answers exactly as for an unknown id. Owners compare exactly: records stored by an open edge (`''`, and rows from
 * before owners existed) are readable by nobody once keys are configured, and retention removes them in time.
 */
// Not the '@iop/core' barrel: this module is also loaded by the store's worker thread (sqlite-worker.ts).
import { IopError } from '@iop/core/errors';
import type { StoredInputItem, StoredResponse } from '@iop/dialects';

export type { StoredInputItem, StoredResponse };

export interface InputItemsQuery {
  /** An item id: list the items after it (in the chosen order). */
  after?: string;
  /** 1–100, default 20 (the OpenAI list default). */
  limit?: number;
  /** `desc` (the OpenAI default: newest first) or `asc`. */
  order?: 'asc' | 'desc';
}

/** An OpenAI list page (`GET /v1/responses/{id}/input_items`). */
export interface InputItemsPage {
  object: 'list';
  data: StoredInputItem[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

export interface ResponseStore {
  /** Keeps a record owned by `owner` (replacing one with the same id, whoever owned it). */
  put(record: StoredResponse, owner: string): Promise<void>;
  /** The record, or undefined when unknown, owned by someone else or past the retention age. */
  get(id: string, owner: string): Promise<StoredResponse | undefined>;
  /** True when a record of `owner` was removed; false (nothing removed) for another owner's. */
  delete(id: string, owner: string): Promise<boolean>;
  /** A page of a record's input items, or undefined when the response is unknown or someone else's. */
  inputItems(id: string, owner: string, query?: InputItemsQuery): Promise<InputItemsPage | undefined>;
  close(): Promise<void>;
}

/** Retention limits; expired rows are removed lazily (reads) and periodically (writes, timer). */
export interface RetentionOptions {
  /** Age after which a record is gone, in ms. Default 30 days (OpenAI keeps stored responses 30 days). */
  maxAgeMs?: number;
  /** Most records kept; the oldest go first. Default 100,000. */
  maxRows?: number;
  /**
   * Largest record kept, bytes of its stored text (record-codec.ts: each long string once). A
   * larger `put` is refused with IopError `request_too_large` (413) and nothing is kept. Default 16 MiB.
   */
  maxResponseBytes?: number;
  /** All records together, bytes of their stored text; the oldest go first beyond it. Default 2 GiB. */
  maxTotalBytes?: number;
  /** Clock in ms (tests). Default `Date.now`. */
  now?: () => number;
}

export const DEFAULT_MAX_AGE_MS = 30 * 24 * 60 * 60 * 1000;
export const DEFAULT_MAX_ROWS = 100_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
export const DEFAULT_MAX_TOTAL_BYTES = 2 * 1024 * 1024 * 1024;
const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 100;

export interface ResolvedRetention {
  maxAgeMs: number;
  maxRows: number;
  maxResponseBytes: number;
  maxTotalBytes: number;
  now: () => number;
}

/** Validates retention options. @throws RangeError naming the option and its limits. */
export function resolveRetention(options: RetentionOptions = {}): ResolvedRetention {
  const maxAgeMs = options.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
  const maxRows = options.maxRows ?? DEFAULT_MAX_ROWS;
  if (!Number.isFinite(maxAgeMs) || maxAgeMs <= 0)
    throw new RangeError(`maxAgeMs must be a positive number of ms, got ${maxAgeMs}`);
  if (!Number.isSafeInteger(maxRows) || maxRows < 1)
    throw new RangeError(`maxRows must be an integer >= 1, got ${maxRows}`);
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const maxTotalBytes = options.maxTotalBytes ?? DEFAULT_MAX_TOTAL_BYTES;
  if (!Number.isSafeInteger(maxTotalBytes) || maxTotalBytes < 1)
    throw new RangeError(`maxTotalBytes must be an integer >= 1, got ${maxTotalBytes}`);
  if (!Number.isSafeInteger(maxResponseBytes) || maxResponseBytes < 1 || maxResponseBytes > maxTotalBytes) {
    throw new RangeError(
      `maxResponseBytes must be an integer from 1 to maxTotalBytes (${maxTotalBytes}), got ${maxResponseBytes}`,
    );
  }
  return { maxAgeMs, maxRows, maxResponseBytes, maxTotalBytes, now: options.now ?? Date.now };
}

/** The error of a `put` over `maxResponseBytes` (413 `request_too_large`). */
export function recordTooLarge(bytes: number, maxResponseBytes: number): IopError {
  return new IopError(
    'request_too_large',
    `the response is too large to store: ${bytes} bytes, the limit is ${maxResponseBytes} bytes per stored response (--responses-max-response-bytes); send store: false to not store it`,
  );
}

/** Pages a record's input items (OpenAI list semantics: `after` is exclusive, `has_more` when items remain). */
export function pageInputItems(items: readonly StoredInputItem[], query: InputItemsQuery = {}): InputItemsPage {
  const limit = query.limit ?? DEFAULT_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIMIT)
    throw new RangeError(`limit must be an integer between 1 and ${MAX_LIMIT}, got ${limit}`);
  const ordered = query.order === 'asc' ? items : [...items].reverse();
  let start = 0;
  if (query.after !== undefined) {
    const index = ordered.findIndex((item) => item.id === query.after);
    start = index === -1 ? ordered.length : index + 1;
  }
  const data = ordered.slice(start, start + limit);
  return {
    object: 'list',
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: start + limit < ordered.length,
  };
}

/**
 * Keeps a finished response for `owner` unless its request said `store:false` (then nothing is
 * kept). `record` is `openaiResponses.storedResponseOf(request, response)`, undefined for `store:false`.
 */
export async function keepResponse(
  store: ResponseStore,
  record: StoredResponse | undefined,
  owner: string,
): Promise<boolean> {
  if (record === undefined) return false;
  await store.put(record, owner);
  return true;
}
