// The BucketAccess reconciler's mark on the Bucket it names (LABEL_GRANTED, which admission reads to
// refuse the Bucket's deletion): only accesses the Bucket allows count, since an access's
// resourceRef is its app team's to write. Against caches and a client that records its writes.
import { describe, expect, it } from '@jest/globals';
import type { Client } from '../../../../src/kit/kube/client.ts';
import type { ObjectKey } from '../../../../src/kit/kube/object-key.ts';
import type { ResourceType } from '../../../../src/kit/kube/resources.ts';
import { AccessReconciler, type AccessClaim, type AccessMode } from '../../../../src/runtime/claims/access.ts';
import { FINALIZER_CLAIM, type Claim } from '../../../../src/runtime/claims/claim.ts';
import { LABEL_GRANTED } from '../../../../src/runtime/labels.ts';
import type { ManagedResource } from '../../../../src/runtime/managed/types.ts';
import type { SecretObject } from '../../../../src/runtime/managed/publisher.ts';
import { mapCache } from '../../../kit/map-cache.ts';

const t = (kind: string): ResourceType => ({
  apiVersion: 'storage.example.com/v1',
  kind,
  plural: `${kind.toLowerCase()}s`,
  namespaced: true,
});
const Buckets = t('Bucket');
const Accesses = t('BucketAccess');

const bucket: Claim & { spec: { shareWith: { namespace: string; modes: AccessMode[] }[] } } = {
  apiVersion: Buckets.apiVersion,
  kind: 'Bucket',
  metadata: { name: 'orders', namespace: 'team-a', uid: 'orders-uid' },
  spec: { shareWith: [{ namespace: 'team-b', modes: ['ReadOnly'] }] },
};
/** An access to team-a/orders that claims to hold a user (resourceRef: anyone who may edit it can set it). */
const access = ({ namespace, name }: Required<ObjectKey>, mode: AccessMode = 'ReadOnly'): AccessClaim => ({
  apiVersion: Accesses.apiVersion,
  kind: 'BucketAccess',
  metadata: { name, namespace, uid: `${namespace}-${name}`, finalizers: [FINALIZER_CLAIM] },
  spec: {
    bucketRef: { namespace: 'team-a', name: 'orders' },
    mode,
    resourceRef: { name: 'z' },
  },
});

/** Reconciles the first access with all of them cached; the Bucket's label patches it wrote. */
async function marksWritten(...accesses: AccessClaim[]): Promise<unknown[]> {
  const patches: unknown[] = [];
  const client = {
    mergePatch: async (type: ResourceType, _key: unknown, patch: unknown) => {
      if (type === Buckets) patches.push(patch);
      return {};
    },
    update: async (_type: ResourceType, obj: AccessClaim) => obj,
    updateStatus: async (_type: ResourceType, obj: AccessClaim) => obj,
  } as unknown as Client;
  const reconciler = new AccessReconciler({
    client,
    recorder: { normal: () => {}, warning: () => {} } as never,
    accesses: { type: Accesses, cache: mapCache(new Map(accesses.map((a) => [`${a.metadata.namespace}/${a.metadata.name}`, a]))) },
    buckets: { type: Buckets, cache: mapCache(new Map([['team-a/orders', bucket]])) },
    grantors: [],
    lent: [],
    granted: [] as { type: ResourceType; cache: ReturnType<typeof mapCache<ManagedResource>> }[],
    secrets: mapCache(new Map<string, SecretObject>()),
  });
  const first = accesses[0]!;
  await reconciler.reconcile(`${first.metadata.namespace}/${first.metadata.name}`, new AbortController().signal);
  return patches;
}

describe("an access's mark on the Bucket", () => {
  it('is not written for accesses in a namespace the Bucket does not share with, whatever their resourceRef says', async () => {
    expect(await marksWritten(access({ namespace: 'team-c', name: 'x1' }), access({ namespace: 'team-c', name: 'x2' }))).toEqual([]);
  });

  it('nor for one in a mode the Bucket does not allow its namespace', async () => {
    expect(
      await marksWritten(
        access({ namespace: 'team-b', name: 'x1' }, 'ReadWrite'),
        access({ namespace: 'team-b', name: 'x2' }, 'ReadWrite'),
      ),
    ).toEqual([]);
  });

  it('is written while an access the Bucket allows holds a user', async () => {
    expect(await marksWritten(access({ namespace: 'team-c', name: 'x1' }), access({ namespace: 'team-b', name: 'reader' }))).toEqual([
      { metadata: { labels: { [LABEL_GRANTED]: 'true' } } },
    ]);
  });
});
