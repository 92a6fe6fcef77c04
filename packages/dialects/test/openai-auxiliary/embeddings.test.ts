import fc from 'fast-check';
import { IopError } from '@iop/core';
import {
  decodeFloat32Base64,
  encodeEmbeddingsAnswer,
  encodeFloat32Base64,
} from '../../src/openai-auxiliary/embedding-encode.js';
import { readEmbeddingsRequest } from '../../src/openai-auxiliary/embeddings-request.js';

function paramOf(body: unknown): string | undefined {
  try {
    readEmbeddingsRequest(body);
    return 'accepted';
  } catch (error) {
    expect(error).toBeInstanceOf(IopError);
    expect((error as IopError).status).toBe(400);
    return (error as IopError).param;
  }
}

describe('readEmbeddingsRequest', () => {
  it('accepts the four input shapes and asks the backend for floats', () => {
    for (const input of ['text', ['a', 'b'], [1, 2, 3], [[1], [2, 3]]]) {
      const request = readEmbeddingsRequest({ model: 'm', input, encoding_format: 'base64', dimensions: 8, user: 'u' });
      expect(request.backendFields).toEqual({ encoding_format: 'float' });
      expect(request.encodingFormat).toBe('base64');
    }
    expect(readEmbeddingsRequest({ model: 'm', input: ['a', 'b'] })).toMatchObject({
      inputs: 2,
      encodingFormat: 'float',
      stream: false,
    });
    expect(readEmbeddingsRequest({ model: 'm', input: [[1, 2], [3]] }).promptTokensEstimate).toBe(3);
  });

  it('names the bad field', () => {
    expect(paramOf({ model: 'm', input: '' })).toBe('input');
    expect(paramOf({ model: 'm' })).toBe('input');
    expect(paramOf({ model: 'm', input: {} })).toBe('input');
    expect(paramOf({ model: 'm', input: ['a', ''] })).toBe('input.1');
    expect(paramOf({ model: 'm', input: [[1], 'a'] })).toBe('input.1');
    expect(paramOf({ model: 'm', input: [1.5] })).toBe('input.0');
    expect(paramOf({ model: 'm', input: Array.from({ length: 2049 }, () => 'a') })).toBe('input');
    expect(paramOf({ model: 'm', input: 'a', encoding_format: 'bytes' })).toBe('encoding_format');
    expect(paramOf({ model: 'm', input: 'a', dimensions: 1.5 })).toBe('dimensions');
    expect(paramOf({ model: 3, input: 'a' })).toBe('model');
    expect(paramOf([])).toBeUndefined();
  });
});

describe('float32 base64', () => {
  it('round-trips any float32 vector as little-endian bytes (what openai-node decodes)', () => {
    fc.assert(
      fc.property(fc.array(fc.float({ noNaN: true }), { maxLength: 64 }), (vector) => {
        const text = encodeFloat32Base64(vector);
        const bytes = Buffer.from(text, 'base64');
        expect(bytes.length).toBe(vector.length * 4);
        const view = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
        expect([...view]).toEqual(vector.map((value) => Math.fround(value)));
        expect(decodeFloat32Base64(text)).toEqual(vector.map((value) => Math.fround(value)));
      }),
    );
  });

  it('encodes a backend answer as the client asked; OpenAI usage', () => {
    const backend = Buffer.from(
      JSON.stringify({
        id: 'embd-1',
        object: 'list',
        model: 'm',
        data: [{ index: 0, embedding: [0.5, -1] }],
        usage: { prompt_tokens: 3, total_tokens: 3, completion_tokens: 0 },
      }),
    );
    const base64 = JSON.parse(encodeEmbeddingsAnswer(backend, 'base64').toString()) as Record<string, unknown>;
    expect(base64).toEqual({
      id: 'embd-1',
      object: 'list',
      model: 'm',
      data: [{ object: 'embedding', index: 0, embedding: encodeFloat32Base64([0.5, -1]) }],
      usage: { prompt_tokens: 3, total_tokens: 3 },
    });
    // A backend that sent base64 anyway is decoded for a float client.
    const sentBase64 = Buffer.from(
      JSON.stringify({ data: [{ embedding: encodeFloat32Base64([0.25]) }], usage: { prompt_tokens: 1 } }),
    );
    expect(JSON.parse(encodeEmbeddingsAnswer(sentBase64, 'float').toString())).toMatchObject({
      object: 'list',
      data: [{ object: 'embedding', index: 0, embedding: [0.25] }],
      usage: { prompt_tokens: 1, total_tokens: 1 },
    });
  });

  it('a malformed backend answer is an upstream error, never a crash', () => {
    for (const body of ['not json', '{"data":3}', '{"data":[{"embedding":"abc"}]}', '{"data":[{"embedding":["x"]}]}']) {
      expect(() => encodeEmbeddingsAnswer(Buffer.from(body), 'float')).toThrow(
        expect.objectContaining({ code: 'upstream_error' }) as Error,
      );
    }
  });
});
