import { IopError } from '@iop/core';
import { decodeResponsesRequest, encodeResponsesResponse, storedResponseOf } from '@iop/dialects';
import { GuardedResponseStore } from '../../../src/responses-store/guarded-store.js';
import { MemoryResponseStore, type StoredResponse } from '../../../src/responses-store/index.js';

function record(id: string): StoredResponse {
  const request = decodeResponsesRequest({ model: 'm', input: 'hi' });
  const response = encodeResponsesResponse(
    [
      { type: 'text-delta', text: 'hello' },
      { type: 'finish', reason: 'stop', raw: 'stop' },
    ],
    { requestId: 'r', model: 'm', request, createdAt: 1764500000 },
  );
  return { ...storedResponseOf(request, response)!, id };
}

/** A memory store that fails every call while `down` (a database that went away). */
class FlakyStore extends MemoryResponseStore {
  down = false;
  calls = 0;
  override async put(stored: StoredResponse, owner: string): Promise<void> {
    this.check();
    return super.put(stored, owner);
  }
  override async get(id: string, owner: string): Promise<StoredResponse | undefined> {
    this.check();
    return super.get(id, owner);
  }
  private check(): void {
    this.calls++;
    if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
  }
}

describe('GuardedResponseStore', () => {
  it('turns an outage into 503 no_capacity with Retry-After, refuses before work while it lasts, and recovers with one shared probe', async () => {
    const inner = new FlakyStore();
    const failures: unknown[] = [];
    const store = new GuardedResponseStore(inner, (error) => failures.push(error));
    await store.ready();
    await store.put(record('resp_a'), 'o');
    inner.down = true;
    const refused = await store.put(record('resp_b'), 'o').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(IopError);
    expect(refused).toMatchObject({ code: 'no_capacity', status: 503, retryAfterSeconds: 1 });
    expect((refused as IopError).message).not.toMatch(/ECONNREFUSED/);
    expect(failures).toHaveLength(1);
    expect(store.isFailing).toBe(true);
    await expect(store.ready()).rejects.toMatchObject({ code: 'no_capacity', retryAfterSeconds: 1 });
    inner.down = false;
    const before = inner.calls;
    await Promise.all([store.ready(), store.ready(), store.ready()]);
    expect(inner.calls - before).toBe(1);
    expect(store.isFailing).toBe(false);
    expect((await store.get('resp_a', 'o'))?.id).toBe('resp_a');
    expect(await store.get('resp_b', 'o')).toBeUndefined();
  });

  it('passes the store’s own refusals through without calling them an outage', async () => {
    const store = new GuardedResponseStore(new MemoryResponseStore({ maxResponseBytes: 10, maxTotalBytes: 1000 }));
    await expect(store.put(record('resp_big'), 'o')).rejects.toMatchObject({ code: 'request_too_large' });
    expect(store.isFailing).toBe(false);
  });
});
