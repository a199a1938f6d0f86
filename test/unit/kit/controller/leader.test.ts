// LeaderElector.release against a client that records its writes: a renewal cut short by the stop
// can land on the server after release reads the lease, so its first write conflicts. And a standby's
// judgement of another's lease, by a clock this machine's wall-clock jumps do not move.
import { describe, expect, it, jest } from '@jest/globals';
import type { Client } from '../../../../src/kit/kube/client.ts';
import { KubeError } from '../../../../src/kit/kube/errors.ts';
import { LeaderElector } from '../../../../src/kit/controller/leader.ts';
import { silentLogger } from '../../../../src/kit/logger.ts';

type Lease = { metadata: { name: string; namespace: string; resourceVersion: string }; spec: { holderIdentity: string } };

describe('LeaderElector.release', () => {
  it('reads the lease again when its write conflicts (a renewal landed after the read), and hands it over', async () => {
    let stored: Lease = { metadata: { name: 'l', namespace: 'ns', resourceVersion: '1' }, spec: { holderIdentity: 'me' } };
    // The renewal cut short by the stop: applied on the server once release has read version 1.
    let landing = true;
    const client = {
      get: async () => structuredClone(stored),
      update: async (_type: unknown, lease: Lease) => {
        if (landing) {
          landing = false;
          stored = { ...stored, metadata: { ...stored.metadata, resourceVersion: '2' } };
        }
        if (lease.metadata.resourceVersion !== stored.metadata.resourceVersion)
          throw new KubeError(409, 'Conflict', 'the object has been modified');
        stored = { ...lease, metadata: { ...lease.metadata, resourceVersion: String(Number(stored.metadata.resourceVersion) + 1) } };
        return stored;
      },
    } as unknown as Client;
    await new LeaderElector({ client, namespace: 'ns', name: 'l', identity: 'me', log: silentLogger }).release();
    expect(stored.spec.holderIdentity).toBe('');
  });
});

describe('LeaderElector.acquire', () => {
  it("does not take over a lease whose holder still renews within its duration when this machine's wall clock jumps ahead", async () => {
    const stored = {
      metadata: { name: 'l', namespace: 'ns', resourceVersion: '1' },
      spec: { holderIdentity: 'other', leaseDurationSeconds: 15, renewTime: '2026-11-29T00:00:00.000000Z' },
    };
    const writes: unknown[] = [];
    const client = {
      get: async () => structuredClone(stored),
      update: async (_type: unknown, lease: unknown) => {
        writes.push(lease);
        return lease;
      },
    } as unknown as Client;
    const elector = new LeaderElector({ client, namespace: 'ns', name: 'l', identity: 'me', log: silentLogger, retryPeriodMs: 1 });
    const stop = new AbortController();
    const wall = Date.now();
    // The first look sees the record; then the wall clock jumps a minute ahead while little time passes.
    const clock = jest.spyOn(Date, 'now').mockImplementation(() => wall);
    let looks = 0;
    const look = client.get;
    (client as { get: typeof look }).get = async (...args: Parameters<typeof look>) => {
      if (++looks === 2) clock.mockImplementation(() => wall + 60_000);
      if (looks === 5) stop.abort();
      return look(...args);
    };
    try {
      expect(await elector.acquire(stop.signal)).toBe(false);
    } finally {
      clock.mockRestore();
    }
    expect(looks).toBeGreaterThanOrEqual(5);
    expect(writes).toEqual([]);
  });
});
