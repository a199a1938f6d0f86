// The delivery reconciler's finalizer, against caches and a client that records its writes: it goes
// once nothing of the claim's may be out there, even when a pass was cut off just before removing it.
import { describe, expect, it } from '@jest/globals';
import type { Client } from '../../../../src/kit/kube/client.ts';
import { Secrets, type ResourceType } from '../../../../src/kit/kube/resources.ts';
import type { ManagedResource } from '../../../../src/runtime/managed/types.ts';
import type { ProviderObject } from '../../../../src/runtime/providers/provider.ts';
import type { Target } from '../../../../src/runtime/providers/targets.ts';
import { DeliveryReconciler, FINALIZER_DELIVERY, ownerOf } from '../../../../src/runtime/delivery/reconciler.ts';
import type { DeliveringClaim, Delivery } from '../../../../src/runtime/delivery/consumers.ts';
import type { SecretObject } from '../../../../src/runtime/managed/publisher.ts';
import { OwnershipKey } from '../../../../src/runtime/ownership/key.ts';
import { OwnershipMarks } from '../../../../src/runtime/ownership/marks.ts';
import { mapCache } from '../../../kit/map-cache.ts';
import { KubeError, UnreachableError } from '../../../../src/kit/kube/errors.ts';
import { ReasonedError } from '../../../../src/kit/conditions.ts';
import { Reasons } from '../../../../src/runtime/reasons.ts';
import { CONNECTION_SECRET_TYPE } from '../../../../src/kit/meta.ts';

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
    expect(await writesOf(claim(false))).toEqual([`test /metadata/uid, test /metadata/finalizers/0, remove /metadata/finalizers/0`]);
  });

  it('goes from such a claim being deleted', async () => {
    expect(await writesOf(claim(true))).toEqual([`test /metadata/uid, test /metadata/finalizers/0, remove /metadata/finalizers/0`]);
  });
});

const marks = new OwnershipMarks('cp-1', new OwnershipKey(Buffer.alloc(32, 7)));
const OTHERS = 'example.com/keeper';

/**
 * A claim with one consumer in its store's own cluster, its copy of the keys there to deliver. The
 * claim's status is stored as written, but a write of the kind `refuse` names is refused with a
 * conflict (another controller wrote the claim's status meanwhile); `there` is what the consumer
 * already has at the place: a Secret of someone else's, or an older one of this claim's whose
 * updates are refused with a conflict (someone else keeps changing it).
 */
function deliveringWorld(
  o: {
    refuse?: 'intent' | 'delivered';
    there?: 'foreign' | 'ours, contended' | 'ours, immutable' | 'ours, another type' | 'ours, kept by others';
    recorded?: Delivery[];
    /** The consumer's server makes the Secret, and its answer never arrives. */
    answerLost?: boolean;
    /** The Provider the claim's consumer names (another Provider of the same cluster). */
    through?: string;
    /** The claim is being deleted. */
    deleting?: boolean;
    /** The Provider lets this claim's namespace deliver nowhere; a read in its cluster is forbidden. */
    noConsent?: boolean;
    /** The consumer's cluster was never reached: its Provider's Secret is missing, or its server never answers. */
    neverReached?: 'credentials' | 'server';
  } = {},
) {
  const writes: string[] = [];
  const consumerSecrets = new Map<string, SecretObject>();
  const c = {
    apiVersion: Buckets.apiVersion,
    kind: 'Bucket',
    metadata: {
      name: 'app',
      namespace: 'team-a',
      uid: 'app-uid',
      finalizers: [FINALIZER_DELIVERY],
      resourceVersion: '1',
      ...(o.deleting ? { deletionTimestamp: '2026-11-29T00:00:00Z' } : {}),
    },
    spec: {
      writeConnectionSecretToRef: { name: 'app-s3' },
      resourceRef: { kind: 'Store', name: 'app-store', namespace: 'infra' },
      consumers: [{ providerRef: { name: o.through ?? 'eu-1', namespace: 'infra' }, namespace: 'app' }],
    },
    ...(o.recorded ? { status: { deliveries: o.recorded } } : {}),
  } as unknown as DeliveringClaim;
  const store = {
    apiVersion: 'storage.example.com/v1',
    kind: 'Store',
    metadata: { name: 'app-store', namespace: 'infra', uid: 'store-uid' },
    spec: {
      providerRef: { name: 'eu-1' },
      claimRef: { kind: 'Bucket', name: 'app', namespace: 'team-a', uid: 'app-uid' },
      // Reached from other clusters' Providers through a load balancer.
      ...(o.through ? { exposure: { loadBalancer: {} } } : {}),
    },
    ...(o.through ? { status: { atProvider: { exposure: { via: 'LoadBalancer', endpoint: 'http://192.0.2.1:9000' } } } } : {}),
  } as unknown as ManagedResource;
  const copy = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'app-s3', namespace: 'team-a', ownerReferences: [{ controller: true, uid: 'app-uid' }] },
    data: { AWS_ACCESS_KEY_ID: Buffer.from('AK').toString('base64'), endpoint: Buffer.from('http://s.ns.svc:8333').toString('base64') },
  } as unknown as SecretObject;
  const provider = {
    metadata: { name: 'eu-1', namespace: 'infra' },
    spec: { credentialsSecretRef: { name: 'x' }, consumers: o.noConsent ? [] : [{ claimNamespace: 'team-a', namespaces: ['app'] }] },
  } as ProviderObject;
  const claims = new Map([['team-a/app', c]]);
  const older = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'app-s3', namespace: 'app', uid: 'older-uid' },
    type: CONNECTION_SECRET_TYPE,
    data: {},
  } as SecretObject;
  if (o.there === 'foreign') consumerSecrets.set('app/app-s3', older);
  if (o.there === 'ours, contended') consumerSecrets.set('app/app-s3', marks.mark(Secrets, older, ownerOf(Buckets, c)));
  // As the server refuses to update one: the fake's update answers so too.
  if (o.there === 'ours, immutable')
    consumerSecrets.set('app/app-s3', { ...marks.mark(Secrets, older, ownerOf(Buckets, c)), immutable: true } as SecretObject);
  // Deleted there and made again, its marks copied, as another type: the server refuses to change a Secret's type.
  if (o.there === 'ours, another type')
    consumerSecrets.set('app/app-s3', { ...marks.mark(Secrets, older, ownerOf(Buckets, c)), type: 'Opaque' });
  // Another party's finalizer and owner reference on it.
  if (o.there === 'ours, kept by others') {
    const ours = marks.mark(Secrets, older, ownerOf(Buckets, c));
    consumerSecrets.set('app/app-s3', {
      ...ours,
      metadata: {
        ...ours.metadata,
        finalizers: [OTHERS],
        ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'keeper', uid: 'keeper-uid' }],
      },
    } as SecretObject);
  }
  const consumer = {
    create: async (_type: ResourceType, obj: SecretObject) => {
      writes.push(`create Secret ${obj.metadata.namespace}/${obj.metadata.name}`);
      const made = { ...obj, metadata: { ...obj.metadata, uid: 'secret-uid' } };
      consumerSecrets.set(`${obj.metadata.namespace}/${obj.metadata.name}`, made);
      if (o.answerLost) throw new UnreachableError('the connection was reset');
      return made;
    },
    get: async (_type: ResourceType, key: { namespace: string; name: string }) => {
      writes.push(`get Secret ${key.namespace}/${key.name}`);
      if (o.noConsent) throw new KubeError(403, 'Forbidden', 'secrets is forbidden');
      if (o.neverReached === 'server') throw new UnreachableError('cannot reach the consumer cluster (ECONNREFUSED)');
      return consumerSecrets.get(`${key.namespace}/${key.name}`);
    },
    update: async (_type: ResourceType, obj: SecretObject) => {
      writes.push('update Secret app/app-s3');
      if (o.there === 'ours, kept by others') {
        consumerSecrets.set('app/app-s3', obj);
        return obj;
      }
      if (o.there === 'ours, immutable' || o.there === 'ours, another type')
        throw new KubeError(422, 'Invalid', 'Secret "app-s3" is invalid: data: Forbidden: field is immutable');
      throw new KubeError(409, 'Conflict', 'the object has been modified');
    },
    delete: async (_type: ResourceType, key: { namespace: string; name: string }) => {
      writes.push(`delete Secret ${key.namespace}/${key.name}`);
      consumerSecrets.delete(`${key.namespace}/${key.name}`);
      return 'deleted';
    },
  } as unknown as Client;
  const client = {
    updateStatus: async (_type: ResourceType, obj: DeliveringClaim) => {
      const delivered = obj.status?.deliveries?.some((d) => d.delivered);
      if ((o.refuse === 'delivered' && delivered) || (o.refuse === 'intent' && !delivered))
        throw new KubeError(409, 'Conflict', 'the object has been modified');
      writes.push(`status ${JSON.stringify(obj.status?.deliveries?.map((d) => [d.to, d.delivered]))}`);
      const stored = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(Number(obj.metadata.resourceVersion) + 1) } };
      claims.set('team-a/app', stored);
      return stored;
    },
    jsonPatch: async () => {
      writes.push('finalizer removed');
      return claims.get('team-a/app');
    },
  } as unknown as Client;
  const copies = new Map([['team-a/app-s3', copy]]);
  const reconciler = new DeliveryReconciler({
    client,
    recorder: { normal: () => {}, warning: () => {} } as never,
    claims: { type: Buckets, cache: mapCache(claims) },
    bucketOf: (claim) => claim,
    secrets: mapCache(copies),
    managed: new Map([['Store', mapCache(new Map([['infra/app-store', store]]))]]),
    classes: new Map(),
    providers: {
      provider: () => provider,
      resolve: async () => {
        if (o.neverReached === 'credentials')
          throw new ReasonedError(Reasons.SecretNotFound, 'Secret infra/x, which Provider eu-1 names, does not exist');
        return { client: consumer, fingerprint: 'eu-1' } as unknown as Target;
      },
    },
    marks,
    // A cluster that never answers never fills its cache: the Secret there is read from its server.
    delivered: () => ({ ...mapCache(consumerSecrets), hasSynced: o.neverReached !== 'server' }) as never,
  });
  return {
    writes,
    consumerSecrets,
    /** The claim's status as last stored. */
    status: () => claims.get('team-a/app')!.status,
    reconcile: () => reconciler.reconcile('team-a/app', new AbortController().signal),
    /** The claim's own copy of its keys is gone for now (its binding rewrites it). */
    noCopy: () => copies.clear(),
    /** The app team names no consumer any more. */
    noConsumers: () => {
      const now = claims.get('team-a/app')!;
      claims.set('team-a/app', { ...now, spec: { ...now.spec, consumers: [] } } as DeliveringClaim);
    },
  };
}

describe('a deleting claim whose spec names a place it never recorded', () => {
  it("reads nothing there when the place's Provider does not consent (nothing was ever delivered there), and lets its finalizer go", async () => {
    const world = deliveringWorld({ deleting: true, noConsent: true });
    world.noCopy();
    await world.reconcile();
    expect(world.writes.filter((w) => w.startsWith('get '))).toEqual([]);
    expect(world.writes).toContain('finalizer removed');
  });
});

describe('a consumer cluster nothing was ever delivered to', () => {
  it('does not hold the claim once it names it no more, whether its credentials were missing or its server never answered', async () => {
    for (const neverReached of ['credentials', 'server'] as const) {
      const world = deliveringWorld({ neverReached });
      await world.reconcile();
      expect(world.status()?.deliveries?.[0]).toMatchObject({ delivered: false });
      expect(world.writes.filter((w) => w.startsWith('create') || w.startsWith('update'))).toEqual([]);
      // Dropped from the spec (or the claim deleted): nothing of the claim's is there to remove.
      world.noConsumers();
      world.noCopy();
      await world.reconcile();
      expect(world.writes).toContain('finalizer removed');
      expect(world.status()?.deliveries ?? []).toEqual([]);
    }
  });
});

describe('a delivery to a place the claim has not recorded', () => {
  it('is recorded before its Secret is written, so a pass cut off after the write still finds the Secret to remove', async () => {
    const world = deliveringWorld();
    await world.reconcile();
    expect(world.writes).toEqual([
      `status ${JSON.stringify([['infra/eu-1/app', false]])}`,
      'create Secret app/app-s3',
      `status ${JSON.stringify([['infra/eu-1/app', true]])}`,
    ]);
  });

  it('written by a pass whose record of it was refused, is removed once the spec no longer names its place', async () => {
    const world = deliveringWorld({ refuse: 'delivered' });
    expect(await world.reconcile()).toEqual({ kind: 'requeue' });
    expect(world.consumerSecrets.size).toBe(1);
    world.noConsumers();
    await world.reconcile();
    expect(world.writes).toContain('delete Secret app/app-s3');
    expect(world.consumerSecrets.size).toBe(0);
  });

  it('is not written while its record cannot be', async () => {
    const world = deliveringWorld({ refuse: 'intent' });
    expect(await world.reconcile()).toEqual({ kind: 'requeue' });
    expect(world.writes).toEqual([]);
  });

  it("is not recorded where someone else's Secret stands: the refusal writes the status once", async () => {
    const world = deliveringWorld({ there: 'foreign' });
    await world.reconcile();
    expect(world.writes).toEqual([`status ${JSON.stringify([['infra/eu-1/app', false]])}`]);
  });

  it('fails that place alone when the Secret there keeps changing: the pass ends and records it', async () => {
    const world = deliveringWorld({ there: 'ours, contended' });
    expect(await world.reconcile()).toEqual({ kind: 'requeueAfter', ms: 30_000 });
    expect(world.writes).toEqual([
      `status ${JSON.stringify([['infra/eu-1/app', false]])}`,
      'update Secret app/app-s3',
      `status ${JSON.stringify([['infra/eu-1/app', false]])}`,
    ]);
  });

  it('made immutable there, is not waited for by a rotation: the place keeps no keys on record', async () => {
    // Delivered before, with the keys rotation now replaces.
    const before = { to: 'infra/eu-1/app', secretName: 'app-s3', delivered: true, endpoint: 'ClusterDNS' as const, keys: 'old-keys' };
    const world = deliveringWorld({ there: 'ours, immutable', recorded: [before] });
    await world.reconcile();
    expect(world.status()?.deliveries).toEqual([
      expect.objectContaining({ to: 'infra/eu-1/app', delivered: false, reason: 'ConsumerSecretRefused' }),
    ]);
    expect(world.status()?.deliveries?.[0]?.keys).toBeUndefined();
  });

  it('made again there as another type, is not waited for by a rotation: the place keeps no keys on record', async () => {
    const before = { to: 'infra/eu-1/app', secretName: 'app-s3', delivered: true, endpoint: 'ClusterDNS' as const, keys: 'old-keys' };
    const world = deliveringWorld({ there: 'ours, another type', recorded: [before] });
    await world.reconcile();
    expect(world.writes).not.toContain('update Secret app/app-s3');
    expect(world.status()?.deliveries).toEqual([
      expect.objectContaining({ to: 'infra/eu-1/app', delivered: false, reason: 'ConsumerSecretRefused' }),
    ]);
    expect(world.status()?.deliveries?.[0]?.keys).toBeUndefined();
  });

  it('updated, keeps the finalizers and owner references others put on it', async () => {
    const world = deliveringWorld({ there: 'ours, kept by others' });
    await world.reconcile();
    expect(world.writes).toContain('update Secret app/app-s3');
    const updated = world.consumerSecrets.get('app/app-s3')!;
    expect(updated.data).toHaveProperty('AWS_ACCESS_KEY_ID');
    expect(updated.metadata).toMatchObject({ finalizers: [OTHERS], ownerReferences: [expect.objectContaining({ uid: 'keeper-uid' })] });
  });

  it('made by a write whose answer was lost, is removed once its place is dropped, though a pass between wrote nothing', async () => {
    const world = deliveringWorld({ answerLost: true });
    await world.reconcile();
    expect(world.consumerSecrets.size).toBe(1);
    // A pass that writes nothing there: the claim's copy of its keys is being rewritten.
    world.noCopy();
    await world.reconcile();
    expect(world.status()?.deliveries?.[0]).toMatchObject({ reason: 'WaitingForConnectionSecret', endpoint: 'ClusterDNS' });
    world.noConsumers();
    await world.reconcile();
    expect(world.writes).toContain('delete Secret app/app-s3');
    expect(world.consumerSecrets.size).toBe(0);
  });

  it('delivered through another Provider of the same cluster, is not deleted as the place the claim moved from', async () => {
    const before = { to: 'infra/eu-1/app', secretName: 'app-s3', delivered: true, endpoint: 'ClusterDNS' as const, keys: 'old-keys' };
    // Both Providers reach one cluster (the world resolves every Provider to it).
    const world = deliveringWorld({ there: 'ours, kept by others', recorded: [before], through: 'eu-2' });
    await world.reconcile();
    expect(world.writes).not.toContain('delete Secret app/app-s3');
    expect(world.consumerSecrets.has('app/app-s3')).toBe(true);
    expect(world.status()?.deliveries).toEqual([expect.objectContaining({ to: 'infra/eu-2/app', delivered: true })]);
  });
});
