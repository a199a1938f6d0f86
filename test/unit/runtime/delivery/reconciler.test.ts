// The delivery reconciler's finalizer, against caches and a client that records its writes: it goes
// once nothing of the claim's may be out there, even when a pass was cut off just before removing it.
import { describe, expect, it } from '@jest/globals';
import type { Client } from '../../../../src/kit/kube/client.ts';
import type { ResourceType } from '../../../../src/kit/kube/resources.ts';
import { DeliveryReconciler, FINALIZER_DELIVERY } from '../../../../src/runtime/delivery/reconciler.ts';
import type { DeliveringClaim } from '../../../../src/runtime/delivery/consumers.ts';
import type { SecretObject } from '../../../../src/runtime/managed/publisher.ts';
import { OwnershipKey } from '../../../../src/runtime/ownership/key.ts';
import { OwnershipMarks } from '../../../../src/runtime/ownership/marks.ts';
import { mapCache } from '../../../kit/map-cache.ts';

const Buckets: ResourceType = { apiVersion: 'storage.example.com/v1', kind: 'Bucket', plural: 'buckets', namespaced: true };

/**
 * A claim whose last pass delivered nothing more: its consumers emptied (or it is deleted), its record
 * of deliveries already cleared, and its own copy of the keys gone (revoked, or released first).
 */
const claim = (deleting: boolean): DeliveringClaim =>
  ({
    apiVersion: Buckets.apiVersion,
    kind: 'Bucket',
    metadata: {
      name: 'app',
      namespace: 'team-a',
      uid: 'app-uid',
      finalizers: [FINALIZER_DELIVERY],
      ...(deleting ? { deletionTimestamp: '2026-11-29T00:00:00Z' } : {}),
    },
    spec: { writeConnectionSecretToRef: { name: 'app-s3' }, consumers: [] },
  }) as unknown as DeliveringClaim;

async function writesOf(c: DeliveringClaim): Promise<string[]> {
  const writes: string[] = [];
  const client = {
    jsonPatch: async (_type: ResourceType, _key: unknown, ops: { op: string; path: string }[]) => {
      writes.push(ops.map((o) => `${o.op} ${o.path}`).join(', '));
      return { ...c, metadata: { ...c.metadata, finalizers: [] } };
    },
    updateStatus: async (_type: ResourceType, obj: DeliveringClaim) => {
      writes.push('status');
      return obj;
    },
  } as unknown as Client;
  const reconciler = new DeliveryReconciler({
    client,
    recorder: { normal: () => {}, warning: () => {} } as never,
    claims: { type: Buckets, cache: mapCache(new Map([['team-a/app', c]])) },
    bucketOf: () => undefined,
    secrets: mapCache(new Map<string, SecretObject>()),
    managed: new Map(),
    classes: new Map(),
    providers: {
      provider: () => {
        throw new Error('no Provider is named');
      },
      resolve: () => Promise.reject(new Error('no Provider is named')),
    },
    marks: new OwnershipMarks('cp-1', new OwnershipKey(Buffer.alloc(32, 7))),
    delivered: () => {
      throw new Error('no consumer is named');
    },
  });
  await reconciler.reconcile('team-a/app', new AbortController().signal);
  return writes;
}

describe("the delivery reconciler's finalizer", () => {
  it('goes from a claim that names no consumer any more and holds no copy of its keys', async () => {
    expect(await writesOf(claim(false))).toEqual([`test /metadata/finalizers/0, remove /metadata/finalizers/0`]);
  });

  it('goes from such a claim being deleted', async () => {
    expect(await writesOf(claim(true))).toEqual([`test /metadata/finalizers/0, remove /metadata/finalizers/0`]);
  });
});
