// NativeExternal.update's requests, against a fake target that enforces a server-side apply's
// preconditions as the API server does (a uid or resourceVersion in the applied object that the
// stored one lacks is a Conflict): a drift is repaired from the cached copies without a live read,
// a stale copy is never written over, and a companion already as built is not written again.
import type { ObjectKey } from '../../../../src/kit/kube/object-key.ts';
import { describe, expect, it } from '@jest/globals';
import type { KubeClient } from '../../../../src/kit/kube/client.ts';
import { KubeError } from '../../../../src/kit/kube/errors.ts';
import { refKey, type ResourceType } from '../../../../src/kit/kube/resources.ts';
import { RecordedError, type ManagedResource } from '../../../../src/runtime/managed/types.ts';
import { NativeExternal } from '../../../../src/runtime/native/external.ts';
import type { Companion, NativeKind, ObjectReader, TargetObject } from '../../../../src/runtime/native/kind.ts';
import { ANNOTATION_CREDENTIALS } from '../../../../src/runtime/native/rotation.ts';
import { kindContext } from '../../../../src/runtime/native/pass.ts';
import { OwnershipKey } from '../../../../src/runtime/ownership/key.ts';
import {
  ANNOTATION_BUILT_DIGEST,
  ANNOTATION_COMPANION_UIDS,
  ANNOTATION_TARGET_UID,
  OwnershipMarks,
  builtDigest,
  ownerOf,
} from '../../../../src/runtime/ownership/marks.ts';
import { Reasons } from '../../../../src/runtime/reasons.ts';

const Stores: ResourceType = { apiVersion: 'x.example.com/v1', kind: 'Store', plural: 'stores', namespaced: false };
const Settings: ResourceType = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const marks = new OwnershipMarks('cp-1', new OwnershipKey(Buffer.alloc(32, 7)));
const mr: ManagedResource = {
  apiVersion: 'x/v1',
  kind: 'Thing',
  metadata: { name: 'm', namespace: 'ns', uid: 'mr-uid', annotations: { [ANNOTATION_TARGET_UID]: 'm-uid' } },
  spec: { providerRef: { name: 'p' } },
};
const owner = ownerOf('things.x', mr);
const AT = '2026-01-01T00:00:00Z';
type Obj = TargetObject & { data?: Record<string, string>; spec?: { size: number } };
const kind: NativeKind<ManagedResource> = {
  resource: 'things.x',
  target: Stores,
  desired: (_mr, name) => ({ apiVersion: Stores.apiVersion, kind: 'Store', metadata: { name }, spec: { size: 4 } }) as Obj,
  companions: (_mr, name) => [
    {
      type: Settings,
      name: `${name}-settings`,
      namespace: 'ns',
      purpose: 'settings',
      build: () =>
        ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${name}-settings`, namespace: 'ns' }, data: { size: '4' } }) as Obj,
    },
  ],
  inspect: async () => ({ ready: true }),
};

/** Objects by "plural/name"; an apply checks the uid and resourceVersion it names; requests are logged. */
class FakeTarget {
  objects = new Map<string, Obj>();
  log: string[] = [];
  rv = 1;

  put(type: ResourceType, name: string, fields: Partial<Obj>, ns?: string): Obj {
    const marked = marks.mark(type, { metadata: { name, ...(ns ? { namespace: ns } : {}) } }, owner);
    const obj: Obj = {
      apiVersion: type.apiVersion,
      kind: type.kind,
      ...fields,
      metadata: {
        ...(ns ? { namespace: ns } : {}),
        uid: `${name}-uid`,
        resourceVersion: String(this.rv++),
        ...marked.metadata,
        ...fields.metadata,
        annotations: fields.metadata?.annotations
          ? { ...marked.metadata.annotations, ...fields.metadata.annotations }
          : marked.metadata.annotations,
        name,
      },
    };
    this.objects.set(`${type.plural}/${name}`, obj);
    return structuredClone(obj);
  }

  asClient(): KubeClient {
    return {
      get: async (type: ResourceType, { name }: ObjectKey) => {
        this.log.push(`GET ${type.plural}/${name}`);
        return structuredClone(this.objects.get(`${type.plural}/${name}`));
      },
      mergePatch: async (type: ResourceType, { name }: ObjectKey) => {
        this.log.push(`MERGE ${type.plural}/${name}`);
        const have = this.objects.get(`${type.plural}/${name}`);
        if (!have) throw new KubeError(404, 'NotFound', `${type.plural} "${name}" not found`);
        return structuredClone(have);
      },
      create: async (type: ResourceType, obj: Obj) => {
        this.log.push(`POST ${type.plural}/${obj.metadata.name}`);
        return this.put(type, obj.metadata.name, obj, obj.metadata.namespace);
      },
      delete: async (type: ResourceType, { name }: ObjectKey) => {
        this.log.push(`DELETE ${type.plural}/${name}`);
        return this.objects.delete(`${type.plural}/${name}`) ? 'deleted' : 'absent';
      },
      apply: async (type: ResourceType, obj: Obj) => {
        this.log.push(`PATCH ${type.plural}/${obj.metadata.name}`);
        const have = this.objects.get(`${type.plural}/${obj.metadata.name}`);
        const { uid, resourceVersion } = obj.metadata;
        // As the API server (kube-semantics.test): an apply naming the uid of an object gone since is a Conflict too.
        if (!have || (uid && uid !== have.metadata.uid) || (resourceVersion && resourceVersion !== have.metadata.resourceVersion))
          throw new KubeError(409, 'Conflict', 'the object has been modified');
        const next = { ...have, ...obj, metadata: { ...have.metadata, ...obj.metadata, resourceVersion: String(this.rv++) } };
        this.objects.set(`${type.plural}/${obj.metadata.name}`, next);
        return structuredClone(next);
      },
    } as unknown as KubeClient;
  }
}

/** The companion's metadata as provider-rook writes it: the digest of what its kind built. */
const asBuilt = (): Partial<Obj> => {
  const built = kind.companions!(mr, 'm', kindContext(marks))[0]!.build();
  return { metadata: { name: 'm-settings', annotations: { [ANNOTATION_BUILT_DIGEST]: builtDigest(built) } } };
};

/** A cache that answers with the copies it was given. */
const cacheOf = (...copies: Obj[]): ObjectReader => ({
  get: async <T>(_type: ResourceType, { name }: { name: string }) =>
    structuredClone(copies.find((c) => c.metadata.name === name)) as T | undefined,
});
const signal = new AbortController().signal;

describe('NativeExternal.update', () => {
  it('repairs a drifted object from the cached copies, with no live read: its write names the copy it checked', async () => {
    const target = new FakeTarget();
    const store = target.put(Stores, 'm', { spec: { size: 6 } });
    const settings = target.put(Settings, 'm-settings', { data: { size: '4' }, ...asBuilt() }, 'ns');
    await new NativeExternal(kind, target.asClient(), marks, { reader: cacheOf(store, settings) }).update(mr, signal);
    expect(target.log).toEqual(['PATCH stores/m']); // the companion is as built: not written again
    expect(target.objects.get('stores/m')?.spec).toEqual({ size: 4 });
  });

  it('writes a companion that differs from what its kind builds', async () => {
    const target = new FakeTarget();
    const store = target.put(Stores, 'm', { spec: { size: 4 } });
    const settings = target.put(Settings, 'm-settings', { data: { size: '9' } }, 'ns');
    await new NativeExternal(kind, target.asClient(), marks, { reader: cacheOf(store, settings) }).update(mr, signal);
    expect(target.log.sort()).toEqual(['PATCH configmaps/m-settings', 'PATCH stores/m']);
    expect(target.objects.get('configmaps/m-settings')?.data).toEqual({ size: '4' });
  });

  it('writes a companion that holds every field built, and one a later build dropped (its digest tells)', async () => {
    const target = new FakeTarget();
    const store = target.put(Stores, 'm', { spec: { size: 4 } });
    const older = { metadata: { name: 'm-settings', annotations: { [ANNOTATION_BUILT_DIGEST]: 'an-older-build' } } };
    const settings = target.put(Settings, 'm-settings', { data: { size: '4', dropped: 'since' }, ...older }, 'ns');
    await new NativeExternal(kind, target.asClient(), marks, { reader: cacheOf(store, settings) }).update(mr, signal);
    expect(target.log.sort()).toEqual(['PATCH configmaps/m-settings', 'PATCH stores/m']);
  });

  it('never writes over a stale cached copy: the server refuses, and everything is read again from it', async () => {
    const target = new FakeTarget();
    const stale = target.put(Stores, 'm', { spec: { size: 6 } });
    const settings = target.put(Settings, 'm-settings', { data: { size: '4' }, ...asBuilt() }, 'ns');
    target.put(Stores, 'm', { spec: { size: 8 } }); // changed since the cache saw it
    await new NativeExternal(kind, target.asClient(), marks, { reader: cacheOf(stale, settings) }).update(mr, signal);
    expect(target.log).toEqual(['PATCH stores/m', 'GET stores/m', 'GET configmaps/m-settings', 'PATCH stores/m']);
    expect(target.objects.get('stores/m')?.spec).toEqual({ size: 4 });
  });

  it('reads again from the server when a companion the cache still holds is gone, and makes it anew', async () => {
    const target = new FakeTarget();
    const store = target.put(Stores, 'm', { spec: { size: 4 } });
    const settings = target.put(Settings, 'm-settings', { data: { size: '9' } }, 'ns');
    target.objects.delete('configmaps/m-settings');
    await new NativeExternal(kind, target.asClient(), marks, { reader: cacheOf(store, settings) }).update(mr, signal);
    expect(target.log.slice(0, 2).sort()).toEqual(['PATCH configmaps/m-settings', 'PATCH stores/m']);
    expect(target.log.slice(2)).toEqual(['GET stores/m', 'GET configmaps/m-settings', 'POST configmaps/m-settings', 'PATCH stores/m']);
    expect(target.objects.get('configmaps/m-settings')?.data).toEqual({ size: '4' });
  });

  it('reads again from the server when a kept companion whose marks it signs anew is gone (NotFound), and makes nothing in its place', async () => {
    const target = new FakeTarget();
    const store = target.put(Stores, 'm', { spec: { size: 4 } });
    // The store's own keys, which are never made anew, signed under another reclaim policy: only its marks are written (a merge patch).
    const orphaned = marks.mark(Settings, { metadata: { name: 'm-settings', namespace: 'ns' } }, { ...owner, reclaimPolicy: 'Orphan' });
    const settings = target.put(Settings, 'm-settings', { data: { size: '4' }, metadata: orphaned.metadata }, 'ns');
    target.objects.delete('configmaps/m-settings');
    const kept: NativeKind<ManagedResource> = {
      ...kind,
      companions: (m, name, ctx) =>
        kind.companions!(m, name, ctx).map((c) => ({ ...c, irreplaceable: { reason: Reasons.AccessKeysLost, remedy: 'put them back' } })),
    };
    await new NativeExternal(kept, target.asClient(), marks, { reader: cacheOf(store, settings) }).update(mr, signal);
    expect(target.log.slice(0, 2).sort()).toEqual(['MERGE configmaps/m-settings', 'PATCH stores/m']);
    expect(target.log.slice(2)).toEqual(['GET stores/m', 'GET configmaps/m-settings', 'PATCH stores/m']);
    expect(target.objects.has('configmaps/m-settings')).toBe(false);
  });

  it('leaves an object that, as the server says, is no longer ours, though the cache still shows our marks', async () => {
    const target = new FakeTarget();
    const stale = target.put(Stores, 'm', { spec: { size: 6 } });
    const settings = target.put(Settings, 'm-settings', { data: { size: '4' }, ...asBuilt() }, 'ns');
    // Replaced by someone else's object of the same name, without our marks.
    target.put(Stores, 'm', { spec: { size: 8 }, metadata: { name: 'm', uid: 'theirs', labels: {}, annotations: {} } });
    const refused = await new NativeExternal(kind, target.asClient(), marks, { reader: cacheOf(stale, settings) })
      .update(mr, signal)
      .catch((e: unknown) => (e instanceof RecordedError ? e.cause : e));
    expect(refused).toMatchObject({ reason: Reasons.ExternalResourceConflict });
    expect(target.objects.get('stores/m')?.spec).toEqual({ size: 8 });
    expect(target.log.filter((l) => l.startsWith('PATCH'))).toEqual(['PATCH stores/m']); // the refused attempt only
  });
});

/** The resource after a rotation: generation 1 published, generation 0 past its grace period (1h) at AT + 2h. */
const rotated: ManagedResource = {
  ...mr,
  metadata: {
    ...mr.metadata,
    annotations: {
      ...mr.metadata.annotations,
      [ANNOTATION_CREDENTIALS]: JSON.stringify({ generation: 1, retired: -1, rotatedAt: AT, published: 1, publishedAt: AT, previous: 0 }),
    },
  },
};

describe('NativeExternal.update, while a consumer still holds the keys a rotation replaced', () => {
  // A companion holds each generation's keys, and deleting one revokes them (Rotation.retiredBy).
  const keysOf = (g: number): Companion => ({
    type: Settings,
    name: `m-keys-${g}`,
    namespace: 'ns',
    purpose: `keys of generation ${g}`,
    build: () =>
      ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `m-keys-${g}`, namespace: 'ns' }, data: { g: String(g) } }) as Obj,
  });
  const rotating: NativeKind<ManagedResource> = {
    ...kind,
    companions: (_mr, _name, ctx) =>
      [ctx.credentials.generation, ...ctx.credentials.outstanding.filter((g) => !ctx.credentials.due.includes(g))].map(keysOf),
    rotation: { retiredBy: (_mr, _name, ctx) => ctx.credentials.due.map(keysOf) },
  };
  const repairWith = async (retirementHold?: () => string) => {
    const target = new FakeTarget();
    const store = target.put(Stores, 'm', { spec: { size: 6 } }); // a drift, so the update has work to do
    const keys = [0, 1].map((g) => target.put(Settings, `m-keys-${g}`, { data: { g: String(g) } }, 'ns'));
    const opts = { reader: cacheOf(store, ...keys), now: () => Date.parse(AT) + 7_200_000, ...(retirementHold ? { retirementHold } : {}) };
    await new NativeExternal(rotating, target.asClient(), marks, opts).update(rotated, signal);
    return target;
  };

  it('keeps them: repairing a drift does not delete what holds them, as observe does not call for it', async () => {
    const target = await repairWith(() => 'cluster b holds generation 0');
    expect(target.log.filter((l) => l.startsWith('DELETE'))).toEqual([]);
    expect(target.objects.has('configmaps/m-keys-0')).toBe(true);
  });

  it('and removes them once nothing holds them', async () => {
    const target = await repairWith();
    expect(target.log.filter((l) => l.startsWith('DELETE'))).toEqual(['DELETE configmaps/m-keys-0']);
  });
});

describe('a failed Job removing keys past their grace period', () => {
  const Jobs: ResourceType = { apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs', namespaced: true };
  const retireJob: Companion = {
    type: Jobs,
    name: 'm-retire-0',
    namespace: 'ns',
    purpose: 'Job removing old keys',
    build: () => ({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'm-retire-0', namespace: 'ns' } }) as Obj,
  };
  const retiring: NativeKind<ManagedResource> = {
    ...kind,
    companions: () => [],
    rotation: {
      retire: () => ({
        object: retireJob,
        outcome: (job) =>
          (job.status as { failed?: number } | undefined)?.failed
            ? { failed: 'its pod failed every retry' }
            : { done: false, message: 'running' },
      }),
    },
  };
  const setUp = () => {
    const target = new FakeTarget();
    const store = target.put(Stores, 'm', { spec: { size: 4 } });
    const job = target.put(Jobs, 'm-retire-0', { status: { failed: 1 } }, 'ns');
    const external = new NativeExternal(retiring, target.asClient(), marks, {
      reader: cacheOf(store, job),
      now: () => Date.parse(AT) + 7_200_000,
    });
    return { target, external };
  };

  it('is drift to observe, not an error that would stop every pass of the resource until the Job is gone', async () => {
    const seen = await setUp().external.observe(rotated, signal);
    expect(seen).toMatchObject({ exists: true, upToDate: false, diff: 'the work removing keys of generation 0 failed, and is made again' });
  });

  it('is deleted by the repair, to be made again, and the repair says it failed', async () => {
    const { target, external } = setUp();
    const refused = await external.update(rotated, signal).catch((e: unknown) => (e instanceof RecordedError ? e.cause : e));
    expect(refused).toMatchObject({ reason: Reasons.RotationFailed });
    expect((refused as Error).message).toMatch(
      /generation 0, whose grace period ended \(they still work\): its pod failed every retry\. It is made again$/,
    );
    expect(target.log).toContain('DELETE jobs/m-retire-0');
  });
});

describe('NativeExternal.observe', () => {
  const observeWith = (settings: Partial<Obj>) => {
    const target = new FakeTarget();
    const store = target.put(Stores, 'm', { spec: { size: 4 } });
    const held = target.put(Settings, 'm-settings', settings, 'ns');
    return new NativeExternal(kind, target.asClient(), marks, { reader: cacheOf(store, held) }).observe(mr, signal);
  };

  it('finds a companion as built up to date', async () => {
    await expect(observeWith({ data: { size: '4' }, ...asBuilt() })).resolves.toMatchObject({ exists: true, upToDate: true });
  });

  it('finds a companion that holds every field built, but was built by an earlier build, drifted: only an apply drops what that build had', async () => {
    const older = { metadata: { name: 'm-settings', annotations: { [ANNOTATION_BUILT_DIGEST]: 'an-older-build' } } };
    const seen = await observeWith({ data: { size: '4', dropped: 'since' }, ...older });
    expect(seen).toMatchObject({ exists: true, upToDate: false });
    expect(seen.diff).toBe(`ConfigMap.metadata.annotations.${ANNOTATION_BUILT_DIGEST}`);
  });

  it('finds a companion whose fields differ drifted, by the field', async () => {
    const seen = await observeWith({ data: { size: '9' }, ...asBuilt() });
    expect(seen).toMatchObject({ exists: true, upToDate: false, diff: 'ConfigMap.data.size' });
  });
});

describe('NativeExternal.observe, a recorded companion made again whose new uid went unrecorded', () => {
  const settings = kind.companions!(mr, 'm', kindContext(marks))[0]!;
  const now = Date.now();
  const recordedAt = Math.floor((now - 3_600_000) / 1000);
  // The resource recorded the companion it made an hour ago; someone deleted it, and the create that made it again lost its answer.
  const recorded = {
    ...mr,
    metadata: {
      ...mr.metadata,
      annotations: {
        ...mr.metadata.annotations,
        [ANNOTATION_COMPANION_UIDS]: JSON.stringify({ [refKey(settings)]: `gone-uid@${recordedAt}` }),
      },
    },
  };
  const second = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString();
  /** The companion as provider-rook creates it (stamped made at madeAt), created by the server createdAt. */
  const observeWith = (madeAt: number, createdAt: number) => {
    const target = new FakeTarget();
    const store = target.put(Stores, 'm', { spec: { size: 4 } });
    const made = marks.stamped(
      Settings,
      marks.mark(Settings, { data: { size: '4' }, metadata: { ...asBuilt().metadata!, namespace: 'ns' } } as Obj, owner),
      madeAt,
    );
    const held = target.put(
      Settings,
      'm-settings',
      { ...made, metadata: { ...made.metadata, creationTimestamp: second(createdAt) } },
      'ns',
    );
    return new NativeExternal(kind, target.asClient(), marks, { reader: cacheOf(store, held) }).observe(recorded, signal);
  };

  it('is ours (only provider-rook signs when it made it: later than the recorded one, and it was created then), and its uid is recorded', async () => {
    const seen = await observeWith(now, now + 300);
    expect(seen).toMatchObject({ exists: true, upToDate: true });
    expect(JSON.parse(seen.annotations![ANNOTATION_COMPANION_UIDS]!)).toEqual({
      [refKey(settings)]: `m-settings-uid@${Math.floor(now / 1000)}`,
    });
  });

  it('is refused when it is a copy of the recorded one (its time, signature and all, put back by a tenant)', async () => {
    await expect(observeWith(recordedAt * 1000, now)).rejects.toMatchObject({ message: expect.stringMatching(/it was replaced/) });
  });

  it('is refused when it is a copy created an hour after provider-rook made it (a re-apply of its manifest)', async () => {
    await expect(observeWith(now - 1_800_000, now + 1_800_000)).rejects.toMatchObject({
      message: expect.stringMatching(/it was replaced/),
    });
  });
});
