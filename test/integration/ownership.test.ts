// Ownership you can trust: each defect of the ownership review, on real API servers. provider-rook
// never deletes, adopts or exposes what is not the caller's (see docs/operations/ownership.md).
import { mkdtempSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { pkiPaths } from '../kit/pki.ts';
import { Buckets, BucketClasses, type App } from '../../src/app.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { LeakReport } from '../../src/runtime/native/leaks.ts';
import type { ObjectStore } from '../../src/backends/rook-minio/api.ts';
import type { Provider } from '../../src/apis/provider.ts';
import { RookObjectStores } from '../../src/backends/rook-minio/objectstore.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { KubeError } from '../../src/kit/kube/errors.ts';
import { Namespaces, Secrets, Services, StatefulSets, type ResourceType } from '../../src/kit/kube/resources.ts';
import { secretText } from '../../src/runtime/providers/credentials.ts';
import { publishSecret } from '../../src/runtime/managed/publisher.ts';
import { ANNOTATION_PAUSED } from '../../src/kit/meta.ts';
import { ANNOTATION_MADE_AT, ANNOTATION_TARGET_UID, OwnershipMarks } from '../../src/runtime/ownership/marks.ts';
import { loadOwnershipKey } from '../../src/runtime/ownership/key.ts';
import { DEFAULT_OWNERSHIP_KEY_SECRET } from '../../src/runtime/system/provider-system.ts';
import { Providers } from '../../src/runtime/system/provider-status.ts';
import { testCluster, uniqueName } from '../kit/env.ts';
import { createNamespace, eventsFor, identityClient, providerSecretKeys, startTestApp, writeSecret } from '../kit/provider.ts';
import { eventually } from '../kit/eventually.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { cond } from '../kit/conditions.ts';
import { bucketClass } from '../kit/claims.ts';

type Cond = { type: string; status: string; reason: string; message?: string };
type Obj = KubeObjectLike & {
  metadata: KubeObjectLike['metadata'] & {
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    deletionTimestamp?: string;
  };
  [k: string]: unknown;
};
const Roles: ResourceType = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', plural: 'roles', namespaced: true };

const env = withProviderRook({
  namespaces: { platform: 'own' },
  roles: true,
  app: { pollIntervalMs: 2_000, leakGraceMs: 0 },
  before: async () => {
    await provider(env.ns.platform, 'target', providerSecretKeys(testCluster('target')));
    platformTeam = await identityClient(
      testCluster('control'),
      env.control,
      { namespace: env.ns.platform, name: 'platform' },
      { role: 'provider-rook:provider-admin', clusterWide: 'provider-rook:platform-team' },
    );
  },
  // The other processes some tests start beside it.
  after: async () => {
    await Promise.all(apps.map((a) => a.stop()));
  },
});

/** A platform team: provider-rook:platform-team cluster-wide, provider-rook:provider-admin in its own namespace. */
let platformTeam: KubeClient;
const apps: App[] = [];

function managed(
  name: string,
  opts: {
    namespace?: string;
    targetNamespace?: string;
    provider?: string;
    reclaimPolicy?: string;
    annotations?: Record<string, string>;
    credentials?: { name: string; namespace: string };
  } = {},
) {
  return {
    apiVersion: kinds.ObjectStore.apiVersion,
    kind: 'ObjectStore',
    metadata: { name, namespace: opts.namespace ?? env.ns.platform, ...(opts.annotations ? { annotations: opts.annotations } : {}) },
    spec: {
      forProvider: { scope: { nodeCount: 4 }, ...(opts.credentials ? { credentials: opts.credentials } : {}) },
      targetNamespace: opts.targetNamespace ?? uniqueName('minio'),
      providerRef: { name: opts.provider ?? 'target' },
      reclaimPolicy: opts.reclaimPolicy ?? 'Delete',
      writeConnectionSecretToRef: { name: `${name}-conn` },
    },
  } as unknown as ObjectStore;
}

const getMr = (name: string, ns = env.ns.platform) => env.control.get<ObjectStore>(kinds.ObjectStore, { namespace: ns, name });
const ready = async (name: string, ns = env.ns.platform): Promise<ObjectStore> => {
  let last: ObjectStore | undefined;
  try {
    return await eventually(
      async () => {
        last = await getMr(name, ns);
        return cond(last, 'Ready')?.status === 'True' && cond(last, 'Synced')?.status === 'True' ? last : undefined;
      },
      `${ns}/${name} to be Ready and Synced`,
      45_000,
    );
  } catch (err) {
    throw new Error(
      `${(err as Error).message}; last seen: ${JSON.stringify({ annotations: last?.metadata.annotations, finalizers: last?.metadata.finalizers, status: last?.status })}`,
      { cause: err },
    );
  }
};
const syncedReason = (name: string, reason: string, ns = env.ns.platform) =>
  eventually(
    async () => {
      const mr = await getMr(name, ns);
      return cond(mr, 'Synced')?.reason === reason ? mr : undefined;
    },
    `${ns}/${name} to say Synced=False/${reason}`,
    45_000,
  );

async function provider(ns: string, name: string, keys: Record<string, string>, client = env.control): Promise<void> {
  await writeSecret(client, { namespace: ns, name: `${name}-creds` }, keys);
  await client.apply(Providers, {
    apiVersion: Providers.apiVersion,
    kind: 'Provider',
    metadata: { name, namespace: ns },
    spec: { credentialsSecretRef: { name: `${name}-creds` } },
  });
}

/**
 * A second provider-rook (grace period an hour), for its sweeps only: left running, it would reconcile
 * the platform's resources beside the main app (two leaders at once, which leader election prevents),
 * and race it in later tests.
 */
async function withSweeper<T>(use: (sweeper: App) => Promise<T>): Promise<T> {
  const sweeper = await startTestApp(testCluster('control'), {
    namespaces: [env.ns.platform],
    controlPlaneId: env.app.controlPlaneId,
    leakGraceMs: 3_600_000,
  });
  try {
    return await use(sweeper);
  } finally {
    await sweeper.stop();
  }
}

/** Deletes a managed resource behind provider-rook's back (finalizer stripped), as a restore or a hand edit would. */
async function removeBehindItsBack(name: string, ns = env.ns.platform): Promise<void> {
  // Paused in the same write, or a reconcile could put the finalizer back before the delete and
  // then delete the store properly: no leak would be left.
  await env.control.mergePatch(
    kinds.ObjectStore,
    { namespace: ns, name },
    {
      metadata: { finalizers: null, annotations: { [ANNOTATION_PAUSED]: 'true' } },
    },
  );
  await env.control.delete(kinds.ObjectStore, { namespace: ns, name });
  await eventually(async () => (await getMr(name, ns)) === undefined, `${ns}/${name} to be gone`);
}

describe('data loss', () => {
  it('1a. a deployment never judges owners in namespaces it does not watch, even with the same control-plane id', async () => {
    const name = uniqueName('mine');
    await env.control.create(kinds.ObjectStore, managed(name));
    const mr = await ready(name);
    const store = (await env.target.get<Obj>(RookObjectStores, { namespace: mr.spec.targetNamespace, name }))!;
    const other = await createNamespace(env.control, 'other');
    await provider(other, 'target', providerSecretKeys(testCluster('target')));
    const neighbour = await startTestApp(testCluster('control'), {
      namespaces: [other],
      controlPlaneId: env.app.controlPlaneId,
      leakGraceMs: 0,
    });
    apps.push(neighbour);
    await eventually(
      async () => cond(await env.control.get<Provider>(Providers, { namespace: other, name: 'target' }), 'Ready')?.status === 'True',
      'the neighbour to reach the target',
    );
    const reports = await neighbour.leaks.sweep();
    expect(reports.filter((r) => r.owner === `${env.ns.platform}/${name}`)).toEqual([]);
    expect((await env.target.get<Obj>(RookObjectStores, { namespace: mr.spec.targetNamespace, name }))?.metadata.uid).toBe(
      store.metadata.uid,
    );
    expect(await env.target.get(Secrets, { namespace: mr.spec.targetNamespace, name: `${name}-access-keys` })).toBeDefined();
  }, 90_000);

  it('1b. a restored managed resource (same name, new uid) takes its store back, with its keys, and nothing is swept', async () => {
    const name = uniqueName('restore');
    await env.control.create(kinds.ObjectStore, managed(name));
    const before = await ready(name);
    const ns = before.spec.targetNamespace;
    const store = (await env.target.get<Obj>(RookObjectStores, { namespace: ns, name }))!;
    const keys = (await env.target.get<Obj>(Secrets, { namespace: ns, name: `${name}-access-keys` }))!;
    // The backup: the resource as it was, without server-set fields.
    const {
      uid: _u,
      resourceVersion: _r,
      creationTimestamp: _c,
      generation: _g,
      managedFields: _m,
      finalizers: _f,
      ...meta
    } = before.metadata as unknown as Record<string, unknown>;
    await removeBehindItsBack(name);
    const restored = await env.control.create<ObjectStore>(kinds.ObjectStore, {
      ...before,
      metadata: meta,
      status: undefined,
    } as unknown as ObjectStore);
    expect(restored.metadata.uid).not.toBe(before.metadata.uid);
    expect(await env.app.leaks.sweep()).toEqual([]);
    await eventually(
      async () =>
        (await env.target.get<Obj>(RookObjectStores, { namespace: ns, name }))?.metadata.labels?.['rook.crossplane.io/owner-uid'] ===
        restored.metadata.uid,
      'the store to carry the new owner uid',
    );
    await ready(name);
    const after = (await env.target.get<Obj>(RookObjectStores, { namespace: ns, name }))!;
    expect(after.metadata.uid).toBe(store.metadata.uid);
    expect((await env.target.get<Obj>(Secrets, { namespace: ns, name: `${name}-access-keys` }))?.data).toEqual(keys.data);
    expect(await env.app.leaks.sweep()).toEqual([]);
  }, 90_000);

  it('1b. (connection Secret) a Secret controlled by an earlier incarnation (same kind and name, another uid) is not taken over', async () => {
    // Only a controller reference with the owner's own uid makes a Secret ours: after a
    // real restore the garbage collector deletes the earlier one (its owner's uid is gone), and the
    // restored resource then creates its own. The owner here is of a kind the collector cannot
    // resolve, so only the publisher acts on this Secret.
    const ns = await createNamespace(env.control, 'pub');
    const name = uniqueName('pub');
    const owner = (uid: string, ownerName = name) => ({
      apiVersion: 'tests.example.com/v1',
      kind: 'Thing',
      metadata: { name: ownerName, uid },
    });
    const earlier = owner('00000000-0000-0000-0000-000000000001');
    await publishSecret({ client: env.control }, earlier, { namespace: ns, name: `${name}-conn` }, { endpoint: 'old' });
    const before = (await env.control.get<Obj & { data: Record<string, string> }>(Secrets, { namespace: ns, name: `${name}-conn` }))!;
    for (const other of [owner('00000000-0000-0000-0000-000000000002'), owner('00000000-0000-0000-0000-000000000003', `${name}-other`)]) {
      const err = await publishSecret({ client: env.control }, other, { namespace: ns, name: `${name}-conn` }, { endpoint: 'new' }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((err as { reason?: string }).reason).toBe('ConnectionSecretConflict');
    }
    const after = (await env.control.get<Obj & { data: Record<string, string> }>(Secrets, { namespace: ns, name: `${name}-conn` }))!;
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect(secretText(after.data)).toEqual({ endpoint: 'old' });
    // Its own controller still writes it.
    expect(await publishSecret({ client: env.control }, earlier, { namespace: ns, name: `${name}-conn` }, { endpoint: 'newer' })).toBe(
      true,
    );
  });

  it('1c. a leak is deleted only when its owner is proven gone and it is older than the grace period; Retain is never a leak', async () => {
    const name = uniqueName('leak');
    const kept = uniqueName('kept');
    await env.control.create(kinds.ObjectStore, managed(name));
    await env.control.create(kinds.ObjectStore, managed(kept, { reclaimPolicy: 'Retain' }));
    const mr = await ready(name);
    const keptMr = await ready(kept);
    await removeBehindItsBack(name);
    await env.control.delete(kinds.ObjectStore, { namespace: env.ns.platform, name: kept });
    await eventually(async () => (await getMr(kept)) === undefined, 'the Retain resource to be gone');
    const reports = await withSweeper(async (sweeper) => {
      expect(await sweeper.leaks.sweep()).toEqual([]); // young objects are never judged
      const at = Date.now() + 2 * 3_600_000;
      // One sweep that reads an owner gone deletes nothing: a restore may be bringing it back.
      expect(await sweeper.leaks.sweep(undefined, at)).toEqual([]);
      expect(await env.target.get(RookObjectStores, { namespace: mr.spec.targetNamespace, name })).toBeDefined();
      return sweeper.leaks.sweep(undefined, at + 3_600_000);
    });
    expect(reports.filter((r) => r.owner === `${env.ns.platform}/${name}`).map((r) => [r.kind, r.deleted])).toEqual([
      ['ObjectStore', true],
      ['Secret', true],
      ['Service', true],
      ['Namespace', true],
    ]);
    expect(reports.filter((r) => r.owner === `${env.ns.platform}/${kept}`)).toEqual([]);
    expect(await env.target.get(RookObjectStores, { namespace: mr.spec.targetNamespace, name })).toBeUndefined();
    // The operator's own objects go too: the garbage collector cannot map their owner references.
    expect((await env.target.list(StatefulSets, { namespace: mr.spec.targetNamespace })).items).toEqual([]);
    expect(await env.target.get(RookObjectStores, { namespace: keptMr.spec.targetNamespace, name: kept })).toBeDefined();
    await eventually(
      async () =>
        (await eventsFor(env.control, { namespace: env.ns.platform, name: 'target' })).some(
          (e) => e.reason === 'DeletedLeakedObject' && e.message.includes(`ObjectStore ${mr.spec.targetNamespace}/${name}`),
        ),
      'a DeletedLeakedObject event on the Provider',
    );
  }, 90_000);

  it('1d. a signed copy of a leaked store (restored an hour after it was made) is reported, never deleted, and keeps its companions', async () => {
    const name = uniqueName('copy');
    await env.control.create(kinds.ObjectStore, managed(name));
    const mr = await ready(name);
    const ns = mr.spec.targetNamespace;
    type Stored = KubeObjectLike & { metadata: { annotations?: Record<string, string>; labels?: Record<string, string> }; spec?: unknown };
    const made = (await env.target.get<Stored>(RookObjectStores, { namespace: ns, name }))!;
    // The API server keeps the time it was made, as provider-rook signed it.
    expect(made.metadata.annotations?.[ANNOTATION_MADE_AT]).toMatch(/^\d+\./);
    await removeBehindItsBack(name);
    // A backup of the store taken when it was made, an hour ago, restored now: the same manifest and marks.
    const marks = new OwnershipMarks(env.app.controlPlaneId, await loadOwnershipKey(env.control, DEFAULT_OWNERSHIP_KEY_SECRET));
    const { labels, annotations } = made.metadata;
    const backup = marks.stamped(
      RookObjectStores,
      { apiVersion: made.apiVersion, kind: made.kind, metadata: { name, namespace: ns, labels, annotations }, spec: made.spec },
      Date.now() - 3_600_000,
    );
    await env.target.delete(RookObjectStores, { namespace: ns, name });
    await eventually(async () => (await env.target.get(RookObjectStores, { namespace: ns, name })) === undefined, 'the store to be gone');
    const copy = await env.target.create<Stored>(RookObjectStores, backup);
    expect(marks.provenOwner(RookObjectStores, copy)?.key).toBe(`${env.ns.platform}/${name}`); // its marks verify
    const reports = await withSweeper(async (sweeper) => {
      await sweeper.leaks.sweep(undefined, Date.now() + 2 * 3_600_000);
      return sweeper.leaks.sweep(undefined, Date.now() + 3 * 3_600_000);
    });
    const mine = reports.filter((r) => r.owner === `${env.ns.platform}/${name}`);
    // The copy keeps what it runs with (its root keys, its endpoint): the sweep deletes none of them.
    expect(mine.filter((r) => r.kind !== 'Namespace').map((r) => [r.kind, r.deleted])).toEqual([
      ['ObjectStore', false],
      ['Secret', false],
      ['Service', false],
    ]);
    expect(mine[0]?.kept).toMatch(/^it was created at .*, but provider-rook made it at .*: it is a copy/);
    expect(mine[1]?.kept).toBe('kept with the ObjectStore of the same owner, which this sweep did not delete');
    expect((await env.target.get(RookObjectStores, { namespace: ns, name }))?.metadata.uid).toBe(copy.metadata.uid);
  }, 90_000);

  it("2. reclaim Delete removes the operator's StatefulSet and Service before the finalizer goes", async () => {
    const name = uniqueName('del');
    await env.control.create(kinds.ObjectStore, managed(name));
    const mr = await ready(name);
    const ns = mr.spec.targetNamespace;
    const sts = (await env.target.get<Obj>(StatefulSets, { namespace: ns, name }))!;
    expect(sts.metadata).toMatchObject({ ownerReferences: [expect.objectContaining({ apiVersion: 'v1alpha1', kind: 'ObjectStore' })] });
    await env.control.delete(kinds.ObjectStore, { namespace: env.ns.platform, name });
    await eventually(async () => (await getMr(name)) === undefined, 'the managed resource to be gone');
    expect(await env.target.get(RookObjectStores, { namespace: ns, name })).toBeUndefined();
    expect(await env.target.get(StatefulSets, { namespace: ns, name })).toBeUndefined();
    expect(await env.target.get(Services, { namespace: ns, name })).toBeUndefined();
    expect(await env.target.get(Services, { namespace: ns, name: `${name}-s3` })).toBeUndefined();
    expect(await env.target.get(Secrets, { namespace: ns, name: `${name}-access-keys` })).toBeUndefined();
  }, 90_000);

  it("2b. a store gone before its resource's deletion finished (a pass cut off after the store went) still has its operator's objects removed, found by the recorded uid", async () => {
    const name = uniqueName('gone');
    const neighbour = uniqueName('stays');
    const targetNamespace = uniqueName('minio');
    // A neighbour keeps the namespace, so nothing here is removed by the namespace's own deletion.
    await env.control.create(kinds.ObjectStore, managed(neighbour, { targetNamespace }));
    await env.control.create(kinds.ObjectStore, managed(name, { targetNamespace }));
    const mr = await ready(name);
    await ready(neighbour);
    expect(mr.metadata.annotations?.[ANNOTATION_TARGET_UID]).toBeDefined();
    // Paused, the resource is deleted and its store goes in the target: where a pass that deleted the
    // store was cut off before the operator's objects. Unpaused, the next pass must finish the job.
    await env.control.mergePatch(
      kinds.ObjectStore,
      { namespace: env.ns.platform, name },
      {
        metadata: { annotations: { [ANNOTATION_PAUSED]: 'true' } },
      },
    );
    await env.control.delete(kinds.ObjectStore, { namespace: env.ns.platform, name });
    await env.target.delete(RookObjectStores, { namespace: targetNamespace, name });
    await eventually(
      async () => (await env.target.get(RookObjectStores, { namespace: targetNamespace, name })) === undefined,
      'the store gone',
    );
    const operatorMade = async (type: ResourceType, store: string) =>
      (await env.target.list<Obj>(type, { namespace: targetNamespace, labelSelector: `app=minio,objectstore=${store}` })).items.length;
    expect([await operatorMade(StatefulSets, name), await operatorMade(Services, name)]).toEqual([1, 1]);
    await env.control.mergePatch(
      kinds.ObjectStore,
      { namespace: env.ns.platform, name },
      { metadata: { annotations: { [ANNOTATION_PAUSED]: null } } },
    );
    await eventually(async () => (await getMr(name)) === undefined, 'the managed resource to be gone');
    expect([await operatorMade(StatefulSets, name), await operatorMade(Services, name)]).toEqual([0, 0]);
    expect([await operatorMade(StatefulSets, neighbour), await operatorMade(Services, neighbour)]).toEqual([1, 1]);
    await env.control.delete(kinds.ObjectStore, { namespace: env.ns.platform, name: neighbour });
  }, 90_000);

  it('3. lost access keys are reported, never regenerated', async () => {
    const name = uniqueName('keys');
    await env.control.create(kinds.ObjectStore, managed(name));
    const mr = await ready(name);
    const published = (await env.control.get<Obj>(Secrets, { namespace: env.ns.platform, name: `${name}-conn` }))!;
    await env.target.delete(Secrets, { namespace: mr.spec.targetNamespace, name: `${name}-access-keys` });
    const lost = await syncedReason(name, 'AccessKeysLost');
    expect(cond(lost, 'Synced')?.message).toMatch(/MINIO_ACCESS_KEY/);
    expect(await env.target.get(Secrets, { namespace: mr.spec.targetNamespace, name: `${name}-access-keys` })).toBeUndefined();
    expect((await env.control.get<Obj>(Secrets, { namespace: env.ns.platform, name: `${name}-conn` }))?.data).toEqual(published.data);
  }, 90_000);

  it('4. a target namespace holding anything else (here a Role) is kept, and an Event says why', async () => {
    const name = uniqueName('nsk');
    await env.control.create(kinds.ObjectStore, managed(name));
    const mr = await ready(name);
    const ns = mr.spec.targetNamespace;
    await env.target.create(Roles, {
      apiVersion: Roles.apiVersion,
      kind: 'Role',
      metadata: { name: 'someone-elses', namespace: ns },
      rules: [],
    } as KubeObjectLike);
    await env.control.delete(kinds.ObjectStore, { namespace: env.ns.platform, name });
    await eventually(async () => (await getMr(name)) === undefined, 'the managed resource to be gone');
    const namespace = await env.target.get<Obj>(Namespaces, { name: ns });
    expect(namespace?.metadata.deletionTimestamp).toBeUndefined();
    expect(await env.target.get(Roles, { namespace: ns, name: 'someone-elses' })).toBeDefined();
    const kept = await eventually(
      async () => (await eventsFor(env.control, { namespace: env.ns.platform, name })).find((e) => e.reason === 'KeptTargetNamespace'),
      'a KeptTargetNamespace event',
    );
    expect(kept.message).toMatch(/Role someone-elses/);

    // Its owner gone, the sweeper finds it a leak and keeps it; checking what is in it takes a list
    // of every namespaced type, so it is checked again only an hour later, not at every sweep.
    const leakedNs = (reports: LeakReport[]) => reports.filter((r) => r.kind === 'Namespace' && r.name === ns);
    const sweeps = await withSweeper(async (sweeper) => {
      const at = Date.now() + 2 * 3_600_000;
      return [
        await sweeper.leaks.sweep(undefined, at), // its owner read gone for the first time: not judged yet
        await sweeper.leaks.sweep(undefined, at + 3_600_000),
        await sweeper.leaks.sweep(undefined, at + 3_660_000),
        await sweeper.leaks.sweep(undefined, at + 7_260_000),
      ];
    });
    expect(sweeps.map((r) => leakedNs(r).map((l) => [l.deleted, l.kept]))).toEqual([
      [],
      [[false, expect.stringMatching(/Role someone-elses/)]],
      [],
      [[false, expect.stringMatching(/Role someone-elses/)]],
    ]);

    // With nothing else there, the namespace goes with its last store.
    const alone = uniqueName('nsd');
    await env.control.create(kinds.ObjectStore, managed(alone));
    const aloneMr = await ready(alone);
    await env.control.delete(kinds.ObjectStore, { namespace: env.ns.platform, name: alone });
    await eventually(async () => {
      const n = await env.target.get<Obj>(Namespaces, { name: aloneMr.spec.targetNamespace });
      return n === undefined || n.metadata.deletionTimestamp !== undefined;
    }, 'the empty namespace to be deleted');
  }, 90_000);

  it('5. identity fields cannot change: the API refuses providerRef, targetNamespace and scope edits; a moved external-name is refused', async () => {
    const name = uniqueName('ident');
    await env.control.create(kinds.ObjectStore, managed(name));
    const mr = await ready(name);
    const refused = async (patch: unknown, message: RegExp): Promise<void> => {
      const err = await env.control.mergePatch(kinds.ObjectStore, { namespace: env.ns.platform, name }, patch).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(KubeError);
      expect((err as KubeError).code).toBe(422);
      expect((err as KubeError).message).toMatch(message);
    };
    await refused({ spec: { providerRef: { name: 'elsewhere' } } }, /providerRef cannot change once set/);
    await refused({ spec: { targetNamespace: 'elsewhere' } }, /targetNamespace cannot change after creation/);
    await refused({ spec: { forProvider: { scope: { nodeCount: 6 } } } }, /forProvider.scope cannot change after creation/);
    await refused(
      { spec: { forProvider: { credentials: { name: 'other', namespace: mr.spec.targetNamespace } } } },
      /credentials can be set once/,
    );

    await env.control.mergePatch(
      kinds.ObjectStore,
      { namespace: env.ns.platform, name },
      {
        metadata: { annotations: { 'crossplane.io/external-name': `${name}-moved` } },
      },
    );
    const moved = await syncedReason(name, 'IdentityChanged');
    expect(cond(moved, 'Synced')?.message).toContain(`${mr.spec.targetNamespace}/${name}`);
    expect(await env.target.get(RookObjectStores, { namespace: mr.spec.targetNamespace, name: `${name}-moved` })).toBeUndefined();
    await env.control.mergePatch(
      kinds.ObjectStore,
      { namespace: env.ns.platform, name },
      {
        metadata: { annotations: { 'crossplane.io/external-name': name } },
      },
    );
    await ready(name);
  }, 90_000);

  it('6. a Provider in use is kept until its last managed resource is gone, and counts its users', async () => {
    const ns = await createNamespace(env.control, 'prov');
    await provider(ns, 'target', providerSecretKeys(testCluster('target')));
    const scoped = await startTestApp(testCluster('control'), { namespaces: [ns] });
    apps.push(scoped);
    const name = uniqueName('user');
    await env.control.create(kinds.ObjectStore, managed(name, { namespace: ns }));
    await ready(name, ns);
    await eventually(
      async () => (await env.control.get<Provider>(Providers, { namespace: ns, name: 'target' }))?.status?.users === 1,
      'the Provider to count one user',
    );
    await env.control.delete(Providers, { namespace: ns, name: 'target' });
    const blocked = await eventually(async () => {
      const p = await env.control.get<Provider>(Providers, { namespace: ns, name: 'target' });
      return p?.metadata.deletionTimestamp ? p : undefined;
    }, 'the Provider to be deleting');
    expect(blocked.metadata.finalizers).toContain('in-use.kubernetes.crossplane.io');
    await eventually(
      async () => (await eventsFor(env.control, { namespace: ns, name: 'target' })).some((e) => e.reason === 'DeletionBlocked'),
      'a DeletionBlocked event',
    );
    // The resource can still be deleted through its Provider, and then the Provider goes.
    await env.control.delete(kinds.ObjectStore, { namespace: ns, name });
    await eventually(async () => (await getMr(name, ns)) === undefined, 'the managed resource to be deleted');
    await eventually(
      async () => (await env.control.get(Providers, { namespace: ns, name: 'target' })) === undefined,
      'the Provider to be gone',
    );
  }, 90_000);
});

describe('crossing tenants', () => {
  it('7. an app team cannot take over another store through a claim, nor a managed resource adopt one owned by another', async () => {
    const victim = uniqueName('victim');
    await env.control.create(kinds.ObjectStore, managed(victim, { targetNamespace: 'shared-minio' }));
    const victimMr = await ready(victim);
    const victimStore = (await env.target.get<Obj>(RookObjectStores, { namespace: 'shared-minio', name: victim }))!;

    // The app team, with its own token bound to provider-rook:app-team in its namespace.
    const appNs = await createNamespace(env.control, 'tenant');
    await env.control.apply(kinds.ObjectStoreClass, {
      apiVersion: kinds.ObjectStoreClass.apiVersion,
      kind: 'ObjectStoreClass',
      metadata: { name: 'standard', namespace: env.ns.platform },
      spec: { scope: { nodeCount: 4 }, providerRef: { name: 'target' }, targetNamespace: 'shared-minio' },
    } as KubeObjectLike);
    await env.control.apply(
      BucketClasses,
      bucketClass({ name: 'standard', namespace: appNs }, kinds.ObjectStoreClass, { name: 'standard', namespace: env.ns.platform }),
    );
    const tenantApp = await startTestApp(testCluster('control'), {
      namespaces: [env.ns.platform, appNs],
      controlPlaneId: env.app.controlPlaneId,
    });
    apps.push(tenantApp);
    const appTeam = await identityClient(
      testCluster('control'),
      env.control,
      { namespace: appNs, name: 'app-team' },
      { role: 'provider-rook:app-team' },
    );
    await appTeam.create(Buckets, {
      apiVersion: Buckets.apiVersion,
      kind: 'Bucket',
      metadata: { name: 'grab', namespace: appNs, annotations: { 'crossplane.io/external-name': victim } },
      spec: { classRef: { name: 'standard' }, writeConnectionSecretToRef: { name: 'grab' } },
    } as KubeObjectLike);
    await eventually(
      async () =>
        cond(await env.control.get<Obj & { status?: { conditions?: Cond[] } }>(Buckets, { namespace: appNs, name: 'grab' }), 'Synced')
          ?.reason === 'ImportNotAllowed',
      'the claim to be refused',
    );
    expect(await env.control.get(Secrets, { namespace: appNs, name: 'grab' })).toBeUndefined();

    // A managed resource naming a store another resource owns is never adopted, even on import.
    const thief = uniqueName('thief');
    await env.control.create(
      kinds.ObjectStore,
      managed(thief, { targetNamespace: 'shared-minio', annotations: { 'crossplane.io/external-name': victim } }),
    );
    await syncedReason(thief, 'ExternalResourceOwnedByAnother');
    expect(await env.control.get(Secrets, { namespace: env.ns.platform, name: `${thief}-conn` })).toBeUndefined();
    await env.control.delete(kinds.ObjectStore, { namespace: env.ns.platform, name: thief });
    await eventually(async () => (await getMr(thief)) === undefined, 'the thief to be deleted');
    const after = (await env.target.get<Obj>(RookObjectStores, { namespace: 'shared-minio', name: victim }))!;
    expect(after.metadata.uid).toBe(victimStore.metadata.uid);
    expect(after.metadata.labels?.['rook.crossplane.io/owner-uid']).toBe(victimMr.metadata.uid);
    // It watches the platform's namespace too: stopped, so only one provider-rook reconciles it in later tests.
    await tenantApp.stop();
  }, 120_000);

  it('8. a Provider kubeconfig cannot run programs or read files inside provider-rook', async () => {
    const ns = await createNamespace(env.control, 'kcfg');
    const platformTeam = await identityClient(
      testCluster('control'),
      env.control,
      { namespace: ns, name: 'platform' },
      { role: 'provider-rook:provider-admin' },
    );
    const dir = mkdtempSync(path.join(tmpdir(), 'exec-'));
    const marker = path.join(dir, 'ran');
    const tokenFile = path.join(dir, 'token');
    writeFileSync(tokenFile, 'PROVIDER-OWN-TOKEN');
    const server = providerSecretKeys(testCluster('target')).endpoint;
    const ca = Buffer.from(readFileSync(pkiPaths(testCluster('target').dir).caCert)).toString('base64');
    const kubeconfig = (user: string): string =>
      `apiVersion: v1\nkind: Config\ncurrent-context: t\nclusters:\n- name: t\n  cluster: {server: '${server}', certificate-authority-data: ${ca}}\n` +
      `contexts:\n- name: t\n  context: {cluster: t, user: u}\nusers:\n- name: u\n  user: ${user}\n`;
    const cases: [string, string, RegExp][] = [
      [
        'exec',
        `{exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: ['-c', 'touch ${marker}; echo PLUGIN-SECRET >&2; exit 1']}}`,
        /exec/,
      ],
      ['tokenfile', `{tokenFile: ${tokenFile}}`, /tokenFile/],
      ['shadow', `{client-certificate-data: ${ca}, client-key: /etc/shadow}`, /client-key/],
    ];
    const scoped = await startTestApp(testCluster('control'), { namespaces: [ns] });
    apps.push(scoped);
    for (const [name, user, field] of cases) {
      await provider(ns, name, { kubeconfig: kubeconfig(user) }, platformTeam);
      const p = await eventually(async () => {
        const got = await env.control.get<Provider>(Providers, { namespace: ns, name });
        return cond(got, 'Ready')?.reason === 'InvalidCredentials' ? got : undefined;
      }, `Provider ${name} to be refused`);
      expect(cond(p, 'Ready')?.message).toMatch(field);
      expect(JSON.stringify(p.status)).not.toMatch(/PLUGIN-SECRET|PROVIDER-OWN-TOKEN|\/etc\/shadow/);
    }
    expect(existsSync(marker)).toBe(false);
  }, 90_000);

  it('9. a managed resource cannot publish a Secret provider-rook did not make for it', async () => {
    await env.target.apply(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'payments' } });
    await env.target.apply(Secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'db-creds', namespace: 'payments' },
      data: { username: Buffer.from('dbadmin').toString('base64'), password: Buffer.from('DB-PASSWORD').toString('base64') },
    } as KubeObjectLike);
    const other = uniqueName('keysof');
    await env.control.create(kinds.ObjectStore, managed(other, { targetNamespace: 'shared-minio' }));
    await ready(other);
    for (const credentials of [
      { name: 'db-creds', namespace: 'payments' },
      { name: `${other}-access-keys`, namespace: 'shared-minio' },
    ]) {
      const name = uniqueName('exfil');
      await platformTeam.create(kinds.ObjectStore, managed(name, { credentials }));
      await syncedReason(name, 'CompanionNotOwned');
      expect(await env.control.get(Secrets, { namespace: env.ns.platform, name: `${name}-conn` })).toBeUndefined();
    }
  }, 90_000);

  it('10. nothing a hostile endpoint answers reaches status or Events; link-local endpoints are refused', async () => {
    const pki = pkiPaths(testCluster('target').dir);
    let hits = 0;
    const hostile = createHttpsServer({ cert: readFileSync(pki.servingCert), key: readFileSync(pki.servingKey) }, (req, res) => {
      hits++;
      res.writeHead(req.url === '/version' ? 200 : 403, { 'Content-Type': 'application/json' });
      res.end(
        req.url === '/version'
          ? JSON.stringify({ gitVersion: 'v1.30.0 ATTACKER-TEXT' })
          : JSON.stringify({ kind: 'Status', reason: 'ATTACKER-TEXT', message: 'ATTACKER-TEXT' }),
      );
    });
    await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
    try {
      const port = (hostile.address() as { port: number }).port;
      const ca = readFileSync(pki.caCert, 'utf8');
      await provider(env.ns.platform, 'hostile', { endpoint: `https://127.0.0.1:${port}`, clusterCA: ca, token: 'x' }, platformTeam);
      await provider(env.ns.platform, 'metadata', { endpoint: 'http://169.254.169.254', token: 'x' }, platformTeam);
      const name = uniqueName('hostile');
      await env.control.create(kinds.ObjectStore, managed(name, { provider: 'hostile' }));
      const mr = await eventually(async () => {
        const m = await getMr(name);
        return cond(m, 'Synced')?.status === 'False' ? m : undefined;
      }, 'the resource to report the hostile target');
      const p = await eventually(async () => {
        const got = await env.control.get<Provider>(Providers, { namespace: env.ns.platform, name: 'hostile' });
        return cond(got, 'Ready')?.status === 'False' ? got : undefined;
      }, 'the hostile Provider to be not Ready');
      expect(hits).toBeGreaterThan(0);
      const meta = await eventually(async () => {
        const got = await env.control.get<Provider>(Providers, { namespace: env.ns.platform, name: 'metadata' });
        return cond(got, 'Ready')?.reason === 'InvalidCredentials' ? got : undefined;
      }, 'the link-local Provider to be refused');
      expect(cond(meta, 'Ready')?.message).not.toContain('169.254');
      // The resource's warning Event carries the same error: wait for it, then look inside.
      const events = await eventually(async () => {
        const found = await eventsFor(env.control, { namespace: env.ns.platform, name });
        return found.some((e) => e.type === 'Warning') ? found : undefined;
      }, 'a warning Event on the resource');
      expect(JSON.stringify([mr.status, p.status, events])).not.toContain('ATTACKER-TEXT');
    } finally {
      hostile.close();
    }
  }, 90_000);

  it("11. a Provider echoes nothing read from its Secret, and only a namespace's provider-admin may write Providers there", async () => {
    const endpoint = 'http://someones-store-s3.tenant.svc.cluster.local:9000';
    await provider(env.ns.platform, 'connsecret', { endpoint, username: 'AKIA-USER', password: 'SECRET-PASSWORD' }, platformTeam);
    const p = await eventually(async () => {
      const got = await env.control.get<Provider>(Providers, { namespace: env.ns.platform, name: 'connsecret' });
      return cond(got, 'Ready')?.status === 'False' ? got : undefined;
    }, 'the Provider to be refused');
    expect(JSON.stringify(p.status)).not.toMatch(/someones-store|AKIA-USER|SECRET-PASSWORD/);

    // A platform team bound cluster-wide can read Providers but write them only where provider-admin is bound.
    const appNs = await createNamespace(env.control, 'noprov');
    const team = await identityClient(
      testCluster('control'),
      env.control,
      { namespace: env.ns.platform, name: 'platform-wide' },
      { role: 'provider-rook:provider-admin', clusterWide: 'provider-rook:platform-team' },
    );
    const err = await team
      .create(Providers, {
        apiVersion: Providers.apiVersion,
        kind: 'Provider',
        metadata: { name: 'sneaky', namespace: appNs },
        spec: { credentialsSecretRef: { name: 'x' } },
      } as KubeObjectLike)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect((err as KubeError).code).toBe(403);
    expect(await team.list(Providers, { namespace: appNs })).toMatchObject({ items: [] });
  }, 90_000);

  it("12. a claim's endpoint reaches only its own store, even when stores share a namespace", async () => {
    const a = uniqueName('sha');
    const b = uniqueName('shb');
    await env.control.create(kinds.ObjectStore, managed(a, { targetNamespace: 'shared-minio' }));
    await env.control.create(kinds.ObjectStore, managed(b, { targetNamespace: 'shared-minio' }));
    await ready(a);
    await ready(b);
    const podLabels = async (store: string) =>
      (await env.target.get<Obj & { spec: { template: { metadata: { labels: Record<string, string> } } } }>(StatefulSets, {
        namespace: 'shared-minio',
        name: store,
      }))!.spec.template.metadata.labels;
    const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
      Object.entries(selector).every(([k, v]) => labels[k] === v);
    const pods = { [a]: await podLabels(a), [b]: await podLabels(b) };
    // The operator's own Service would reach both stores' servers.
    const operatorService = (await env.target.get<Obj & { spec: { selector: Record<string, string> } }>(Services, {
      namespace: 'shared-minio',
      name: a,
    }))!;
    expect(selects(operatorService.spec.selector, pods[b]!)).toBe(true);
    for (const [mine, theirs] of [
      [a, b],
      [b, a],
    ] as const) {
      const endpoint = secretText(
        (await env.control.get<Obj & { data: Record<string, string> }>(Secrets, { namespace: env.ns.platform, name: `${mine}-conn` }))!
          .data,
      ).endpoint!;
      const serviceName = new URL(endpoint).hostname.split('.')[0]!;
      const service = (await env.target.get<Obj & { spec: { selector: Record<string, string> } }>(Services, {
        namespace: 'shared-minio',
        name: serviceName,
      }))!;
      expect(selects(service.spec.selector, pods[mine]!)).toBe(true);
      expect(selects(service.spec.selector, pods[theirs]!)).toBe(false);
    }
  }, 90_000);
});
