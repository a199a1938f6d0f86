// NativeExternal.delete's decisions, against a fake target that enforces DELETE preconditions as the
// API server does: what it deletes from a cached copy, when it asks the server again, what the
// operator's dependents get, and when the object counts as gone.
import type { ObjectKey } from '../../../../src/kit/kube/object-key.ts';
import { describe, expect, it } from '@jest/globals';
import { ReasonedError } from '../../../../src/kit/conditions.ts';
import type { Deletion, KubeClient } from '../../../../src/kit/kube/client.ts';
import { KubeError } from '../../../../src/kit/kube/errors.ts';
import type { ResourceType } from '../../../../src/kit/kube/resources.ts';
import type { ManagedResource } from '../../../../src/runtime/managed/types.ts';
import { ANNOTATION_TEARDOWN, deleteIfOurs, OPERATOR_UNDO_PATIENCE_MS, TEARDOWN_REQUIRED } from '../../../../src/runtime/native/delete.ts';
import { NativeExternal } from '../../../../src/runtime/native/external.ts';
import type { NativeKind, ObjectReader, TargetObject } from '../../../../src/runtime/native/kind.ts';
import { OwnershipKey } from '../../../../src/runtime/ownership/key.ts';
import {
  ANNOTATION_COMPANION_UIDS,
  ANNOTATION_RECLAIM_POLICY,
  ANNOTATION_TARGET_UID,
  OwnershipMarks,
  ownerOf,
} from '../../../../src/runtime/ownership/marks.ts';

const Stores: ResourceType = { apiVersion: 'x.example.com/v1', kind: 'Store', plural: 'stores', namespaced: false };
const Servers: ResourceType = { apiVersion: 'apps/v1', kind: 'Server', plural: 'servers', namespaced: false };
const marks = new OwnershipMarks('cp-1', new OwnershipKey(Buffer.alloc(32, 7)));
const mr: ManagedResource = {
  apiVersion: 'x/v1',
  kind: 'Thing',
  metadata: { name: 'm', namespace: 'ns', uid: 'mr-uid' },
  spec: { providerRef: { name: 'p' } },
};
const owner = ownerOf('things.x', mr);
const kind: NativeKind<ManagedResource> = {
  resource: 'things.x',
  target: Stores,
  desired: (_mr, name) => ({ apiVersion: Stores.apiVersion, kind: 'Store', metadata: { name } }),
  dependents: [{ type: Servers, labelSelector: (store) => `store=${store.metadata.name}` }],
  inspect: async () => ({ ready: true }),
};

/** Objects by "plural/name"; DELETE checks uid and resourceVersion preconditions; writes are logged. */
class FakeTarget {
  objects = new Map<string, TargetObject>();
  log: string[] = [];
  /** A deletionTimestamp stays on delete (finalizers hold the object). */
  held = false;
  /** The same, for objects of these plurals only (an operator's finalizer on them). */
  heldPlurals = new Set<string>();
  /** Runs after each successful delete (e.g. the operator remaking a dependent). */
  afterDelete?: (plural: string, name: string) => void;

  put(type: ResourceType, name: string, over: Partial<TargetObject['metadata']> = {}): TargetObject {
    const obj: TargetObject = {
      apiVersion: type.apiVersion,
      kind: type.kind,
      metadata: { name, uid: `${name}-uid`, resourceVersion: '1', ...over },
    };
    this.objects.set(`${type.plural}/${name}`, obj);
    return obj;
  }

  asClient(): KubeClient {
    return {
      get: async (type: ResourceType, { name }: ObjectKey) => structuredClone(this.objects.get(`${type.plural}/${name}`)),
      list: async (type: ResourceType) => ({
        items: [...this.objects.entries()].filter(([k]) => k.startsWith(`${type.plural}/`)).map(([, o]) => structuredClone(o)),
        resourceVersion: '1',
      }),
      apply: async (type: ResourceType, obj: TargetObject) => {
        this.log.push(`apply ${type.plural}/${obj.metadata.name}`);
        const had = this.objects.get(`${type.plural}/${obj.metadata.name}`);
        return structuredClone(
          this.put(type, obj.metadata.name!, { ...obj.metadata, uid: had?.metadata.uid ?? `${obj.metadata.name}-uid` }),
        );
      },
      create: async (type: ResourceType, obj: TargetObject) => {
        this.log.push(`create ${type.plural}/${obj.metadata.name}`);
        return structuredClone(this.put(type, obj.metadata.name!, obj.metadata));
      },
      mergePatch: async (type: ResourceType, { name }: ObjectKey, patch: { metadata: Partial<TargetObject['metadata']> }) => {
        const key = `${type.plural}/${name}`;
        const obj = this.objects.get(key)!;
        this.log.push(`patch ${key}`);
        const { labels, annotations } = patch.metadata;
        obj.metadata = {
          ...obj.metadata,
          labels: { ...obj.metadata.labels, ...labels },
          annotations: { ...obj.metadata.annotations, ...annotations },
        };
        return structuredClone(obj);
      },
      delete: async (type: ResourceType, { name }: ObjectKey, opts: { uid?: string; resourceVersion?: string } = {}): Promise<Deletion> => {
        const key = `${type.plural}/${name}`;
        const obj = this.objects.get(key);
        if (!obj) return 'absent';
        if (
          (opts.uid && opts.uid !== obj.metadata.uid) ||
          (opts.resourceVersion && opts.resourceVersion !== obj.metadata.resourceVersion)
        ) {
          throw new KubeError(409, 'Conflict', 'Precondition failed');
        }
        this.log.push(`delete ${key}`);
        if (this.held || this.heldPlurals.has(type.plural)) return 'pending';
        this.objects.delete(key);
        this.afterDelete?.(type.plural, name);
        return 'deleted';
      },
    } as unknown as KubeClient;
  }
}

const ourStore = (target: FakeTarget, rv = '1'): TargetObject =>
  target.put(Stores, 'm', { resourceVersion: rv, ...marks.mark(Stores, { metadata: { name: 'm' } }, owner).metadata });
const dependent = (target: FakeTarget, name: string, ownerUid = 'm-uid'): TargetObject =>
  target.put(Servers, name, { ownerReferences: [{ apiVersion: Stores.apiVersion, kind: 'Store', name: 'm', uid: ownerUid }] });
/** The resource once its object's uid is recorded (as observe records it after the create). */
const recorded: ManagedResource = { ...mr, metadata: { ...mr.metadata, annotations: { [ANNOTATION_TARGET_UID]: 'm-uid' } } };
/** The client, counting its lists by plural. */
const countingLists = (client: KubeClient, lists: string[]): KubeClient =>
  ({
    ...client,
    list: async (...a: Parameters<KubeClient['list']>) => {
      lists.push(a[0].plural);
      return client.list(...a);
    },
  }) as unknown as KubeClient;
/** A companion of ours in namespace ns, as a kind's companions() lists it. */
const companion = (type: ResourceType, name: string, purpose: string) => ({
  type,
  name,
  namespace: 'ns',
  purpose,
  build: () => ({ apiVersion: type.apiVersion, kind: type.kind, metadata: { name, namespace: 'ns' } }),
});
const Jobs: ResourceType = { apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs', namespaced: true };
const Secrets: ResourceType = { apiVersion: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
/** A kind whose teardown (a revoke Job, always done) works elsewhere: it runs whatever its object is (a user in a shared store). */
const revokingKind = (requires?: ReturnType<typeof companion>[]): NativeKind<ManagedResource> => ({
  ...kind,
  dependents: undefined,
  teardown: () => ({
    object: companion(Jobs, 'm-revoke', 'revoke Job'),
    runsWithoutTarget: true,
    ...(requires ? { requires } : {}),
    outcome: () => ({ done: true }),
  }),
});
/** A cache that answers with the copy it was given. */
const cacheOf = (copy: TargetObject | undefined): ObjectReader => ({ get: async <T>() => structuredClone(copy) as T | undefined });

describe('NativeExternal.delete', () => {
  it('deletes our object from the cached copy, with its uid and resourceVersion, and calls it gone', async () => {
    const target = new FakeTarget();
    const copy = ourStore(target);
    const reads: string[] = [];
    const client = target.asClient();
    const counted = {
      ...client,
      get: async (...a: Parameters<KubeClient['get']>) => {
        reads.push(a[1].name);
        return client.get(...a);
      },
    } as unknown as KubeClient;
    const result = await new NativeExternal(kind, counted, marks, { reader: cacheOf(copy) }).delete(mr, new AbortController().signal);
    expect(result).toEqual({ gone: true });
    expect(target.log).toEqual(['delete stores/m']);
    expect(reads).toEqual([]); // no live read: the preconditions are the proof
  });

  it('deletes nothing of a store that something still lives in, and says what and the way out', async () => {
    const target = new FakeTarget();
    const copy = ourStore(target);
    const external = new NativeExternal(kind, target.asClient(), marks, {
      reader: cacheOf(copy),
      usedBy: async () => ['Bucket ns/b'],
    });
    const result = await external.delete(mr, new AbortController().signal);
    expect(result).toMatchObject({ gone: false, requested: false, waiting: { reason: 'StoreInUse' } });
    expect(result?.waiting?.message).toMatch(/^Bucket ns\/b lives in this store: .*set their spec.reclaimPolicy to Retain/);
    expect(target.log).toEqual([]);
    expect(target.objects.has('stores/m')).toBe(true);
  });

  it('does not hold a store whose object is gone already: its users have nothing left in it to need', async () => {
    const target = new FakeTarget();
    const asked: string[] = [];
    const external = new NativeExternal(kind, target.asClient(), marks, {
      reader: cacheOf(undefined),
      usedBy: async () => (asked.push('users'), ['Bucket ns/b']),
    });
    expect(await external.delete(recorded, new AbortController().signal)).toMatchObject({ gone: true });
    expect(asked).toEqual([]);
  });

  it('asks the server again when the cached copy is stale, and deletes the current one', async () => {
    const target = new FakeTarget();
    const stale = ourStore(target, '1');
    ourStore(target, '2');
    const result = await new NativeExternal(kind, target.asClient(), marks, { reader: cacheOf(stale) }).delete(
      mr,
      new AbortController().signal,
    );
    expect(result).toEqual({ gone: true });
    expect(target.log).toEqual(['delete stores/m']);
  });

  it('leaves an object that lost our marks (as the server says) alone', async () => {
    const target = new FakeTarget();
    const stale = ourStore(target, '1');
    target.put(Stores, 'm', { resourceVersion: '2', labels: {} });
    const result = await new NativeExternal(kind, target.asClient(), marks, { reader: cacheOf(stale) }).delete(
      mr,
      new AbortController().signal,
    );
    expect(result).toEqual({ gone: true, requested: false }); // not ours to wait for, nor to announce
    expect(target.log).toEqual([]);
  });

  it('reports an object that keeps changing under the delete with its own reason, not as a conflict of ours', async () => {
    const target = new FakeTarget();
    ourStore(target, '5');
    const client = target.asClient();
    let rv = 5;
    // Every read sees a version the next write no longer matches (an operator writing all the time).
    const churning = {
      ...client,
      get: async (...a: Parameters<KubeClient['get']>) => {
        const o = await client.get(...a);
        target.objects.get('stores/m')!.metadata.resourceVersion = String(++rv);
        return o;
      },
    } as unknown as KubeClient;
    const stale = { ...target.objects.get('stores/m')!, metadata: { ...target.objects.get('stores/m')!.metadata, resourceVersion: '4' } };
    const err = await new NativeExternal(kind, churning, marks, { reader: cacheOf(stale) })
      .delete(mr, new AbortController().signal)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReasonedError);
    expect((err as ReasonedError).reason).toBe('TargetObjectChanging');
  });

  it("deletes the operator's dependents before the object, and again after it", async () => {
    const target = new FakeTarget();
    const copy = ourStore(target);
    dependent(target, 'server-a');
    // The operator remakes a dependent while the object is being deleted.
    target.afterDelete = (plural) => {
      if (plural === 'stores') dependent(target, 'server-b');
    };
    await new NativeExternal(kind, target.asClient(), marks, { reader: cacheOf(copy) }).delete(mr, new AbortController().signal);
    expect(target.log).toEqual(['delete servers/server-a', 'delete stores/m', 'delete servers/server-b']);
    expect([...target.objects.keys()]).toEqual([]);
  });

  it("with the object's uid recorded, deletes the object first and lists its dependents once, after it", async () => {
    const target = new FakeTarget();
    const copy = ourStore(target);
    dependent(target, 'server-a');
    target.afterDelete = (plural) => {
      if (plural === 'stores') dependent(target, 'server-b');
    };
    const lists: string[] = [];
    await new NativeExternal(kind, countingLists(target.asClient(), lists), marks, { reader: cacheOf(copy) }).delete(
      recorded,
      new AbortController().signal,
    );
    expect(target.log).toEqual(['delete stores/m', 'delete servers/server-a', 'delete servers/server-b']);
    expect(lists).toEqual(['servers']);
    expect([...target.objects.keys()]).toEqual([]);
  });

  it('after a crash between the object and its dependents, finds them by the recorded uid, and only them', async () => {
    const target = new FakeTarget();
    dependent(target, 'server-a'); // the store m-uid is gone already
    dependent(target, 'server-other', 'other-uid'); // made for another object of that name
    const result = await new NativeExternal(kind, target.asClient(), marks, { reader: cacheOf(undefined) }).delete(
      recorded,
      new AbortController().signal,
    );
    expect(result).toEqual({ gone: true, requested: false }); // the store was deleted before the crash
    expect(target.log).toEqual(['delete servers/server-a']);
    expect([...target.objects.keys()]).toEqual(['servers/server-other']);
  });

  it("deleting, a resource whose object is gone still counts as existing while its operator's objects may be left, so its deletion finds them", async () => {
    const target = new FakeTarget();
    dependent(target, 'server-a'); // a pass deleted the store, then was cut off
    const deleting = { ...recorded, metadata: { ...recorded.metadata, deletionTimestamp: '2026-11-27T00:00:00Z' } };
    const external = new NativeExternal(kind, target.asClient(), marks, { reader: cacheOf(undefined) });
    expect(await external.observe(deleting, new AbortController().signal)).toEqual({ exists: true, upToDate: true });
    expect(await external.delete(deleting, new AbortController().signal)).toEqual({ gone: true, requested: false });
    expect([...target.objects.keys()]).toEqual([]);
    // Nothing to find without a recorded uid, or for a kind whose operator's objects the garbage collector takes.
    const legacy = { ...deleting, metadata: { ...deleting.metadata, annotations: {} } };
    expect(await external.observe(legacy, new AbortController().signal)).toEqual({ exists: false, upToDate: true });
    const collected = new NativeExternal({ ...kind, dependents: undefined }, target.asClient(), marks, { reader: cacheOf(undefined) });
    expect(await collected.observe(deleting, new AbortController().signal)).toEqual({ exists: false, upToDate: true });
  });

  it('deletes an older Job of ours even when the resource has no Job companion any more (its bucket was taken off)', async () => {
    const Jobs: ResourceType = { apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs', namespaced: true };
    const keys = companion(Servers, 'm-keys', 'keys');
    const noJobs: NativeKind<ManagedResource> = {
      ...kind,
      superseded: { type: Jobs, labelSelector: 'role=access', matches: (l) => l.role === 'access' },
      companions: () => [keys],
    };
    const target = new FakeTarget();
    const copy = ourStore(target);
    target.put(Jobs, 'm-access-1', {
      resourceVersion: '1',
      ...marks.mark(Jobs, { metadata: { name: 'm-access-1', namespace: 'ns' } }, owner).metadata,
    });
    await new NativeExternal(noJobs, target.asClient(), marks, { reader: cacheOf(copy) }).delete(recorded, new AbortController().signal);
    expect(target.log).toContain('delete jobs/m-access-1');
  });

  it('runs a teardown whose work is elsewhere (a user in a shared store) also once its object is gone, if it was made', async () => {
    const revoking = revokingKind();
    for (const made of [true, false]) {
      // Its object (the user's Secret) deleted in the target by someone else; the user it stands for is still in the store.
      const target = new FakeTarget();
      const external = new NativeExternal(revoking, target.asClient(), marks, { reader: target.asClient() });
      const deleting = {
        ...(made ? recorded : mr),
        metadata: { ...(made ? recorded : mr).metadata, deletionTimestamp: '2026-11-30T00:00:00Z' },
      };
      expect(await external.delete(deleting, new AbortController().signal)).toEqual(
        made ? { gone: false, requested: false } : { gone: true, requested: false },
      );
      expect(target.log).toEqual(made ? ['create jobs/m-revoke'] : []);
    }
    // A pass from a cache behind a deletion that ended (the resource let go, or gone): nothing is made for it.
    const late = new FakeTarget();
    const letGo = new NativeExternal(revoking, late.asClient(), marks, { reader: late.asClient(), stillHeld: async () => false });
    const ended = { ...recorded, metadata: { ...recorded.metadata, deletionTimestamp: '2026-11-30T00:00:00Z' } };
    expect(await letGo.delete(ended, new AbortController().signal)).toMatchObject({ gone: true });
    expect(late.log).toEqual([]);
    // Ours and going already (another's finalizer holds it): its revoke Job, done, says the teardown ran; it stays
    // while the object waits (no Job made again at each pass), and goes with it.
    const held = new FakeTarget();
    held.held = true;
    held.put(Stores, 'm', { ...ourStore(held).metadata, deletionTimestamp: '2026-11-30T00:00:00Z' });
    held.put(Jobs, 'm-revoke', marks.mark(Jobs, { metadata: { name: 'm-revoke', namespace: 'ns' } }, owner).metadata);
    const going = { ...recorded, metadata: { ...recorded.metadata, deletionTimestamp: '2026-11-30T00:00:00Z' } };
    const waiting = new NativeExternal(revoking, held.asClient(), marks, { reader: held.asClient() });
    for (let pass = 0; pass < 2; pass++) expect(await waiting.delete(going, new AbortController().signal)).toMatchObject({ gone: false });
    expect(held.log.filter((l) => l.includes('jobs/'))).toEqual([]);
    held.held = false;
    held.objects.delete('stores/m');
    expect(await waiting.delete(going, new AbortController().signal)).toMatchObject({ gone: true });
    expect(held.log.filter((l) => l.includes('jobs/'))).toEqual(['delete jobs/m-revoke']);
    // Copied over (signed, but not the object it recorded): observed as there to delete, and revoked all the same; the copy stays.
    const target = new FakeTarget();
    target.put(Stores, 'm', { uid: 'copy-uid', ...marks.mark(Stores, { metadata: { name: 'm' } }, owner).metadata });
    const external = new NativeExternal(revoking, target.asClient(), marks, { reader: target.asClient() });
    const deleting = { ...recorded, metadata: { ...recorded.metadata, deletionTimestamp: '2026-11-30T00:00:00Z' } };
    expect((await external.observe(deleting, new AbortController().signal)).exists).toBe(true);
    await external.delete(deleting, new AbortController().signal);
    expect(target.log).toEqual(['create jobs/m-revoke']);
  });

  it("waits, saying why, when a teardown run on the record alone cannot run (its store's root keys gone): nothing proves the store gone", async () => {
    const revoking = revokingKind([{ ...companion(Secrets, 'store-root', "store's root credentials") }]);
    const target = new FakeTarget();
    const warned: string[] = [];
    const external = new NativeExternal(revoking, target.asClient(), marks, {
      reader: target.asClient(),
      recorder: { warning: (_o: unknown, reason: string, message: string) => warned.push(`${reason}: ${message}`) } as never,
    });
    const deleting = { ...recorded, metadata: { ...recorded.metadata, deletionTimestamp: '2026-11-30T00:00:00Z' } };
    const err = await external.delete(deleting, new AbortController().signal).then(
      () => undefined,
      (e: unknown) => e as ReasonedError,
    );
    expect(err).toMatchObject({
      reason: 'TeardownFailed',
      message: expect.stringMatching(
        /^the revoke Job cannot run: the store's root credentials Secret ns\/store-root is gone\. Nothing was deleted; restore it/,
      ),
    });
    expect(target.log).toEqual([]);
    expect(warned).toEqual([]);
  });

  it('makes no teardown work where nothing may be made (a namespace its Provider no longer allows): it says so, and deletes nothing', async () => {
    const Jobs: ResourceType = { apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs', namespaced: true };
    const revoking: NativeKind<ManagedResource> = {
      ...kind,
      dependents: undefined,
      teardown: () => ({ object: companion(Jobs, 'm-revoke', 'revoke Job'), outcome: () => ({ done: true }) }),
    };
    const target = new FakeTarget();
    ourStore(target);
    const external = new NativeExternal(revoking, target.asClient(), marks, {
      reader: target.asClient(),
      makesNothing: 'spec.targetNamespace is ns, a namespace Provider infra/p does not allow',
    });
    const err = await external.delete(recorded, new AbortController().signal).then(
      () => undefined,
      (e: unknown) => e as ReasonedError,
    );
    expect(err).toMatchObject({
      reason: 'TeardownFailed',
      message:
        'the revoke Job cannot be made: spec.targetNamespace is ns, a namespace Provider infra/p does not allow. Nothing was deleted; allow that namespace again, or set reclaimPolicy Retain to keep everything',
    });
    expect(target.log).toEqual([]);
  });

  it('stops a teardown under way when the resource is let go keeping everything (Retain set mid-deletion), and keeps one finished', async () => {
    const Jobs: ResourceType = { apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs', namespaced: true };
    for (const finished of [false, true]) {
      const tearing: NativeKind<ManagedResource> = {
        ...kind,
        dependents: undefined,
        // Its Job removes the user, and with deleteObjects the bucket's objects.
        teardown: () => ({
          object: companion(Jobs, 'm-revoke', 'revoke Job'),
          outcome: () => (finished ? { done: true } : { done: false, message: 'running' }),
        }),
      };
      const target = new FakeTarget();
      ourStore(target);
      target.put(Jobs, 'm-revoke', marks.mark(Jobs, { metadata: { name: 'm-revoke', namespace: 'ns' } }, owner).metadata);
      const warned: string[] = [];
      const retained: ManagedResource = { ...recorded, spec: { ...recorded.spec, reclaimPolicy: 'Retain' } };
      await new NativeExternal(tearing, target.asClient(), marks, {
        reader: target.asClient(),
        recorder: { warning: (_o: unknown, reason: string, message: string) => warned.push(`${reason}: ${message}`) } as never,
      }).keep(retained, new AbortController().signal);
      expect(target.log.includes('delete jobs/m-revoke')).toBe(!finished);
      expect(target.objects.get('stores/m')?.metadata.annotations?.[ANNOTATION_RECLAIM_POLICY]).toBe('Retain');
      expect(warned).toEqual(
        finished ? [] : [expect.stringMatching(/^KeptInTarget: Job ns\/m-revoke \(the revoke Job\) was under way and is stopped/)],
      );
    }
  });

  it('a restored resource whose teardown kept its data marks its companions Retain too, though they are signed for its earlier uid', async () => {
    const Secrets: ResourceType = { apiVersion: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
    const Jobs: ResourceType = { apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs', namespaced: true };
    const rootKeys = companion(Secrets, 'm-root', 'root keys');
    const revoke = companion(Jobs, 'm-revoke', 'revoke Job');
    const keeping: NativeKind<ManagedResource> = {
      ...kind,
      dependents: undefined,
      companions: () => [rootKeys],
      teardown: () => ({ object: revoke, retainWhenKept: true, outcome: () => ({ done: true, kept: 'the bucket holds objects' }) }),
    };
    const target = new FakeTarget();
    // Made by the resource before a backup; restored from it, the resource has a new uid, and its record names the object.
    const store = ourStore(target);
    const signed = (type: ResourceType, name: string) =>
      target.put(type, name, marks.mark(type, { metadata: { name, namespace: 'ns' } }, owner).metadata);
    signed(Secrets, 'm-root');
    signed(Jobs, 'm-revoke');
    const restored: ManagedResource = { ...recorded, metadata: { ...recorded.metadata, uid: 'mr-uid-restored' } };
    const external = new NativeExternal(keeping, target.asClient(), marks, { reader: cacheOf(store) });
    expect(await external.delete(restored, new AbortController().signal)).toEqual({ gone: true, requested: false });
    expect(target.log.filter((l) => !l.startsWith('patch jobs/'))).toEqual(['patch stores/m', 'patch secrets/m-root']);
    expect(target.objects.get('secrets/m-root')?.metadata.annotations?.[ANNOTATION_RECLAIM_POLICY]).toBe('Retain');
  });

  it('leaves a signed copy put in place of a companion whose uid the resource recorded, deleting or keeping', async () => {
    const Secrets: ResourceType = { apiVersion: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
    const rootKeys = companion(Secrets, 'm-root', 'root keys');
    const withKeys = (kept: boolean): NativeKind<ManagedResource> => ({
      ...kind,
      dependents: undefined,
      companions: () => [rootKeys],
      ...(kept
        ? {
            teardown: () => ({
              object: companion(Servers, 'm-revoke', 'revoke'),
              retainWhenKept: true,
              outcome: () => ({ done: true, kept: 'data' }),
            }),
          }
        : {}),
    });
    // The resource made its Secret (uid recorded); someone re-created it from its manifest since, signature and all.
    // Also while a create of its object is recorded pending, newer than the last one that succeeded (made again, failing).
    const made = (creating: boolean): ManagedResource => ({
      ...recorded,
      metadata: {
        ...recorded.metadata,
        annotations: {
          ...recorded.metadata.annotations,
          [ANNOTATION_COMPANION_UIDS]: JSON.stringify({ 'v1/Secret/ns/m-root': 'made-uid' }),
          ...(creating
            ? {
                'crossplane.io/external-create-pending': '2026-11-30T00:00:10Z',
                'crossplane.io/external-create-succeeded': '2026-11-30T00:00:00Z',
              }
            : {}),
        },
      },
    });
    for (const [kept, creating] of [
      [false, false],
      [true, false],
      [false, true],
      [true, true],
    ]) {
      const target = new FakeTarget();
      ourStore(target);
      target.put(Secrets, 'm-root', {
        uid: 'copy-uid',
        ...marks.mark(Secrets, { metadata: { name: 'm-root', namespace: 'ns' } }, owner).metadata,
      });
      if (kept) target.put(Servers, 'm-revoke', marks.mark(Servers, { metadata: { name: 'm-revoke', namespace: 'ns' } }, owner).metadata);
      // Read by name (a cache answering every read with the store would prove nothing of the Secret).
      await new NativeExternal(withKeys(kept!), target.asClient(), marks, { reader: target.asClient() }).delete(
        made(creating!),
        new AbortController().signal,
      );
      expect(target.log.filter((l) => l.includes('secrets/'))).toEqual([]);
      expect(target.log).toContain(kept ? 'patch stores/m' : 'delete stores/m');
    }
  });

  it('deletes a recorded companion made again whose new uid went unrecorded, and not a copy of it made later', async () => {
    const Secrets: ResourceType = { apiVersion: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
    const withKeys: NativeKind<ManagedResource> = {
      ...kind,
      dependents: undefined,
      companions: () => [companion(Secrets, 'm-keys', 'keys')],
    };
    // The resource recorded its Secret; someone deleted it, and the create that made it again lost its answer.
    const made: ManagedResource = {
      ...recorded,
      metadata: {
        ...recorded.metadata,
        annotations: {
          ...recorded.metadata.annotations,
          [ANNOTATION_COMPANION_UIDS]: JSON.stringify({ 'v1/Secret/ns/m-keys': `gone-uid@${Math.floor(Date.now() / 1000) - 3600}` }),
        },
      },
    };
    const now = Date.now();
    const second = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString();
    for (const [createdAfterMs, deleted] of [
      [300, true],
      [3_600_000, false],
    ] as const) {
      const target = new FakeTarget();
      ourStore(target);
      const stamped = marks.stamped(Secrets, marks.mark(Secrets, { metadata: { name: 'm-keys', namespace: 'ns' } }, owner), now);
      target.put(Secrets, 'm-keys', { uid: 'again-uid', ...stamped.metadata, creationTimestamp: second(now + createdAfterMs) });
      await new NativeExternal(withKeys, target.asClient(), marks, { reader: target.asClient() }).delete(
        made,
        new AbortController().signal,
      );
      expect(target.log.includes('delete secrets/m-keys')).toBe(deleted);
    }
  });

  it("is not gone while a companion the operator undoes through its store's server is held, as long as that server is there", async () => {
    const Secrets: ResourceType = { apiVersion: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
    const Servers2: ResourceType = { apiVersion: 'x.example.com/v1', kind: 'StoreServer', plural: 'storeservers', namespaced: true };
    const through: NativeKind<ManagedResource> = {
      ...kind,
      dependents: undefined,
      companions: () => [companion(Secrets, 'm-user', 'user')],
      undoneThrough: { types: [Secrets], ref: () => ({ type: Servers2, namespace: 'ns', name: 'server' }) },
    };
    for (const serverThere of [true, false]) {
      const target = new FakeTarget();
      ourStore(target);
      target.put(Secrets, 'm-user', marks.mark(Secrets, { metadata: { name: 'm-user', namespace: 'ns' } }, owner).metadata);
      if (serverThere) target.put(Servers2, 'server', { namespace: 'ns' });
      // The operator's finalizer holds the user until it has undone it in the server.
      target.heldPlurals.add('secrets');
      const deletion = await new NativeExternal(through, target.asClient(), marks, { reader: target.asClient() }).delete(
        recorded,
        new AbortController().signal,
      );
      expect(target.log).toContain('delete secrets/m-user');
      // Without the server, the operator undoes nothing: waiting would never end.
      expect(deletion.gone).toBe(!serverThere);
      // Within the usual minute it waits without a word.
      expect(deletion.waiting).toBeUndefined();
    }
  });

  it('says what it waits for, once an operator has held its companions past the usual minute, and goes on waiting', async () => {
    const Secrets: ResourceType = { apiVersion: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
    const Servers2: ResourceType = { apiVersion: 'x.example.com/v1', kind: 'StoreServer', plural: 'storeservers', namespaced: true };
    const ofStore = (ref: 'through' | 'target'): NativeKind<ManagedResource> => ({
      ...kind,
      dependents: undefined,
      companions: () => [companion(Secrets, 'm-user', 'user')],
      ...(ref === 'through'
        ? { undoneThrough: { types: [Secrets], ref: () => ({ type: Servers2, namespace: 'ns', name: 'server' }) } }
        : { undoneThroughTarget: [Secrets] }),
    });
    const since = (ms: number) => new Date(Date.now() - ms).toISOString();
    for (const ref of ['through', 'target'] as const)
      for (const [deletedAgo, says] of [
        [OPERATOR_UNDO_PATIENCE_MS - 10_000, false],
        [OPERATOR_UNDO_PATIENCE_MS + 10_000, true],
      ] as const) {
        const target = new FakeTarget();
        ourStore(target);
        target.put(Secrets, 'm-user', marks.mark(Secrets, { metadata: { name: 'm-user', namespace: 'ns' } }, owner).metadata);
        target.put(Servers2, 'server', { namespace: 'ns' });
        target.heldPlurals.add('secrets');
        const deleting = { ...recorded, metadata: { ...recorded.metadata, deletionTimestamp: since(deletedAgo) } };
        const deletion = await new NativeExternal(ofStore(ref), target.asClient(), marks, { reader: target.asClient() }).delete(
          deleting,
          new AbortController().signal,
        );
        expect(deletion.gone).toBe(false);
        if (!says) {
          expect(deletion.waiting).toBeUndefined();
          continue;
        }
        expect(deletion.waiting?.reason).toBe('WaitingForOperator');
        expect(deletion.waiting?.message).toContain('Secret ns/m-user');
        expect(deletion.waiting?.message).toContain(ref === 'through' ? 'StoreServer ns/server' : 'through Store m;');
        expect(deletion.waiting?.recheckAfterMs).toBeGreaterThan(0);
      }
  });

  it('deleting, a resource whose object is gone runs its deletion once more while its companions may be left', async () => {
    const Secrets: ResourceType = { apiVersion: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
    const rootKeys = companion(Secrets, 'm-root', 'root keys');
    // A kind whose operator's objects the garbage collector takes (no dependents), with a companion of ours.
    const withKeys: NativeKind<ManagedResource> = { ...kind, dependents: undefined, companions: () => [rootKeys] };
    const target = new FakeTarget();
    // A pass deleted the object and was cut off before its companion.
    target.put(Secrets, 'm-root', marks.mark(Secrets, { metadata: { name: 'm-root', namespace: 'ns' } }, owner).metadata);
    const deleting = { ...mr, metadata: { ...mr.metadata, deletionTimestamp: '2026-11-27T00:00:00Z' } };
    const external = new NativeExternal(withKeys, target.asClient(), marks, { reader: target.asClient() });
    expect(await external.observe(deleting, new AbortController().signal)).toEqual({ exists: true, upToDate: true });
    expect(await external.delete(deleting, new AbortController().signal)).toEqual({ gone: true, requested: false });
    expect(target.log).toEqual(['delete secrets/m-root']);
    // Each such pass ends at once: nothing there, nothing asked, and the finalizer may go.
    expect(await external.delete(deleting, new AbortController().signal)).toEqual({ gone: true, requested: false });
    expect(target.log).toEqual(['delete secrets/m-root']);
  });

  it('asks nothing again of an object already being deleted (finalizers hold it), and says so', async () => {
    const target = new FakeTarget();
    const copy = ourStore(target);
    copy.metadata.deletionTimestamp = '2026-05-01T09:00:00Z';
    const lists: string[] = [];
    const client = countingLists(target.asClient(), lists);
    expect(await new NativeExternal(kind, client, marks, { reader: cacheOf(copy) }).delete(recorded, new AbortController().signal)).toEqual(
      {
        gone: false,
        requested: false,
      },
    );
    expect(target.log).toEqual([]);
    // What its operator made is still looked for on every pass: a pass cut off before it left them.
    expect(lists).toEqual(['servers']);
  });

  it('deletes the object that replaced one a stale cached copy shows being deleted', async () => {
    const target = new FakeTarget();
    const stale = structuredClone(ourStore(target));
    stale.metadata.deletionTimestamp = '2026-05-01T09:00:00Z';
    // The server's object of that name is a newer one of ours (another uid), not being deleted.
    ourStore(target).metadata.uid = 'm-uid-2';
    const deletion = await new NativeExternal(kind, target.asClient(), marks, { reader: cacheOf(stale) }).delete(
      mr,
      new AbortController().signal,
    );
    expect(target.log).toContain('delete stores/m');
    expect(deletion).toEqual({ gone: true });
  });

  it("asks again, in the background, an object held for its dependents' sake (orphan or foreground)", async () => {
    const target = new FakeTarget();
    const copy = ourStore(target);
    copy.metadata.deletionTimestamp = '2026-05-01T09:00:00Z';
    copy.metadata.finalizers = ['orphan'];
    target.held = true;
    await new NativeExternal(kind, target.asClient(), marks, { reader: cacheOf(copy) }).delete(recorded, new AbortController().signal);
    expect(target.log).toContain('delete stores/m');
  });

  it('is not gone while finalizers hold the object', async () => {
    const target = new FakeTarget();
    const copy = ourStore(target);
    target.held = true;
    expect(
      await new NativeExternal(kind, target.asClient(), marks, { reader: cacheOf(copy) }).delete(mr, new AbortController().signal),
    ).toEqual({ gone: false });
  });
});

describe('a teardown needed once a companion got this far (a user was made)', () => {
  const Jobs: ResourceType = { apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs', namespaced: true };
  const complete = (o: TargetObject): boolean => Boolean((o as { status?: { succeeded?: number } }).status?.succeeded);
  /** A store whose access Job is named by its spec (as MinIO's are): a changed spec names another. */
  const revoking = (spec: string): NativeKind<ManagedResource> => {
    const access = companion(Jobs, `m-access-${spec}`, 'access Job');
    return {
      ...kind,
      dependents: undefined,
      companions: () => [access],
      superseded: { type: Jobs, labelSelector: 'x', matches: () => true },
      teardown: () => ({
        object: companion(Jobs, 'm-revoke', 'revoke Job'),
        retainWhenKept: true,
        onlyAfter: { ref: access, reached: complete },
        outcome: () => ({ done: true, kept: 'the bucket holds objects' }),
      }),
    };
  };
  const signedJob = (target: FakeTarget, name: string, succeeded: number): TargetObject =>
    Object.assign(target.put(Jobs, name, marks.mark(Jobs, { metadata: { name, namespace: 'ns' } }, owner).metadata), {
      status: { succeeded },
    });
  const signal = new AbortController().signal;
  /** A watch cache of the target: get, and the list of a type. */
  const cacheView = (target: FakeTarget): ObjectReader => ({
    get: target.asClient().get as ObjectReader['get'],
    cached: <T>(type: ResourceType) =>
      [...target.objects.entries()].filter(([k]) => k.startsWith(`${type.plural}/`)).map(([, o]) => structuredClone(o) as T),
  });
  const withRecord: ManagedResource = {
    ...recorded,
    metadata: { ...recorded.metadata, annotations: { ...recorded.metadata.annotations, [ANNOTATION_TEARDOWN]: TEARDOWN_REQUIRED } },
  };

  it('observing records it from a completed Job a changed spec superseded (the provider was down when it completed)', async () => {
    const target = new FakeTarget();
    ourStore(target);
    signedJob(target, 'm-access-1', 1);
    signedJob(target, 'm-access-2', 0);
    const external = new NativeExternal(revoking('2'), target.asClient(), marks, { reader: cacheView(target) });
    const seen = await external.observe(recorded, signal);
    expect([seen.diff, seen.annotations?.[ANNOTATION_TEARDOWN]]).toEqual(['superseded Jobs m-access-1', TEARDOWN_REQUIRED]);
  });

  it('a repair keeps a completed superseded Job until the resource records it, then deletes it', async () => {
    for (const mr of [recorded, withRecord]) {
      const target = new FakeTarget();
      ourStore(target);
      signedJob(target, 'm-access-1', 1);
      signedJob(target, 'm-access-2', 0);
      await new NativeExternal(revoking('2'), target.asClient(), marks, { reader: cacheView(target) }).update(mr, signal);
      expect(target.log.includes('delete jobs/m-access-1')).toBe(mr === withRecord);
    }
  });

  it('a teardown of its own object (a SeaweedFS Bucket) is never recorded, nor is that object made for a teardown', async () => {
    const bucket = companion(Jobs, 'm-bucket', 'bucket');
    const own: NativeKind<ManagedResource> = {
      ...kind,
      dependents: undefined,
      companions: () => [bucket],
      teardown: () => ({ object: bucket, onlyAfter: { ref: bucket, reached: () => true }, outcome: () => ({ done: true }) }),
    };
    const target = new FakeTarget();
    ourStore(target);
    signedJob(target, 'm-bucket', 1);
    const external = new NativeExternal(own, target.asClient(), marks, { reader: target.asClient() });
    expect((await external.observe(recorded, signal)).annotations?.[ANNOTATION_TEARDOWN]).toBeUndefined();
    target.objects.delete('jobs/m-bucket');
    expect(await external.delete(withRecord, signal)).toEqual({ gone: true });
    expect(target.log).toEqual(['delete stores/m']);
  });

  it('is not run again for an object whose deletion was asked already (held by finalizers)', async () => {
    const target = new FakeTarget();
    const store = ourStore(target);
    store.metadata.deletionTimestamp = '2026-11-29T00:00:00Z';
    store.metadata.finalizers = ['operator'];
    const external = new NativeExternal(revoking('1'), target.asClient(), marks, { reader: target.asClient() });
    await external.delete(withRecord, signal);
    expect(target.log.filter((l) => l.includes('m-revoke'))).toEqual([]);
  });

  it('observing records it once that companion is seen reached, and not before', async () => {
    const target = new FakeTarget();
    ourStore(target);
    const job = signedJob(target, 'm-access-1', 0);
    const external = new NativeExternal(revoking('1'), target.asClient(), marks, { reader: target.asClient() });
    expect((await external.observe(recorded, signal)).annotations?.[ANNOTATION_TEARDOWN]).toBeUndefined();
    Object.assign(job, { status: { succeeded: 1 } });
    expect((await external.observe(recorded, signal)).annotations?.[ANNOTATION_TEARDOWN]).toBe(TEARDOWN_REQUIRED);
  });

  it('deleting runs it after a changed spec named a new access Job and the completed one went: the record says a user was made', async () => {
    const target = new FakeTarget();
    ourStore(target);
    signedJob(target, 'm-access-2', 0); // the new spec's Job, not complete yet; the completed one was superseded
    const external = new NativeExternal(revoking('2'), target.asClient(), marks, { reader: target.asClient() });
    expect(await external.delete(withRecord, signal)).toEqual({ gone: false, requested: false });
    expect(target.log).toEqual(['create jobs/m-revoke']);
  });

  it('deleting skips it where no access Job was seen complete: no user was made', async () => {
    const target = new FakeTarget();
    ourStore(target);
    signedJob(target, 'm-access-1', 0);
    const external = new NativeExternal(revoking('1'), target.asClient(), marks, { reader: target.asClient() });
    expect(await external.delete(recorded, signal)).toEqual({ gone: true });
    expect(target.log).toEqual(['delete stores/m', 'delete jobs/m-access-1']);
  });
});

describe('deleteIfOurs', () => {
  const Jobs: ResourceType = { apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs', namespaced: true };
  const failed = (o: TargetObject): boolean => Boolean((o as { status?: { failed?: number } }).status?.failed);
  const job = (target: FakeTarget, uid: string, rv: string, failures: number): TargetObject => {
    const obj = target.put(Jobs, 'retire', {
      uid,
      resourceVersion: rv,
      ...marks.mark(Jobs, { metadata: { name: 'retire' } }, owner).metadata,
    });
    return Object.assign(obj, { status: { failed: failures } });
  };

  it('deletes only what its caller judged: a failed Job replaced since by one that is not failed is kept', async () => {
    const target = new FakeTarget();
    const judged = structuredClone(job(target, 'old-uid', '1', 1));
    job(target, 'new-uid', '2', 0); // made anew meanwhile
    const access = { client: target.asClient(), read: cacheOf(judged), marks, signal: new AbortController().signal };
    const result = await deleteIfOurs(access, { type: Jobs, name: 'retire' }, { owner, vouchers: {}, only: failed });
    expect(result.outcome).toBe('kept');
    expect(target.log).toEqual([]);
    expect(target.objects.get('jobs/retire')?.metadata.uid).toBe('new-uid');
  });

  it('deletes the failed Job it judged, conditional on that copy', async () => {
    const target = new FakeTarget();
    const judged = structuredClone(job(target, 'old-uid', '1', 1));
    const access = { client: target.asClient(), read: cacheOf(judged), marks, signal: new AbortController().signal };
    const result = await deleteIfOurs(access, { type: Jobs, name: 'retire' }, { owner, vouchers: {}, only: failed });
    expect(result.outcome).toBe('deleted');
    expect(target.log).toEqual(['delete jobs/retire']);
  });
});
