/**
 * Stream slots shared through a real Redis (`IOP_TEST_REDIS_URL`; skipped without it): a lease
 * its edge keeps renewing outlives `streamLeaseMs`; the leases of an edge that died (stopped
 * renewing without releasing) lapse within `streamLeaseMs`, on every other edge.
 */
import { Redis } from 'ioredis';
import { sleep } from '@iop/core';
import { RedisCounterStore } from '../../../src/limits/redis-counter-store.js';
import { KeyLimiter } from '../../../src/limits/key-limiter.js';
import type { ApiKeyRecord } from '../../../src/keys/api-key.js';
import {
  describeWithSharedState,
  dropIsolation,
  isolation,
  REDIS_URL,
} from '../../../../../test/integration/shared-state-helpers';

const key: ApiKeyRecord = {
  id: 'key_leases',
  name: 'leases',
  owner: '',
  keyHash: 'h',
  createdAtMs: 0,
  source: 'config',
  limits: { maxConcurrentStreams: 2 },
};
const LEASE_MS = 600;

describeWithSharedState(
  'stream leases on Redis',
  () => {
    const isolated = isolation('leases');
    const stores: RedisCounterStore[] = [];
    const limiters: KeyLimiter[] = [];
    const edge = async () => {
      const store = new RedisCounterStore({ url: REDIS_URL, keyPrefix: isolated.prefix });
      await store.ready();
      stores.push(store);
      const limiter = new KeyLimiter(store, { streamLeaseMs: LEASE_MS });
      limiters.push(limiter);
      return limiter;
    };
    afterAll(async () => {
      for (const limiter of limiters) limiter.close();
      await Promise.all(stores.map((store) => store.close()));
      await dropIsolation(isolated, '', REDIS_URL);
    });

    it("keeps a live edge's slots past the lease, frees a dead edge's within it", async () => {
      const [alive, dead, other] = [await edge(), await edge(), await edge()];
      const running = await alive.admit(key);
      await dead.admit(key);
      dead.close(); // killed: no release, no more renewals
      const diedAt = performance.now();
      await expect(other.admit(key)).rejects.toThrow('allows 2 concurrent streams');
      // Wait for the dead edge's lease to lapse; the live edge renews its own meanwhile.
      let admitted: Awaited<ReturnType<KeyLimiter['admit']>> | undefined;
      while (admitted === undefined && performance.now() - diedAt < 5_000) {
        admitted = await other.admit(key).catch(() => undefined);
        if (admitted === undefined) await sleep(50);
      }
      expect(admitted).toBeDefined();
      expect(performance.now() - diedAt).toBeLessThan(LEASE_MS + 1_000);
      // Three lease periods on, the live edge's slot still counts.
      await sleep(3 * LEASE_MS);
      await expect(other.admit(key)).rejects.toThrow('allows 2 concurrent streams');
      await running.finish(0);
      const next = await other.admit(key);
      await next.finish(0);
      await admitted!.finish(0);
    });

    it('re-adds the slots of running streams after Redis lost them (a restart)', async () => {
      const [alive, other] = [await edge(), await edge()];
      const running = [await alive.admit(key), await alive.admit(key)];
      const redis = new Redis(REDIS_URL);
      await redis.del(`${isolated.prefix}streams:${key.id}`);
      redis.disconnect();
      await sleep(LEASE_MS); // past a renewal
      await expect(other.admit(key)).rejects.toThrow('allows 2 concurrent streams');
      await Promise.all(running.map((admission) => admission.finish(0)));
    });
  },
  { redis: true },
);
