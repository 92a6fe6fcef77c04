/**
 * Passthrough answers name the model the client asked for: when a model group or alias maps the
 * client's name to another served model id, the backend's `"model":"<served>"` is rewritten to
 * `"model":"<client name>"` in the relayed bytes (the normalized path gets the same from the
 * dialect encoders, which use the client's name). The served id travels in `x-iop-model`.
 *
 * Works on the byte stream as it is split into frames: an occurrence cut across two frames is
 * found because a tail that may be the start of one is held back (at most `needle.length − 1`
 * bytes, and only when the tail really matches the needle's start). The compact JSON form
 * (`"model":"…"`, as vLLM, SGLang, llama.cpp server and Ollama write it) is matched.
 */
export class ModelRewriter {
  private readonly needle: Buffer;
  private readonly replacement: Buffer;
  private carry: Buffer | undefined;

  constructor(served: string, client: string) {
    this.needle = Buffer.from(`"model":${JSON.stringify(served)}`);
    this.replacement = Buffer.from(`"model":${JSON.stringify(client)}`);
  }

  /** The bytes to send now for `chunk` (may hold back a few bytes until the next call). */
  push(chunk: Uint8Array): Buffer {
    const data =
      this.carry === undefined
        ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
        : Buffer.concat([this.carry, chunk]);
    this.carry = undefined;
    let parts: Buffer[] | undefined;
    let from = 0;
    for (let at = data.indexOf(this.needle); at !== -1; at = data.indexOf(this.needle, from)) {
      parts ??= [];
      parts.push(data.subarray(from, at), this.replacement);
      from = at + this.needle.length;
    }
    const hold = this.partialTail(data, from);
    const end = data.length - hold;
    if (hold > 0) this.carry = Buffer.from(data.subarray(end));
    if (parts === undefined) return data.subarray(0, end);
    parts.push(data.subarray(from, end));
    return Buffer.concat(parts);
  }

  /** Whatever is still held back. */
  end(): Buffer {
    const rest = this.carry ?? Buffer.alloc(0);
    this.carry = undefined;
    return rest;
  }

  /** Length of the longest tail of `data[from..]` that is a proper prefix of the needle. */
  private partialTail(data: Buffer, from: number): number {
    const max = Math.min(this.needle.length - 1, data.length - from);
    for (let length = max; length > 0; length--) {
      if (data[data.length - length] !== this.needle[0]) continue;
      if (data.subarray(data.length - length).equals(this.needle.subarray(0, length))) return length;
    }
    return 0;
  }
}
