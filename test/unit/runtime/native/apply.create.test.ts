// NativeExternal.create's requests, against a fake target that answers creates as the API server
// does (AlreadyExists for a name taken, NotFound in a missing namespace): a first create writes
// without reading first; anything found in the way is read and checked before the object is made.
// An update never makes the object: that is a create's, which records it.
import type { ObjectKey } from '../../../../src/kit/kube/object-key.ts';
import { describe, expect, it } from '@jest/globals';
import type { KubeClient } from '../../../../src/kit/kube/client.ts';
import { KubeError, isConflict } from '../../../../src/kit/kube/errors.ts';
import type { ResourceType } from '../../../../src/kit/kube/resources.ts';
import { RecordedError, type ManagedResource } from '../../../../src/runtime/managed/types.ts';
import { NativeExternal } from '../../../../src/runtime/native/external.ts';
import type { NativeKind, TargetObject } from '../../../../src/runtime/native/kind.ts';
import { OwnershipKey } from '../../../../src/runtime/ownership/key.ts';
import { ANNOTATION_COMPANION_UIDS, ANNOTATION_TARGET_UID, OwnershipMarks } from '../../../../src/runtime/ownership/marks.ts';

const Stores: ResourceType = { apiVersion: 'x.example.com/v1', kind: 'Store', plural: 'stores', namespaced: true };
const Keys: ResourceType = { apiVersion: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
const Namespaces: ResourceType = { apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false };
const marks = new OwnershipMarks('cp-1', new OwnershipKey(Buffer.alloc(32, 7)));
const kind: NativeKind<ManagedResource> = {
  resource: 'things.x',
  target: Stores,
  desired: (_mr, name) => ({ apiVersion: Stores.apiVersion, kind: 'Store', metadata: { name, namespace: 'stores' } }),
  companions: (_mr, name) => [
    {
      type: Keys,
      name: `${name}-keys`,
      namespace: 'stores',
      purpose: 'keys Secret',
      build: () => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name: `${name}-keys`, namespace: 'stores' } }),
    },
  ],
  inspect: async () => ({ ready: true }),
};
let n = 0;
/** A new resource each time: a first create, nothing recorded. */
const fresh = (): ManagedResource => ({
  apiVersion: 'x/v1',
  kind: 'Thing',
  metadata: { name: `m${++n}`, namespace: 'ns', uid: `mr-uid-${n}` },
  spec: { providerRef: { name: 'p' } },
});

/** Objects by "plural/namespace/name"; every request logged as "VERB plural/name". */
class FakeTarget {
  objects = new Map<string, TargetObject>();
  log: string[] = [];
  /** Creates of this plural fail as a server error would. */
  failing?: string;

  asClient(): KubeClient {
    const key = (type: ResourceType, name: string, ns?: string): string => `${type.plural}/${type.namespaced ? ns : ''}/${name}`;
    return {
      get: async (type: ResourceType, { namespace: ns, name }: ObjectKey) => {
        this.log.push(`GET ${type.plural}/${name}`);
        return structuredClone(this.objects.get(key(type, name, ns)));
      },
      create: async (type: ResourceType, obj: TargetObject) => {
        this.log.push(`POST ${type.plural}/${obj.metadata.name}`);
        if (type.plural === this.failing) throw new KubeError(500, 'InternalError', 'the server failed');
        const ns = obj.metadata.namespace;
        if (type.namespaced && !this.objects.has(key(Namespaces, ns!)))
          throw new KubeError(404, 'NotFound', `namespaces "${ns}" not found`);
        if (this.objects.has(key(type, obj.metadata.name, ns))) throw new KubeError(409, 'AlreadyExists', 'already exists');
        const made = { ...structuredClone(obj), metadata: { ...obj.metadata, uid: `${obj.metadata.name}-uid`, resourceVersion: '1' } };
        this.objects.set(key(type, obj.metadata.name, ns), made);
        return structuredClone(made);
      },
      apply: async (type: ResourceType, obj: TargetObject) => {
        this.log.push(`PATCH ${type.plural}/${obj.metadata.name}`);
        // As the API server: a Job's pod template cannot change.
        const have = this.objects.get(key(type, obj.metadata.name, obj.metadata.namespace));
        if (type.kind === 'Job' && have && JSON.stringify(have.spec) !== JSON.stringify(obj.spec))
          throw new KubeError(422, 'Invalid', 'spec.template: Invalid value: field is immutable');
        return structuredClone(obj);
      },
      list: async (type: ResourceType) => {
        this.log.push(`LIST ${type.plural}`);
        return { items: [...this.objects.entries()].filter(([k]) => k.startsWith(`${type.plural}/`)).map(([, o]) => structuredClone(o)) };
      },
    } as unknown as KubeClient;
  }
}

describe('NativeExternal.create', () => {
  it('makes a first resource with creates alone once its namespace is known, and reads the namespace once', async () => {
    const target = new FakeTarget();
    const external = new NativeExternal(kind, target.asClient(), marks);
    await external.create(fresh(), new AbortController().signal);
    expect(target.log).toEqual(['GET namespaces/stores', 'POST namespaces/stores', 'POST secrets/m1-keys', 'POST stores/m1']);
    target.log = [];
    await external.create(fresh(), new AbortController().signal);
    expect(target.log).toEqual(['POST secrets/m2-keys', 'POST stores/m2']);
  });

  it('refuses to make the object beside a companion someone else made, and writes nothing over it', async () => {
    const target = new FakeTarget();
    const external = new NativeExternal(kind, target.asClient(), marks);
    await external.create(fresh(), new AbortController().signal); // the namespace is known now
    const mr = fresh();
    const foreign = { apiVersion: 'v1', kind: 'Secret', metadata: { name: `${mr.metadata.name}-keys`, namespace: 'stores', uid: 'x' } };
    target.objects.set(`secrets/stores/${mr.metadata.name}-keys`, foreign);
    target.log = [];
    const err = await external.create(mr, new AbortController().signal).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(target.objects.has(`stores/stores/${mr.metadata.name}`)).toBe(false);
    expect(target.objects.get(`secrets/stores/${mr.metadata.name}-keys`)).toEqual(foreign);
    expect(target.log.filter((l) => !l.startsWith('GET'))).toEqual([`POST secrets/${mr.metadata.name}-keys`]);
  });

  it('makes the namespace again for a resource whose object was made before, once someone deleted both', async () => {
    const target = new FakeTarget();
    const external = new NativeExternal(kind, target.asClient(), marks);
    const mr = fresh();
    const made = await external.create(mr, new AbortController().signal);
    target.objects.clear(); // someone deleted the namespace, with the store in it
    target.log = [];
    const recorded = {
      ...mr,
      metadata: { ...mr.metadata, annotations: { [ANNOTATION_TARGET_UID]: made.annotations![ANNOTATION_TARGET_UID]! } },
    };
    await external.create(recorded, new AbortController().signal);
    expect(target.log.slice(0, 2)).toEqual(['GET namespaces/stores', 'POST namespaces/stores']);
    expect(target.objects.has(`stores/stores/${mr.metadata.name}`)).toBe(true);
  });

  it('reads the namespace again once a create there finds it gone, and makes it', async () => {
    const target = new FakeTarget();
    const external = new NativeExternal(kind, target.asClient(), marks);
    await external.create(fresh(), new AbortController().signal);
    target.objects.clear(); // the namespace went, with everything in it
    target.log = [];
    const mr = fresh();
    const m = mr.metadata.name;
    await external.create(mr, new AbortController().signal);
    expect(target.log).toEqual([
      `POST secrets/${m}-keys`, // NotFound: the namespace is gone
      'GET namespaces/stores',
      'POST namespaces/stores',
      `GET stores/${m}`,
      `GET secrets/${m}-keys`,
      `POST secrets/${m}-keys`,
      `POST stores/${m}`,
    ]);
  });

  it("records the uid of each companion it made beside its object's, and when it made it, in the create's own outcome", async () => {
    const target = new FakeTarget();
    const external = new NativeExternal(kind, target.asClient(), marks);
    const mr = fresh();
    const made = await external.create(mr, new AbortController().signal);
    const m = mr.metadata.name;
    expect(JSON.parse(made.annotations![ANNOTATION_COMPANION_UIDS]!)).toEqual({
      [`v1/Secret/stores/${m}-keys`]: expect.stringMatching(new RegExp(`^${m}-keys-uid@\\d+$`)),
    });
  });

  it('records the companions it made when the object then fails, with the failure: never a record naming what they replaced', async () => {
    const target = new FakeTarget();
    const external = new NativeExternal(kind, target.asClient(), marks);
    await external.create(fresh(), new AbortController().signal); // the namespace is known now
    target.failing = 'stores';
    const mr = fresh();
    const err = await external.create(mr, new AbortController().signal).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RecordedError);
    expect((err as RecordedError).cause).toBeInstanceOf(KubeError);
    const m = mr.metadata.name;
    expect(JSON.parse((err as RecordedError).annotations[ANNOTATION_COMPANION_UIDS]!)).toEqual({
      [`v1/Secret/stores/${m}-keys`]: expect.stringMatching(new RegExp(`^${m}-keys-uid@\\d+$`)),
    });
  });
});

describe('NativeExternal.update', () => {
  it('makes nothing when the object it repairs was deleted since it was observed: a create makes it again, and records it', async () => {
    const target = new FakeTarget();
    const external = new NativeExternal(kind, target.asClient(), marks);
    const mr = fresh();
    const made = await external.create(mr, new AbortController().signal);
    const recorded = { ...mr, metadata: { ...mr.metadata, annotations: made.annotations } };
    target.objects.delete(`stores/stores/${mr.metadata.name}`);
    target.log = [];
    const err = await external.update(recorded, new AbortController().signal).catch((e: unknown) => e);
    expect(isConflict(err)).toBe(true);
    expect(target.log.filter((l) => !l.startsWith('GET'))).toEqual([]);
    expect(target.objects.has(`stores/stores/${mr.metadata.name}`)).toBe(false);
  });
});

describe('work a kind supersedes (Jobs), as an earlier release made it', () => {
  const Jobs: ResourceType = { apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs', namespaced: true };
  let script = 'echo one';
  const withJob: NativeKind<ManagedResource> = {
    ...kind,
    companions: (mr, name, ctx) => [
      ...kind.companions!(mr, name, ctx),
      {
        type: Jobs,
        name: `${name}-access`,
        namespace: 'stores',
        purpose: 'access Job',
        build: () => ({
          apiVersion: 'batch/v1',
          kind: 'Job',
          metadata: { name: `${name}-access`, namespace: 'stores', labels: { work: 'access' } },
          spec: { template: { spec: { containers: [{ name: 'c', command: ['sh', '-c', script] }] } } },
        }),
      },
    ],
    superseded: { type: Jobs, labelSelector: 'work', matches: (labels) => 'work' in labels },
  };

  it("is neither drift nor written over when today's build of it differs (its spec cannot change; its name says what it does)", async () => {
    const target = new FakeTarget();
    const external = new NativeExternal(withJob, target.asClient(), marks);
    const mr = fresh();
    const made = await external.create(mr, new AbortController().signal);
    const recorded = { ...mr, metadata: { ...mr.metadata, annotations: made.annotations } };
    script = 'echo one; echo a check a later release added';
    const observed = await external.observe(recorded, new AbortController().signal);
    expect([observed.upToDate, observed.diff]).toEqual([true, undefined]);
    // A repair for another reason leaves the Job as it is, where an apply would be refused.
    target.log = [];
    await external.update(recorded, new AbortController().signal);
    expect(target.log.filter((l) => l.includes('jobs/') && !l.startsWith('GET'))).toEqual([]);
  });
});
