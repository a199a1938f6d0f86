// LeaderElector.release against a client that records its writes: a renewal cut short by the stop
// can land on the server after release reads the lease, so its first write conflicts.
import { describe, expect, it } from '@jest/globals';
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
