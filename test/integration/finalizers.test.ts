// Finalizers by JSON patch with a test operation, on a real API server: what another writer changed
// between our read and our write (a label, its own finalizer) survives our finalizer add and remove,
// and a finalizer list that changed under us is a conflict, never a lost write. The reconcilers are
// driven directly over a stale cached copy, as a lagging informer would hand it to them; a copy of
// an object since deleted and made anew under its name gets no write through to the new one.
import { beforeAll, describe, expect, it } from '@jest/globals';
import { Buckets } from '../../src/app.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import { ClaimReconciler, FINALIZER_CLAIM } from '../../src/runtime/claims/binding.ts';
import { claimRefOf, type Claim, type PortableClass } from '../../src/runtime/claims/claim.ts';
import { forwardFeatures } from '../../src/runtime/claims/features.ts';
import { ANNOTATION_ROTATE } from '../../src/runtime/labels.ts';
import { forwardRotationRequest } from '../../src/runtime/claims/status.ts';
import { MemoryEventRecorder } from '../../src/kit/controller/events.ts';
import { addFinalizer, removeFinalizer } from '../../src/kit/controller/finalizers.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { isConflict } from '../../src/kit/kube/errors.ts';
import type { ResourceType } from '../../src/kit/kube/resources.ts';
import { silentLogger } from '../../src/kit/logger.ts';
import { ManagedReconciler } from '../../src/runtime/managed/reconciler.ts';
import type { ExternalClient, ManagedResource } from '../../src/runtime/managed/types.ts';
import { FINALIZER_MANAGED } from '../../src/kit/meta.ts';
import { adminClient, testCluster, uniqueName } from '../kit/env.ts';
import { createNamespace, installCrds, ourCrds } from '../kit/provider.ts';
import { cond } from '../kit/conditions.ts';

type Meta = { finalizers?: string[]; labels?: Record<string, string>; deletionTimestamp?: string };
type Obj = KubeObjectLike & { metadata: KubeObjectLike['metadata'] & Meta };

const OTHER = 'example.com/other-writer';
const signal = new AbortController().signal;
let control: KubeClient;
let ns: string;

/** Another writer: a merge patch of labels, or a JSON patch appending its own finalizer. */
const relabel = (type: ResourceType, name: string, team: string) =>
  control.mergePatch(type, { namespace: ns, name }, { metadata: { labels: { team } } });
const appendOther = (type: ResourceType, name: string) =>
  control.jsonPatch(type, { namespace: ns, name }, [{ op: 'add', path: '/metadata/finalizers/-', value: OTHER }]);
const read = async <T extends Obj>(type: ResourceType, name: string): Promise<T> => (await control.get<T>(type, { namespace: ns, name }))!;
const rejection = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => undefined,
    (err: unknown) => err,
  );

function bucket(name: string, finalizers?: string[]): Claim {
  return {
    apiVersion: Buckets.apiVersion,
    kind: Buckets.kind,
    metadata: { name, namespace: ns, ...(finalizers ? { finalizers } : {}) },
    spec: { classRef: { name: 'missing' } },
  };
}

function store(name: string, finalizers?: string[]): ManagedResource {
  return {
    apiVersion: kinds.ObjectStore.apiVersion,
    kind: kinds.ObjectStore.kind,
    metadata: { name, namespace: ns, ...(finalizers ? { finalizers } : {}) },
    // Not placed (no Provider matches): no controller of this test's process would act on it anyway.
    spec: {
      forProvider: { scope: { nodeCount: 4 } },
      targetNamespace: 'nowhere',
      providerSelector: { matchLabels: { region: 'nowhere' } },
    },
  };
}

beforeAll(async () => {
  control = adminClient(testCluster('control'));
  await installCrds(control, ourCrds());
  ns = await createNamespace(control, 'finalizers');
});

describe('finalizers by JSON patch', () => {
  it("keeps another writer's label and finalizer through our add and remove, and makes a changed list a conflict", async () => {
    const name = uniqueName('fin');
    await control.create(Buckets, bucket(name));
    const read1 = await read<Claim>(Buckets, name);
    await relabel(Buckets, name, 'a');
    // The whole object from our copy is refused (stale resourceVersion): the old way lost a pass here.
    expect(
      isConflict(await rejection(control.update(Buckets, { ...read1, metadata: { ...read1.metadata, finalizers: [FINALIZER_CLAIM] } }))),
    ).toBe(true);
    const added = await addFinalizer(control, Buckets, read1, FINALIZER_CLAIM, signal);
    expect(added.metadata).toMatchObject({ finalizers: [FINALIZER_CLAIM], labels: { team: 'a' } });

    const read2 = await read<Claim>(Buckets, name);
    await appendOther(Buckets, name);
    await relabel(Buckets, name, 'b');
    const removed = await removeFinalizer(control, Buckets, read2, FINALIZER_CLAIM, signal);
    expect(removed.metadata).toMatchObject({ finalizers: [OTHER], labels: { team: 'b' } });

    // A list that changed since the read: the test fails (422), reported as a conflict; nothing written.
    const read3 = await read<Claim>(Buckets, name);
    await control.jsonPatch(Buckets, { namespace: ns, name }, [{ op: 'remove', path: '/metadata/finalizers/0' }]);
    const refused = await rejection(addFinalizer(control, Buckets, read3, FINALIZER_CLAIM, signal));
    expect(isConflict(refused)).toBe(true);
    expect((await read<Claim>(Buckets, name)).metadata.finalizers ?? []).toEqual([]);
    // A first finalizer tests that the list is (still) empty: one appeared meanwhile, so ours waits.
    const read4 = await read<Claim>(Buckets, name);
    await control.jsonPatch(Buckets, { namespace: ns, name }, [{ op: 'add', path: '/metadata/finalizers', value: [OTHER] }]);
    expect(isConflict(await rejection(addFinalizer(control, Buckets, read4, FINALIZER_CLAIM, signal)))).toBe(true);
    expect((await read<Claim>(Buckets, name)).metadata.finalizers).toEqual([OTHER]);
  });

  it('a whole-object write from the copy we read drops what another writer added: only its resourceVersion check stood in the way', async () => {
    const name = uniqueName('fin');
    await control.create(Buckets, bucket(name, [FINALIZER_CLAIM]));
    const ours = await read<Claim>(Buckets, name);
    await appendOther(Buckets, name);
    await relabel(Buckets, name, 'a');
    const current = await read<Claim>(Buckets, name);
    // The old release: our copy without our finalizer, PUT. With the copy's resourceVersion it is
    // refused; with the current one (the check out of the way) it removes the other writer's too.
    const oldRelease = { ...ours, metadata: { ...ours.metadata, finalizers: [] } };
    expect(isConflict(await rejection(control.update(Buckets, oldRelease)))).toBe(true);
    await control.update(Buckets, {
      ...oldRelease,
      metadata: { ...oldRelease.metadata, resourceVersion: current.metadata.resourceVersion },
    });
    const after = await read<Claim>(Buckets, name);
    expect(after.metadata.finalizers ?? []).not.toContain(OTHER);
    expect(after.metadata.labels?.team).toBeUndefined();
    // The patch from the same copy keeps both.
    const again = uniqueName('fin');
    await control.create(Buckets, bucket(again, [FINALIZER_CLAIM]));
    const copy = await read<Claim>(Buckets, again);
    await appendOther(Buckets, again);
    await relabel(Buckets, again, 'a');
    expect((await removeFinalizer(control, Buckets, copy, FINALIZER_CLAIM, signal)).metadata).toMatchObject({
      finalizers: [OTHER],
      labels: { team: 'a' },
    });
  });
});

describe('the reconcilers, handed a stale copy', () => {
  const upToDate: ExternalClient<ManagedResource> = {
    observe: async () => ({ exists: true, upToDate: true }),
    create: async () => ({}),
    update: async () => ({}),
    delete: async () => ({ gone: true }),
  };
  const managedReconciler = (stale: ManagedResource) =>
    new ManagedReconciler<ManagedResource>({
      type: kinds.ObjectStore,
      client: control,
      cache: { get: () => stale },
      recorder: new MemoryEventRecorder(),
      log: silentLogger,
      connecter: { connect: async () => upToDate },
      pollIntervalMs: 60_000,
      pollJitterMs: 0,
    });

  it('the managed reconciler adds and removes its finalizer in one pass, keeping a label another writer set since its read', async () => {
    const name = uniqueName('mr');
    await control.create(kinds.ObjectStore, {
      ...store(name),
      spec: { ...store(name).spec, providerRef: { name: 'target' }, providerSelector: undefined },
    });
    const stale = await read<ManagedResource>(kinds.ObjectStore, name);
    await relabel(kinds.ObjectStore, name, 'a');
    // Old: a PUT with the stale resourceVersion, a 409 and a requeue, no finalizer. New: one patch.
    expect(await managedReconciler(stale).reconcile(`${ns}/${name}`, signal)).toMatchObject({ kind: 'requeueAfter' });
    expect((await read<ManagedResource>(kinds.ObjectStore, name)).metadata).toMatchObject({
      finalizers: [FINALIZER_MANAGED],
      labels: { team: 'a' },
    });

    const going = uniqueName('mr');
    await control.create(kinds.ObjectStore, store(going, [FINALIZER_MANAGED, OTHER]));
    await control.delete(kinds.ObjectStore, { namespace: ns, name: going });
    const deleting = await read<ManagedResource>(kinds.ObjectStore, going);
    await relabel(kinds.ObjectStore, going, 'b');
    expect(await managedReconciler(deleting).reconcile(`${ns}/${going}`, signal)).toEqual({ kind: 'done' });
    expect((await read<ManagedResource>(kinds.ObjectStore, going)).metadata).toMatchObject({
      finalizers: [OTHER],
      labels: { team: 'b' },
    });
    await control.jsonPatch(kinds.ObjectStore, { namespace: ns, name: going }, [{ op: 'remove', path: '/metadata/finalizers/0' }]);
  });

  it('the claim reconciler adds and removes its finalizer in one pass, keeping a label another writer set since its read', async () => {
    const empty = { get: () => undefined, list: () => [] };
    const claimReconciler = (stale: Claim) =>
      new ClaimReconciler<KubeObjectLike, ManagedResource>({
        client: control,
        recorder: new MemoryEventRecorder(),
        log: silentLogger,
        secrets: empty,
        claims: { type: Buckets, cache: { get: () => stale, list: () => [stale] } },
        portableClasses: {
          type: { ...Buckets, kind: 'BucketClass' },
          cache: empty as { get(): PortableClass | undefined; list(): PortableClass[] },
        },
        classes: { type: kinds.ObjectStore, cache: empty },
        managed: { type: kinds.ObjectStore, cache: empty },
        configure: () => {
          throw new Error('not reached: the class is missing');
        },
      });
    const name = uniqueName('claim');
    await control.create(Buckets, bucket(name));
    const stale = await read<Claim>(Buckets, name);
    await relabel(Buckets, name, 'a');
    // Old: a 409 on the finalizer's PUT and a requeue. New: the finalizer, then the missing class said.
    expect(await claimReconciler(stale).reconcile(`${ns}/${name}`, signal)).toMatchObject({ kind: 'requeueAfter' });
    const bound = await read<Claim>(Buckets, name);
    expect(bound.metadata).toMatchObject({ finalizers: [FINALIZER_CLAIM], labels: { team: 'a' } });
    expect(cond(bound, 'Synced')).toMatchObject({ reason: 'ClassNotFound' });

    const going = uniqueName('claim');
    await control.create(Buckets, bucket(going, [FINALIZER_CLAIM, OTHER]));
    await control.delete(Buckets, { namespace: ns, name: going });
    const deleting = await read<Claim>(Buckets, going);
    await relabel(Buckets, going, 'b');
    expect(await claimReconciler(deleting).reconcile(`${ns}/${going}`, signal)).toEqual({ kind: 'done' });
    expect((await read<Claim>(Buckets, going)).metadata).toMatchObject({ finalizers: [OTHER], labels: { team: 'b' } });
    await control.jsonPatch(Buckets, { namespace: ns, name: going }, [{ op: 'remove', path: '/metadata/finalizers/0' }]);
  });

  it('the claim reconciler, handed a copy of a claim since made anew under its name, neither binds nor provisions from it', async () => {
    const name = uniqueName('claim');
    const portable: PortableClass = {
      apiVersion: Buckets.apiVersion,
      kind: 'BucketClass',
      metadata: { name: 'standard', namespace: ns },
      classRef: { apiVersion: kinds.ObjectStoreClass.apiVersion, kind: kinds.ObjectStoreClass.kind, name: 'standard', namespace: ns },
    };
    const cls: KubeObjectLike = {
      apiVersion: kinds.ObjectStoreClass.apiVersion,
      kind: kinds.ObjectStoreClass.kind,
      metadata: { name: 'standard', namespace: ns },
    };
    const one = <T>(obj: T) => ({ get: () => obj, list: () => [obj] });
    await control.create(Buckets, { ...bucket(name), spec: { classRef: { name: 'standard' } } });
    const stale = await read<Claim>(Buckets, name);
    await control.delete(Buckets, { namespace: ns, name });
    await control.create(Buckets, { ...bucket(name), spec: { classRef: { name: 'standard' } } });
    const reconciler = new ClaimReconciler<KubeObjectLike, ManagedResource>({
      client: control,
      recorder: new MemoryEventRecorder(),
      log: silentLogger,
      secrets: { get: () => undefined, list: () => [] },
      claims: { type: Buckets, cache: one(stale) },
      portableClasses: { type: { ...Buckets, kind: 'BucketClass' }, cache: one(portable) },
      classes: { type: kinds.ObjectStoreClass, cache: one(cls) },
      managed: { type: kinds.ObjectStore, cache: { get: () => undefined, list: () => [] } },
      // Placed on a Provider no controller of this test's process serves.
      configure: (_claim, _cls, mrName) => ({
        ...store(mrName),
        spec: { ...store(mrName).spec, providerRef: { name: 'target' }, providerSelector: undefined },
      }),
    });
    // The stale pass is a conflict, requeued; the new claim gets nothing from it.
    await reconciler.reconcile(`${ns}/${name}`, signal);
    const made = await read<Claim>(Buckets, name);
    expect(made.metadata.uid).not.toBe(stale.metadata.uid);
    expect(made.metadata.finalizers).toBeUndefined();
    expect(made.spec?.resourceRef).toBeUndefined();
    // Before, the new claim referred to a resource made for the gone one, which it could never bind.
    const { items } = await control.list<ManagedResource>(kinds.ObjectStore, { namespace: ns });
    expect(items.filter((mr) => claimRefOf(mr)?.name === name)).toEqual([]);
  });

  it("forwards neither a claim's rotation request nor its features to a stale copy of its resource, since made anew for another claim", async () => {
    const name = uniqueName('mr');
    const placed = { ...store(name).spec, providerRef: { name: 'target' }, providerSelector: undefined };
    await control.create(kinds.ObjectStore, { ...store(name), spec: placed });
    const stale = await read<ManagedResource>(kinds.ObjectStore, name);
    await control.delete(kinds.ObjectStore, { namespace: ns, name });
    await control.create(kinds.ObjectStore, { ...store(name), spec: placed });
    const claim = { ...bucket('a'), metadata: { ...bucket('a').metadata, annotations: { [ANNOTATION_ROTATE]: 'now' } } };
    const refused = [
      await rejection(forwardRotationRequest(control, kinds.ObjectStore, claim, stale, signal)),
      await rejection(
        forwardFeatures(
          control,
          kinds.ObjectStore,
          stale,
          { features: { versioning: 'Enabled' }, support: { supported: ['versioning'], path: ['bucket', 'features'] } },
          signal,
        ),
      ),
    ];
    expect(refused.map(isConflict)).toEqual([true, true]);
    const fresh = await read<ManagedResource & { spec: { bucket?: unknown } }>(kinds.ObjectStore, name);
    expect(fresh.metadata.annotations?.[ANNOTATION_ROTATE]).toBeUndefined();
    expect(fresh.spec.bucket).toBeUndefined();
  });
});
