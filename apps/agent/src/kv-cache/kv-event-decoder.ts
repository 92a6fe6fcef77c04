/**
 * Decodes one KV-event batch as vLLM and SGLang publish them (vllm/distributed/kv_events.py:
 * msgpack `KVEventBatch`), from untrusted bytes, into typed events.
 *
 * Both encodings vLLM releases have used are read:
 * - array-like structs: a batch `[ts, events, data_parallel_rank?]`, events tagged arrays
 *   `["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium, …]`,
 *   `["BlockRemoved", block_hashes, medium, …]`, `["AllBlocksCleared"]`;
 * - maps: `{ts, events, data_parallel_rank?}` with events tagged by `type`:
 *   `{type: "BlockStored", block_hashes, parent_block_hash, token_ids, block_size, …}`.
 * A block hash (vLLM's `ExternalBlockHash`) is an integer (up to 64 bits: decoded as a bigint
 * where it needs one) or bytes (a SHA-256 digest in newer releases); both become a string key
 * (`1234…` or hex).
 *
 * Fields beyond the ones read (lora_name, extra_keys, group_idx, …) are ignored. Events of a
 * medium other than the GPU's (CPU offload tiers) are skipped: they do not spare a prefill on the
 * GPU. Unknown event tags are skipped and counted, so a newer engine's events do not break an
 * older agent.
 */
import { decode } from '@msgpack/msgpack';

export type KvEvent =
  | { type: 'stored'; hashes: string[]; parent: string | null; tokenIds: number[]; blockSize: number }
  | { type: 'removed'; hashes: string[] }
  | { type: 'cleared' };

export interface KvEventBatch {
  /** Seconds since the epoch, as the engine stamped it. */
  ts: number;
  events: KvEvent[];
  /** Events of a tag this decoder does not know (skipped). */
  unknown: number;
}

export interface DecodeLimits {
  /** Largest payload accepted, bytes. */
  maxBatchBytes: number;
  /** Most events in one batch. */
  maxEvents: number;
  /** Most block hashes in one event. */
  maxBlocksPerEvent: number;
}

export const DEFAULT_DECODE_LIMITS: Readonly<DecodeLimits> = Object.freeze({
  maxBatchBytes: 8 * 1024 * 1024,
  maxEvents: 100_000,
  maxBlocksPerEvent: 65_536,
});

/** Why a batch was refused (the label of the agent's dropped-batch metric). */
export type DecodeFailure = 'oversized' | 'malformed';

export class KvEventDecodeError extends Error {
  constructor(
    readonly reason: DecodeFailure,
    message: string,
  ) {
    super(message);
    this.name = 'KvEventDecodeError';
  }
}

const malformed = (message: string): never => {
  throw new KvEventDecodeError('malformed', message);
};

/** A block hash as a string key: decimal for integers, hex for bytes. */
export function hashKey(value: unknown): string {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return value.toString();
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Uint8Array && value.length > 0 && value.length <= 64)
    return Buffer.from(value.buffer, value.byteOffset, value.length).toString('hex');
  return malformed(`a block hash must be an integer or 1-64 bytes, got ${typeof value}`);
}

function hashList(value: unknown, limits: DecodeLimits): string[] {
  if (!Array.isArray(value)) return malformed('block_hashes must be an array');
  if (value.length > limits.maxBlocksPerEvent)
    throw new KvEventDecodeError(
      'oversized',
      `${value.length} block hashes in one event (limit ${limits.maxBlocksPerEvent})`,
    );
  return value.map(hashKey);
}

function tokenList(value: unknown): number[] {
  if (!Array.isArray(value)) return malformed('token_ids must be an array');
  for (const id of value)
    if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0)
      malformed('token_ids must be non-negative integers');
  return value as number[];
}

function onGpu(medium: unknown): boolean {
  return medium === undefined || medium === null || medium === 'GPU' || medium === 'gpu';
}

interface Fields {
  tag: unknown;
  blockHashes: unknown;
  parent: unknown;
  tokenIds: unknown;
  blockSize: unknown;
  medium: unknown;
  storedMedium: unknown;
}

function fieldsOf(raw: unknown): Fields {
  if (Array.isArray(raw)) {
    // Positional: BlockStored(block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium),
    // BlockRemoved(block_hashes, medium).
    return {
      tag: raw[0],
      blockHashes: raw[1],
      parent: raw[2],
      tokenIds: raw[3],
      blockSize: raw[4],
      storedMedium: raw[6],
      medium: raw[2],
    };
  }
  if (raw !== null && typeof raw === 'object') {
    const map = raw as Record<string, unknown>;
    return {
      tag: map.type,
      blockHashes: map.block_hashes,
      parent: map.parent_block_hash,
      tokenIds: map.token_ids,
      blockSize: map.block_size,
      storedMedium: map.medium,
      medium: map.medium,
    };
  }
  return malformed('an event must be an array or a map');
}

function decodeEvent(raw: unknown, limits: DecodeLimits): KvEvent | 'unknown' | 'skipped' {
  const fields = fieldsOf(raw);
  switch (fields.tag) {
    case 'BlockStored': {
      if (!onGpu(fields.storedMedium)) return 'skipped';
      const hashes = hashList(fields.blockHashes, limits);
      const blockSize = fields.blockSize;
      if (typeof blockSize !== 'number' || !Number.isSafeInteger(blockSize) || blockSize < 1 || blockSize > 4096)
        return malformed('block_size must be an integer in 1..4096');
      const tokenIds = tokenList(fields.tokenIds);
      if (tokenIds.length !== hashes.length * blockSize)
        return malformed(`${tokenIds.length} token ids for ${hashes.length} blocks of ${blockSize}`);
      const parent = fields.parent === null || fields.parent === undefined ? null : hashKey(fields.parent);
      return { type: 'stored', hashes, parent, tokenIds, blockSize };
    }
    case 'BlockRemoved':
      if (!onGpu(fields.medium)) return 'skipped';
      return { type: 'removed', hashes: hashList(fields.blockHashes, limits) };
    case 'AllBlocksCleared':
      return { type: 'cleared' };
    default:
      if (typeof fields.tag !== 'string') return malformed('an event has no tag');
      return 'unknown';
  }
}

/**
 * Decodes one batch's payload.
 * @throws KvEventDecodeError `oversized` past `limits`, `malformed` for anything that is not a
 *   KVEventBatch (the whole batch is refused: its events may not be applied in part).
 */
export function decodeKvEventBatch(payload: Uint8Array, limits: DecodeLimits = DEFAULT_DECODE_LIMITS): KvEventBatch {
  if (payload.length > limits.maxBatchBytes)
    throw new KvEventDecodeError('oversized', `a batch of ${payload.length} bytes (limit ${limits.maxBatchBytes})`);
  let raw: unknown;
  try {
    raw = decode(payload, {
      useBigInt64: true,
      maxStrLength: 1024,
      maxBinLength: 64,
      maxArrayLength: Math.max(limits.maxEvents, limits.maxBlocksPerEvent * 4096),
      maxMapLength: 64,
    });
  } catch (error) {
    return malformed(`not msgpack: ${(error as Error).message}`);
  }
  let ts: unknown;
  let events: unknown;
  if (Array.isArray(raw)) [ts, events] = raw;
  else if (raw !== null && typeof raw === 'object') ({ ts, events } = raw as Record<string, unknown>);
  else return malformed('a batch must be an array or a map');
  if (typeof ts !== 'number' && typeof ts !== 'bigint') return malformed('ts must be a number');
  if (!Array.isArray(events)) return malformed('events must be an array');
  if (events.length > limits.maxEvents)
    throw new KvEventDecodeError('oversized', `${events.length} events in one batch (limit ${limits.maxEvents})`);
  const decoded: KvEvent[] = [];
  let unknown = 0;
  for (const event of events) {
    const result = decodeEvent(event, limits);
    if (result === 'unknown') unknown++;
    else if (result !== 'skipped') decoded.push(result);
  }
  return { ts: Number(ts), events: decoded, unknown };
}
