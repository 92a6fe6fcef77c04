import { encode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { decodeKvEventBatch, KvEventDecodeError } from '../../../src/kv-cache/kv-event-decoder.js';

const stored = { hashes: [101, 2n ** 63n + 5n], parent: null, tokenIds: [1, 2, 3, 4], blockSize: 2 };

describe('decodeKvEventBatch', () => {
  it('reads the array-like encoding of vLLM releases with msgspec array_like structs', () => {
    const payload = encode(
      [
        1733300000.5,
        [
          ['BlockStored', stored.hashes, null, stored.tokenIds, 2, null, 'GPU'],
          ['BlockRemoved', [7], 'GPU'],
          ['AllBlocksCleared'],
        ],
        0,
      ],
      {
        useBigInt64: true,
      },
    );
    expect(decodeKvEventBatch(payload)).toEqual({
      ts: 1733300000.5,
      unknown: 0,
      events: [
        { type: 'stored', hashes: ['101', '9223372036854775813'], parent: null, tokenIds: [1, 2, 3, 4], blockSize: 2 },
        { type: 'removed', hashes: ['7'] },
        { type: 'cleared' },
      ],
    });
  });

  it('reads the tagged-map encoding of newer releases, with byte hashes, and skips other media and unknown tags', () => {
    const digest = new Uint8Array(32).fill(0xab);
    const payload = encode({
      ts: 1.25,
      data_parallel_rank: 0,
      events: [
        {
          type: 'BlockStored',
          block_hashes: [digest],
          parent_block_hash: 42,
          token_ids: [5, 6],
          block_size: 2,
          lora_id: null,
          medium: 'GPU',
          lora_name: null,
          extra_keys: null,
        },
        {
          type: 'BlockStored',
          block_hashes: [9],
          parent_block_hash: null,
          token_ids: [5, 6],
          block_size: 2,
          medium: 'CPU',
        },
        { type: 'SomethingNew', x: 1 },
      ],
    });
    expect(decodeKvEventBatch(payload)).toEqual({
      ts: 1.25,
      unknown: 1,
      events: [{ type: 'stored', hashes: ['ab'.repeat(32)], parent: '42', tokenIds: [5, 6], blockSize: 2 }],
    });
  });

  it('refuses what is not a KVEventBatch, and batches past the limits, as a whole', () => {
    const refuse = (payload: Uint8Array, reason: 'malformed' | 'oversized') => {
      expect(() => decodeKvEventBatch(payload, { maxBatchBytes: 1024, maxEvents: 4, maxBlocksPerEvent: 8 })).toThrow(
        expect.objectContaining({ name: 'KvEventDecodeError', reason }) as Error,
      );
    };
    refuse(encode('hello'), 'malformed');
    refuse(new Uint8Array([0xc1]), 'malformed'); // never-used msgpack byte
    refuse(encode([1, [['BlockStored', [1], null, [1, 2, 3], 2, null, 'GPU']]]), 'malformed'); // 3 tokens for 1 block of 2
    refuse(encode([1, [['BlockStored', [-1.5], null, [1, 2], 2, null, 'GPU']]]), 'malformed');
    refuse(encode([1, [[42]]]), 'malformed');
    refuse(new Uint8Array(2048), 'oversized');
    refuse(encode([1, Array.from({ length: 5 }, () => ['AllBlocksCleared'])]), 'oversized');
    refuse(encode([1, [['BlockRemoved', Array.from({ length: 9 }, (_, i) => i), 'GPU']]]), 'oversized');
  });

  it('never throws anything but a KvEventDecodeError, whatever the bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 256 }), (bytes) => {
        try {
          decodeKvEventBatch(bytes);
        } catch (error) {
          expect(error).toBeInstanceOf(KvEventDecodeError);
        }
      }),
    );
  });
});
