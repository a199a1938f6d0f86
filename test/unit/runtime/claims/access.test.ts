// The BucketAccess reconciler's mark on the Bucket it names (LABEL_GRANTED, which admission reads to
// refuse the Bucket's deletion): only accesses the Bucket allows count, since an access's
// resourceRef is its app team's to write. Against caches and a client that records its writes.
import { describe, expect, it } from '@jest/globals';
import type { Client } from '../../../../src/kit/kube/client.ts';
import type { ObjectKey } from '../../../../src/kit/kube/object-key.ts';
import type { ResourceType } from '../../../../src/kit/kube/resources.ts';
import { AccessReconciler, type AccessClaim, type AccessMode } from '../../../../src/runtime/claims/access.ts';
import { grantHeld } from '../../../../src/runtime/claims/sharing.ts';
import { FINALIZER_CLAIM, type Claim } from '../../../../src/runtime/claims/claim.ts';
import { ANNOTATION_GRANT_OF, LABEL_GRANTED } from '../../../../src/runtime/labels.ts';
import type { ManagedResource } from '../../../../src/runtime/managed/types.ts';
import type { SecretObject } from '../../../../src/runtime/managed/publisher.ts';
import { mapCache } from '../../../kit/map-cache.ts';
import { KubeError } from '../../../../src/kit/kube/errors.ts';

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

// A grant's lifecycle against a client that records its writes, in order.
const Stores = t('Store');
const Grants = t('Grant');
const platform = 'platform';
const reader: AccessClaim = {
  apiVersion: Accesses.apiVersion,
  kind: 'BucketAccess',
  metadata: { name: 'reader', namespace: 'team-b', uid: 'reader-uid', finalizers: [FINALIZER_CLAIM] },
  spec: { bucketRef: { namespace: 'team-a', name: 'orders' }, mode: 'ReadOnly', writeConnectionSecretToRef: { name: 'orders-ro' } },
};
const readerRef = { apiVersion: Accesses.apiVersion, kind: 'BucketAccess', name: 'reader', namespace: 'team-b', uid: 'reader-uid' };
const grantOf = (name: string): ManagedResource =>
  ({
    apiVersion: Grants.apiVersion,
    kind: 'Grant',
    metadata: { name, namespace: platform, uid: `${name}-uid` },
    spec: { claimRef: readerRef, reclaimPolicy: 'Delete' },
  }) as ManagedResource;

/** The reader, recording that it holds the grant `held`. */
const holding: AccessClaim = {
  ...reader,
  spec: { ...reader.spec, resourceRef: { apiVersion: Grants.apiVersion, kind: 'Grant', name: 'held', namespace: platform } },
};

function grantWorld(o: {
  access: AccessClaim;
  grants?: ManagedResource[];
  live?: Record<string, unknown>;
  secrets?: SecretObject[];
  /** Creates answer AlreadyExists for an object gone by the time it is read. */
  madeAndGone?: boolean;
  /** The Bucket carries the mark of a grant held; writing it fails (a timeout, a restart of the API server). */
  marked?: { fails: boolean };
  /** The kind the Bucket is bound to, if not the Store its grants reach. */
  boundTo?: string;
  /** The Bucket is bound to nothing (made anew under its name, its class refusing it). */
  unbound?: boolean;
  /** The Bucket names its resource, which is not ready yet: not Bound. */
  waiting?: boolean;
  /** The lent resource's spec.managementPolicies. */
  policies?: string[];
}) {
  const writes: string[] = [];
  const events: string[] = [];
  const live = new Map<string, unknown>(Object.entries(o.live ?? {}));
  const key = (type: ResourceType, k: ObjectKey) => `${type.kind} ${k.namespace}/${k.name}`;
  const client = {
    get: async (type: ResourceType, k: ObjectKey) => live.get(key(type, k)),
    // A live read by name (readLive).
    list: async (type: ResourceType, { namespace, fieldSelector }: { namespace?: string; fieldSelector: string }) => {
      const found = live.get(key(type, { namespace, name: fieldSelector.replace('metadata.name=', '') }));
      return { items: found ? [found] : [], resourceVersion: '1' };
    },
    create: async (type: ResourceType, obj: ManagedResource) => {
      writes.push(`create ${key(type, obj.metadata)}`);
      if (o.madeAndGone) throw new KubeError(409, 'AlreadyExists', `${obj.metadata.name} already exists`);
      const made = { ...obj, metadata: { ...obj.metadata, uid: `${obj.metadata.name}-uid` } };
      live.set(key(type, obj.metadata), made);
      return made;
    },
    update: async (type: ResourceType, obj: AccessClaim) => {
      writes.push(`update ${key(type, obj.metadata)} resourceRef=${JSON.stringify(obj.spec?.resourceRef ?? null)}`);
      return obj;
    },
    updateStatus: async (type: ResourceType, obj: ManagedResource) => {
      if (type !== Accesses) writes.push(`status ${key(type, obj.metadata)} ${obj.status?.bindingPhase}`);
      else events.push(`status ${JSON.stringify(obj.status?.conditions?.map((c) => c.reason))}`);
      return obj;
    },
    delete: async (type: ResourceType, k: ObjectKey) => void writes.push(`delete ${key(type, k)}`),
    mergePatch: async (type: ResourceType, k: ObjectKey, patch: unknown) => {
      if (type !== Buckets) return {};
      if (o.marked?.fails) throw new KubeError(504, 'Timeout', 'the server was unable to return a response in the time allotted');
      writes.push(`mark ${key(type, k)} ${JSON.stringify(patch)}`);
      return {};
    },
    jsonPatch: async (_type: ResourceType, _k: ObjectKey, ops: unknown, obj?: AccessClaim) => {
      writes.push(`patch ${JSON.stringify(ops)}`);
      return obj ?? {};
    },
  } as unknown as Client;
  const store = {
    apiVersion: Stores.apiVersion,
    kind: 'Store',
    metadata: { name: 'orders-store', namespace: platform, uid: 'store-uid' },
    spec: {
      claimRef: { apiVersion: Buckets.apiVersion, kind: 'Bucket', name: 'orders', namespace: 'team-a', uid: 'orders-uid' },
      ...(o.policies ? { managementPolicies: o.policies } : {}),
    },
  } as unknown as ManagedResource;
  const bound = o.unbound
    ? { ...bucket, metadata: { ...bucket.metadata, uid: 'orders-anew-uid' } }
    : {
        ...bucket,
        metadata: { ...bucket.metadata, ...(o.marked ? { labels: { [LABEL_GRANTED]: 'true' } } : {}) },
        spec: {
          ...bucket.spec,
          resourceRef: { apiVersion: Stores.apiVersion, kind: o.boundTo ?? 'Store', name: 'orders-store', namespace: platform },
        },
        status: { bindingPhase: o.waiting ? 'Unbound' : 'Bound' },
      };
  const reconciler = new AccessReconciler({
    client,
    recorder: {
      normal: (_o: unknown, reason: string) => events.push(reason),
      warning: (_o: unknown, reason: string) => events.push(reason),
    } as never,
    accesses: { type: Accesses, cache: mapCache(new Map([['team-b/reader', o.access]])) },
    buckets: { type: Buckets, cache: mapCache(new Map([['team-a/orders', bound as never]])) },
    grantors: [
      {
        managed: Stores,
        grants: Grants,
        grant: (_mr, _mode, name) => ({ apiVersion: Grants.apiVersion, kind: 'Grant', metadata: { name }, spec: {} }) as ManagedResource,
        // Which bucket a grant reaches: a held one may say (one made for the bucket of a Bucket before).
        reaches: (g) => (g.spec as { reaches?: string }).reaches ?? 'orders',
      },
    ],
    lent: [{ type: Stores, cache: mapCache(new Map([[`${platform}/orders-store`, store]])) }],
    granted: [{ type: Grants, cache: mapCache(new Map((o.grants ?? []).map((g) => [`${platform}/${g.metadata.name}`, g]))) }],
    secrets: mapCache(new Map((o.secrets ?? []).map((s) => [`${s.metadata.namespace}/${s.metadata.name}`, s]))),
  });
  return { writes, events, reconcile: () => reconciler.reconcile('team-b/reader', new AbortController().signal) };
}

describe("an access's grant", () => {
  it('is named in spec.resourceRef before it is made, so that a deletion finds it however late its cache is', async () => {
    const world = grantWorld({ access: reader });
    await world.reconcile();
    const name = world.writes.find((w) => w.startsWith('create '))!.split('/')[1]!;
    expect(world.writes.slice(0, 3)).toEqual([
      `update BucketAccess team-b/reader resourceRef=${JSON.stringify({ apiVersion: Grants.apiVersion, kind: 'Grant', name, namespace: platform })}`,
      `create Grant ${platform}/${name}`,
      `update BucketAccess team-b/reader resourceRef=${JSON.stringify({ apiVersion: Grants.apiVersion, kind: 'Grant', name, namespace: platform, uid: `${name}-uid` })}`,
    ]);
  });

  it('made by an earlier pass and gone by the time it is read: tried again, quietly, and not said to be made', async () => {
    const world = grantWorld({ access: reader, madeAndGone: true });
    expect(await world.reconcile()).toEqual({ kind: 'requeue' });
    expect(world.events).toEqual([]);
  });

  it('is revoked when the access is deleted before the cache of grants has heard of it', async () => {
    const deleting: AccessClaim = {
      ...reader,
      metadata: { ...reader.metadata, deletionTimestamp: '2026-11-29T00:00:00Z' },
      spec: { ...reader.spec, resourceRef: { apiVersion: Grants.apiVersion, kind: 'Grant', name: 'just-made', namespace: platform } },
    };
    const world = grantWorld({ access: deleting, live: { [`Grant ${platform}/just-made`]: grantOf('just-made') } });
    await world.reconcile();
    expect(world.writes.filter((w) => !w.startsWith('patch'))).toEqual([
      `status Grant ${platform}/just-made Released`,
      `delete Grant ${platform}/just-made`,
      `mark Bucket team-a/orders ${JSON.stringify({ metadata: { labels: { [LABEL_GRANTED]: null } } })}`,
    ]);
  });

  it("takes the Bucket's mark away before the access's finalizer, and keeps the finalizer while that write fails", async () => {
    const deleting: AccessClaim = {
      ...reader,
      metadata: { ...reader.metadata, deletionTimestamp: '2026-11-29T00:00:00Z' },
      spec: { ...reader.spec, resourceRef: { apiVersion: Grants.apiVersion, kind: 'Grant', name: 'held', namespace: platform } },
    };
    const live = { [`Grant ${platform}/held`]: grantOf('held') };
    const world = grantWorld({ access: deleting, live, grants: [grantOf('held')], marked: { fails: false } });
    await world.reconcile();
    const finalizerRemoved = world.writes.findIndex((w) => w.startsWith('patch') && w.includes('"remove"'));
    expect(finalizerRemoved).toBeGreaterThan(0);
    expect(world.writes.slice(finalizerRemoved - 1, finalizerRemoved)).toEqual([
      `mark Bucket team-a/orders ${JSON.stringify({ metadata: { labels: { [LABEL_GRANTED]: null } } })}`,
    ]);
    // Cut off at the mark: the finalizer stays, so a later pass comes back to write it.
    const failing = grantWorld({ access: deleting, live, grants: [grantOf('held')], marked: { fails: true } });
    await failing.reconcile();
    expect(failing.writes.filter((w) => w.startsWith('patch') && w.includes('"remove"'))).toEqual([]);
  });

  it('is revoked when its Bucket, made anew under the same name, is bound to nothing (its class refuses it): it lends nothing yet', async () => {
    const world = grantWorld({
      access: holding,
      live: { [`Grant ${platform}/held`]: grantOf('held') },
      grants: [grantOf('held')],
      unbound: true,
    });
    await world.reconcile();
    expect(world.writes).toContain(`delete Grant ${platform}/held`);
  });

  it("is revoked while its Bucket, made anew under the name, waits for a new resource: it reaches the old one's bucket", async () => {
    const old = { ...grantOf('held'), spec: { ...grantOf('held').spec, reaches: 'orders-before' } } as ManagedResource;
    const world = grantWorld({ access: holding, live: { [`Grant ${platform}/held`]: old }, grants: [old], waiting: true });
    await world.reconcile();
    expect(world.writes).toContain(`delete Grant ${platform}/held`);
    expect(world.writes).not.toContainEqual(expect.stringMatching(/^create /));
    // One that reaches the bucket lent now is kept while the Bucket only waits (its Secret on its way, say).
    const current = grantWorld({
      access: holding,
      live: { [`Grant ${platform}/held`]: grantOf('held') },
      grants: [grantOf('held')],
      waiting: true,
    });
    await current.reconcile();
    expect(current.writes.filter((w) => w.startsWith('delete'))).toEqual([]);
  });

  it('made beside a resource its Bucket no longer lends (made anew, bound elsewhere), is revoked once the new one is made', async () => {
    const world = grantWorld({ access: reader, grants: [grantOf('held')] });
    await world.reconcile();
    const made = world.writes.findIndex((w) => w.startsWith('create Grant'));
    expect(made).toBeGreaterThanOrEqual(0);
    expect(world.writes.indexOf(`delete Grant ${platform}/held`)).toBeGreaterThan(made);
    // What names the grant it keeps stays: its resourceRef (the Bucket's mark counts it by that).
    expect(world.writes.slice(made).filter((w) => w.includes('resourceRef=null'))).toEqual([]);
  });

  it('made beside a resource its Bucket no longer lends and going already, is not asked again, nor is anything else written for it', async () => {
    const going = { ...grantOf('held'), metadata: { ...grantOf('held').metadata, deletionTimestamp: '2026-11-29T00:00:00Z' } };
    const world = grantWorld({ access: reader, grants: [going as ManagedResource] });
    await world.reconcile();
    expect(world.writes.filter((w) => w.startsWith('delete') || w.includes('resourceRef=null'))).toEqual([]);
  });

  it('is revoked when its Bucket, made anew under the same name, is bound to a kind no grant reaches', async () => {
    const world = grantWorld({
      access: holding,
      live: { [`Grant ${platform}/held`]: grantOf('held') },
      grants: [grantOf('held')],
      boundTo: 'CephBucket',
    });
    await world.reconcile();
    expect(world.writes).toContain(`delete Grant ${platform}/held`);
    expect(world.events).toContainEqual(expect.stringContaining('GrantsNotSupported'));
  });

  it('is not made while the resource it lends is paused (no policies); one held of its bucket stays, one of another bucket goes', async () => {
    const world = grantWorld({ access: reader, policies: [] });
    await world.reconcile();
    expect(world.writes.filter((w) => w.startsWith('create'))).toEqual([]);
    expect(world.events).toContainEqual(expect.stringContaining('ReconcilePaused'));
    const held = grantWorld({
      access: holding,
      live: { [`Grant ${platform}/held`]: grantOf('held') },
      grants: [grantOf('held')],
      policies: [],
    });
    await held.reconcile();
    expect(held.writes.filter((w) => w.startsWith('delete') || w.startsWith('create'))).toEqual([]);
    // Made by the pass before, not cached yet: read as the access records it, and kept too.
    const fresh = grantWorld({ access: holding, live: { [`Grant ${platform}/held`]: grantOf('held') }, grants: [], policies: [] });
    await fresh.reconcile();
    expect(fresh.writes.filter((w) => w.startsWith('delete') || w.startsWith('create'))).toEqual([]);
    // A grant of the bucket a Bucket of that name lent before (made anew since): it reaches a bucket no one lends it.
    const old = { ...grantOf('held'), spec: { ...grantOf('held').spec, reaches: 'the bucket before' } } as ManagedResource;
    const elsewhere = grantWorld({ access: holding, live: { [`Grant ${platform}/held`]: old }, grants: [old], policies: [] });
    await elsewhere.reconcile();
    expect(elsewhere.writes).toContain(`delete Grant ${platform}/held`);
  });

  it('is never made, and a held one revoked, on a resource only observed (an import): nothing is made in its store', async () => {
    const world = grantWorld({ access: reader, policies: ['Observe'] });
    await world.reconcile();
    expect(world.writes.filter((w) => w.startsWith('create'))).toEqual([]);
    expect(world.events).toContainEqual(expect.stringContaining('GrantsNotSupported'));
    const held = grantWorld({
      access: holding,
      live: { [`Grant ${platform}/held`]: grantOf('held') },
      grants: [grantOf('held')],
      policies: ['Observe', 'Update'],
    });
    await held.reconcile();
    expect(held.writes).toContain(`delete Grant ${platform}/held`);
  });

  it("takes the Bucket's mark away when it revokes an orphaned grant of it, though the access of that name now names another Bucket", async () => {
    // Made again under the name after its finalizer was taken off, it holds a grant of another Bucket.
    const elsewhere: AccessClaim = {
      ...reader,
      spec: {
        ...reader.spec,
        bucketRef: { namespace: 'team-a', name: 'other' },
        resourceRef: { apiVersion: Grants.apiVersion, kind: 'Grant', name: 'mine', namespace: platform },
      },
    };
    const held = grantOf('held');
    const orphan = {
      ...held,
      metadata: { ...held.metadata, annotations: { [ANNOTATION_GRANT_OF]: 'team-a/orders' } },
      spec: { ...held.spec, claimRef: { ...readerRef, uid: 'earlier-reader-uid' } },
    } as ManagedResource;
    const world = grantWorld({
      access: elsewhere,
      grants: [orphan],
      live: { 'BucketAccess team-b/reader': elsewhere },
      marked: { fails: false },
    });
    await world.reconcile();
    expect(world.writes).toContain(`delete Grant ${platform}/held`);
    expect(world.writes).toContain(`mark Bucket team-a/orders ${JSON.stringify({ metadata: { labels: { [LABEL_GRANTED]: null } } })}`);
  });

  it("takes the Bucket's mark away on its way out even when the cache has not seen the mark yet", async () => {
    const deleting: AccessClaim = {
      ...reader,
      metadata: { ...reader.metadata, deletionTimestamp: '2026-11-29T00:00:00Z' },
      spec: { ...reader.spec, resourceRef: { apiVersion: Grants.apiVersion, kind: 'Grant', name: 'held', namespace: platform } },
    };
    const world = grantWorld({ access: deleting, live: { [`Grant ${platform}/held`]: grantOf('held') }, grants: [grantOf('held')] });
    await world.reconcile();
    expect(world.writes).toContain(`mark Bucket team-a/orders ${JSON.stringify({ metadata: { labels: { [LABEL_GRANTED]: null } } })}`);
  });

  it("is not taken for the access's when the resource its resourceRef names belongs to another claim", async () => {
    const deleting: AccessClaim = {
      ...reader,
      metadata: { ...reader.metadata, deletionTimestamp: '2026-11-29T00:00:00Z' },
      spec: { ...reader.spec, resourceRef: { apiVersion: Grants.apiVersion, kind: 'Grant', name: 'theirs', namespace: platform } },
    };
    const theirs = { ...grantOf('theirs'), spec: { claimRef: { ...readerRef, namespace: 'team-c', uid: 'c-uid' } } };
    const world = grantWorld({ access: deleting, live: { [`Grant ${platform}/theirs`]: theirs } });
    await world.reconcile();
    expect(world.writes.filter((w) => !w.startsWith('patch'))).toEqual([]);
  });

  it("takes its copy of the grant's Secret along once nothing is held, when the Bucket stops sharing", async () => {
    const copy = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'orders-ro', namespace: 'team-b', uid: 'copy-uid', ownerReferences: [{ uid: 'reader-uid', controller: true }] },
    } as unknown as SecretObject;
    const refused: AccessClaim = { ...reader, spec: { ...reader.spec, mode: 'ReadWrite' } };
    const world = grantWorld({ access: refused, secrets: [copy], live: { 'Secret team-b/orders-ro': copy } });
    await world.reconcile();
    expect(world.writes).toEqual(['delete Secret team-b/orders-ro']);
  });
});

describe('grantHeld: what delivery asks before it says where a Bucket is', () => {
  const bucket = (shareWith: { namespace: string; modes?: AccessMode[] }[]): Claim =>
    ({
      apiVersion: 'storage.crossplane.io/v1alpha1',
      kind: 'Bucket',
      metadata: { name: 'orders', namespace: 'b', uid: 'bucket-uid' },
      spec: { shareWith },
    }) as unknown as Claim;
  const access = (resourceRef?: object, mode: AccessMode = 'ReadOnly'): AccessClaim =>
    ({
      apiVersion: 'storage.crossplane.io/v1alpha1',
      kind: 'BucketAccess',
      metadata: { name: 'x', namespace: 'a', uid: 'access-uid' },
      spec: { bucketRef: { namespace: 'b', name: 'orders' }, mode, ...(resourceRef ? { resourceRef } : {}) },
    }) as unknown as AccessClaim;
  const grant = { name: 'a-x-bcdfg', namespace: 'infra', kind: 'MinioBucket' };

  it('holds a grant only when the access recorded one and the Bucket shares with its namespace, in its mode', () => {
    expect(grantHeld(bucket([{ namespace: 'a' }]), access(grant))).toBe(true);
    // A resourceRef is the app team's to write: alone, it proves nothing.
    expect(grantHeld(bucket([]), access(grant))).toBe(false);
    expect(grantHeld(bucket([{ namespace: 'c' }]), access(grant))).toBe(false);
    expect(grantHeld(bucket([{ namespace: 'a' }]), access(grant, 'ReadWrite'))).toBe(false);
    expect(grantHeld(bucket([{ namespace: 'a' }]), access())).toBe(false);
    expect(grantHeld(undefined, access(grant))).toBe(false);
  });
});
