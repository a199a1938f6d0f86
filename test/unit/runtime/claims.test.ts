// The claim and default-class reconcilers' decisions against an in-memory API (a fake of our own
// KubeClient surface): crossplane's claim test vectors (Part A of the reference) and our additions.
import type { ReadonlyDeep } from '../../../src/kit/controller/informer.ts';
import { describe, expect, it } from '@jest/globals';
import { AccessReconciler, type Grantor } from '../../../src/runtime/claims/access.ts';
import { ClaimReconciler, FINALIZER_CLAIM, type Cache } from '../../../src/runtime/claims/binding.ts';
import { managedNameFor, type Claim } from '../../../src/runtime/claims/claim.ts';
import { DefaultClassReconciler } from '../../../src/runtime/claims/defaulting.ts';
import type { DefaultClassPolicy } from '../../../src/runtime/claims/claim.ts';
import { ClaimRouter } from '../../../src/runtime/claims/routing.ts';
import { UnservedClaimReconciler } from '../../../src/runtime/claims/unserved.ts';
import { ReasonedError } from '../../../src/kit/conditions.ts';
import { Reasons } from '../../../src/runtime/reasons.ts';
import { MemoryEventRecorder } from '../../../src/kit/controller/events.ts';
import type { KubeClient, KubeObjectLike } from '../../../src/kit/kube/client.ts';
import { KubeError } from '../../../src/kit/kube/errors.ts';
import { Secrets, type ResourceType } from '../../../src/kit/kube/resources.ts';
import { silentLogger } from '../../../src/kit/logger.ts';
import { setBindable, type ManagedResource } from '../../../src/runtime/managed/types.ts';
import { applyJsonPatch } from '../../kit/json-patch.ts';
import { formatObjectKey, type ObjectKey } from '../../../src/kit/kube/object-key.ts';
import { mapCache } from '../../kit/map-cache.ts';
import { cond } from '../../kit/conditions.ts';

const t = (kind: string, plural: string): ResourceType => ({ apiVersion: 'x.example.com/v1', kind, plural, namespaced: true });
const Claims = t('Bucket', 'buckets');
const Portables = t('BucketClass', 'bucketclasses');
const Classes = t('StoreClass', 'storeclasses');
const Managed = t('Store', 'stores');
const Policies = t('BucketPolicy', 'bucketpolicies');

type Obj = KubeObjectLike & { metadata: KubeObjectLike['metadata'] & Record<string, unknown>; [k: string]: unknown };

/** An API server in a Map: resourceVersions, conflicts, AlreadyExists, NotFound; every write logged. */
class FakeApi {
  objects = new Map<string, Obj>();
  writes: string[] = [];
  private rv = 1;
  private key = (type: ResourceType, ns: string | undefined, name: string) => `${type.plural}/${ns}/${name}`;
  seed(type: ResourceType, obj: object): void {
    const o = structuredClone(obj) as Obj;
    o.metadata.resourceVersion = String(this.rv++);
    o.metadata.uid ??= `uid-${o.metadata.name}`;
    this.objects.set(this.key(type, o.metadata.namespace, o.metadata.name), o);
  }
  cache<T>(type: ResourceType): Cache<T> {
    return {
      get: (key) => {
        const [ns, name] = formatObjectKey(key).split('/');
        return this.objects.get(this.key(type, ns, name!)) as ReadonlyDeep<T> | undefined;
      },
      list: () => [...this.objects.entries()].filter(([k]) => k.startsWith(`${type.plural}/`)).map(([, v]) => v as ReadonlyDeep<T>),
    };
  }
  async get(type: ResourceType, { namespace: ns, name }: ObjectKey) {
    return structuredClone(this.objects.get(this.key(type, ns, name)));
  }
  async list(type: ResourceType, { namespace }: { namespace?: string } = {}) {
    const items = [...this.objects.entries()]
      .filter(([k]) => k.startsWith(`${type.plural}/${namespace === undefined ? '' : `${namespace}/`}`))
      .map(([, v]) => structuredClone(v));
    return { items, resourceVersion: String(this.rv) };
  }
  async create(type: ResourceType, obj: Obj) {
    const k = this.key(type, obj.metadata.namespace, obj.metadata.name);
    if (this.objects.has(k)) throw new KubeError(409, 'AlreadyExists', `${obj.metadata.name} already exists`);
    this.writes.push(`create ${type.kind} ${obj.metadata.name}`);
    this.seed(type, obj);
    return structuredClone(this.objects.get(k)!);
  }
  private replace(type: ResourceType, obj: Obj, what: string) {
    const k = this.key(type, obj.metadata.namespace, obj.metadata.name);
    const cur = this.objects.get(k);
    if (!cur) throw new KubeError(404, 'NotFound', 'not found');
    if (cur.metadata.resourceVersion !== obj.metadata.resourceVersion) throw new KubeError(409, 'Conflict', 'stale');
    this.writes.push(`${what} ${type.kind} ${obj.metadata.name}`);
    const next = structuredClone(what === 'status' ? { ...cur, status: obj.status } : { ...obj, status: cur.status });
    next.metadata.resourceVersion = String(this.rv++);
    this.objects.set(k, next);
    return structuredClone(next);
  }
  async update(type: ResourceType, obj: Obj) {
    return this.replace(type, obj, 'update');
  }
  /** No resourceVersion needed; a failed test is the API server's 422. */
  async jsonPatch(type: ResourceType, { namespace: ns, name }: ObjectKey, ops: unknown[]) {
    const k = this.key(type, ns, name);
    const cur = this.objects.get(k);
    if (!cur) throw new KubeError(404, 'NotFound', 'not found');
    const next = applyJsonPatch(cur, ops);
    this.writes.push(`patch ${type.kind} ${name}`);
    next.metadata.resourceVersion = String(this.rv++);
    this.objects.set(k, next);
    return structuredClone(next);
  }
  async updateStatus(type: ResourceType, obj: Obj) {
    return this.replace(type, obj, 'status');
  }
  async mergePatch(type: ResourceType, { namespace: ns, name }: ObjectKey, patch: { data?: Record<string, string> }) {
    const cur = this.objects.get(this.key(type, ns, name))!;
    this.writes.push(`patch ${type.kind} ${name}`);
    cur.data = { ...(cur.data as object), ...patch.data };
    return structuredClone(cur);
  }
  async delete(type: ResourceType, { namespace: ns, name }: ObjectKey) {
    this.writes.push(`delete ${type.kind} ${name}`);
    return this.objects.delete(this.key(type, ns, name));
  }
}

/** The resource's connection Secret, controlled by it (uid), as its controller writes it. */
function seedConnectionSecret(api: FakeApi, uid: string): void {
  api.seed(Secrets, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'conn', namespace: 'infra', ownerReferences: [{ uid, controller: true }] },
    data: { password: 'c2VjcmV0' },
  });
}

function world(
  opts: {
    allowConfigure?: boolean;
    providers?: Map<string, { metadata: { labels?: Record<string, string> } }>;
    takes?: (c: Claim) => boolean;
    /** The Provider configure places the resource on (as a class that shares a store does: the store's). */
    placesOn?: string;
  } = {},
) {
  const api = new FakeApi();
  const recorder = new MemoryEventRecorder();
  api.seed(Portables, {
    apiVersion: Portables.apiVersion,
    kind: 'BucketClass',
    metadata: { name: 'std', namespace: 'app' },
    classRef: { apiVersion: Classes.apiVersion, kind: Classes.kind, name: 'gold', namespace: 'infra' },
  });
  api.seed(Classes, {
    apiVersion: Classes.apiVersion,
    kind: Classes.kind,
    metadata: { name: 'gold', namespace: 'infra' },
    spec: { reclaimPolicy: 'Delete', providerRef: { name: 'target' } },
  });
  const reconciler = new ClaimReconciler<Obj, ManagedResource>({
    client: api as unknown as KubeClient,
    recorder,
    log: silentLogger,
    claims: { type: Claims, cache: api.cache(Claims) },
    portableClasses: { type: Portables, cache: api.cache(Portables) },
    classes: { type: Classes, cache: api.cache(Classes) },
    managed: { type: Managed, cache: api.cache(Managed) },
    secrets: api.cache(Secrets),
    providers: opts.providers && mapCache(opts.providers),
    takes: opts.takes,
    configure: (_claim, cls) => {
      if (opts.allowConfigure === false) throw new ReasonedError('NamespaceNotAllowed', 'not from this namespace');
      return {
        apiVersion: Managed.apiVersion,
        kind: Managed.kind,
        metadata: { name: '' },
        spec: {
          reclaimPolicy: (cls.spec as { reclaimPolicy: 'Delete' }).reclaimPolicy,
          writeConnectionSecretToRef: { name: 'conn' },
          ...(opts.placesOn ? { providerRef: { name: opts.placesOn } } : {}),
        },
      };
    },
  });
  return { api, recorder, reconciler };
}

function claim(
  over: Partial<Claim['metadata']> = {},
  spec: Claim['spec'] = { classRef: { name: 'std' }, writeConnectionSecretToRef: { name: 'mine' } },
): Claim {
  return {
    apiVersion: Claims.apiVersion,
    kind: 'Bucket',
    metadata: { name: 'b', namespace: 'app', uid: 'claim-uid', generation: 1, ...over },
    spec,
  };
}

const signal = new AbortController().signal;
const readClaim = (api: FakeApi) => api.objects.get('buckets/app/b') as unknown as Claim;
const mrName = managedNameFor(claim());

describe('claim reconciler', () => {
  it("says Scheduled=False while its selector misses the class's one Provider, and Scheduled=True once placed there", async () => {
    const providers = new Map([['infra/target', { metadata: { labels: { region: 'us' } } }]]);
    const { api, reconciler } = world({ providers });
    api.seed(
      Claims,
      claim(
        {},
        { classRef: { name: 'std' }, writeConnectionSecretToRef: { name: 'mine' }, providerSelector: { matchLabels: { region: 'eu' } } },
      ),
    );
    await reconciler.reconcile('app/b', signal);
    expect(cond(readClaim(api), 'Scheduled')).toMatchObject({
      status: 'False',
      reason: 'NoMatchingProvider',
    });
    expect(api.objects.get(`stores/infra/${mrName}`)).toBeUndefined();

    providers.set('infra/target', { metadata: { labels: { region: 'eu' } } });
    await reconciler.reconcile('app/b', signal);
    const mr = api.objects.get(`stores/infra/${mrName}`)!;
    expect(mr.spec).toMatchObject({ providerRef: { name: 'target' } });
    mr.status = { bindingPhase: 'Unbound', conditions: [{ type: 'Ready', status: 'True', reason: 'Available', lastTransitionTime: 'x' }] };
    await reconciler.reconcile('app/b', signal);
    const claimNow = readClaim(api);
    expect(cond(claimNow, 'Scheduled')).toMatchObject({
      status: 'True',
      message: 'on Provider target, named by its class',
    });
    expect(claimNow.status?.providerRef).toEqual({ name: 'target' });
  });

  it("refuses a claim whose selector misses the Provider of the store its class shares, as it does the class's own Provider", async () => {
    const providers = new Map([['infra/store-target', { metadata: { labels: { region: 'us' } } }]]);
    const { api, reconciler } = world({ providers, placesOn: 'store-target' });
    const spec = {
      classRef: { name: 'std' },
      writeConnectionSecretToRef: { name: 'mine' },
      providerSelector: { matchLabels: { region: 'eu' } },
    };
    api.seed(Claims, claim({}, spec));
    await reconciler.reconcile('app/b', signal);
    expect(cond(readClaim(api), 'Scheduled')).toMatchObject({ status: 'False', reason: 'NoMatchingProvider' });
    expect(api.objects.get(`stores/infra/${mrName}`)).toBeUndefined();
    providers.set('infra/store-target', { metadata: { labels: { region: 'eu' } } });
    await reconciler.reconcile('app/b', signal);
    expect(api.objects.get(`stores/infra/${mrName}`)?.spec).toMatchObject({ providerRef: { name: 'store-target' } });
  });

  it('C1: does nothing for a claim that is gone', async () => {
    const { api, reconciler } = world();
    expect(await reconciler.reconcile('app/b', signal)).toEqual({ kind: 'done' });
    expect(api.writes).toEqual([]);
  });

  it('C7: records its finalizer and its resource on the claim in one write, then creates the resource from the class', async () => {
    const { api, reconciler, recorder } = world();
    api.seed(Claims, claim());
    // Its resource is not ready yet: the claim waits for its watch, and rechecks should an event be missed.
    expect(await reconciler.reconcile('app/b', signal)).toEqual({ kind: 'requeueAfter', ms: 30_000 });
    expect(api.writes).toEqual(['patch Bucket b', `create Store ${mrName}`, 'status Bucket b']);
    const mr = api.objects.get(`stores/infra/${mrName}`)!;
    expect(mr.spec).toMatchObject({
      claimRef: { kind: 'Bucket', name: 'b', namespace: 'app', uid: 'claim-uid' },
      classRef: { kind: 'StoreClass', name: 'gold', namespace: 'infra' },
    });
    const c = readClaim(api);
    expect(c.metadata.finalizers).toEqual([FINALIZER_CLAIM]);
    expect(c.spec?.resourceRef).toMatchObject({ name: mrName, namespace: 'infra' });
    expect(cond(c, 'Ready')).toMatchObject({ status: 'False', reason: 'Binding' });
    // Nothing a user acts on yet: no Event until it is bound (CreatedManagedResource is no longer emitted).
    expect(recorder.events).toEqual([]);
  });

  it('makes the resource its claim already names, when a crash came between recording and making it', async () => {
    const { api, reconciler } = world();
    const ref = { apiVersion: Managed.apiVersion, kind: Managed.kind, name: mrName, namespace: 'infra' };
    api.seed(Claims, { ...claim({ finalizers: [FINALIZER_CLAIM] }), spec: { ...claim().spec, resourceRef: ref } });
    await reconciler.reconcile('app/b', signal);
    expect(api.writes).toEqual([`create Store ${mrName}`, 'status Bucket b']);
    expect(api.objects.get(`stores/infra/${mrName}`)?.spec).toMatchObject({ claimRef: { name: 'b', uid: 'claim-uid' } });
  });

  it('never makes a resource its claim names unless it is the one its class makes for it', async () => {
    const { api, reconciler } = world();
    const ref = { apiVersion: Managed.apiVersion, kind: Managed.kind, name: 'someone-elses', namespace: 'infra' };
    api.seed(Claims, { ...claim({ finalizers: [FINALIZER_CLAIM] }), spec: { ...claim().spec, resourceRef: ref } });
    await reconciler.reconcile('app/b', signal);
    expect(api.writes.filter((w) => w.startsWith('create'))).toEqual([]);
    expect(cond(readClaim(api), 'Synced')).toMatchObject({ status: 'False' });
  });

  it('never makes again a resource deleted under a claim that was bound to it', async () => {
    const { api, reconciler } = world();
    const ref = { apiVersion: Managed.apiVersion, kind: Managed.kind, name: mrName, namespace: 'infra' };
    api.seed(Claims, {
      ...claim({ finalizers: [FINALIZER_CLAIM] }),
      spec: { ...claim().spec, resourceRef: ref },
      status: { bindingPhase: 'Bound' },
    });
    await reconciler.reconcile('app/b', signal);
    expect(api.writes.filter((w) => w.startsWith('create'))).toEqual([]);
    expect(cond(readClaim(api), 'Synced')).toMatchObject({
      status: 'False',
      reason: 'ManagedResourceNotFound',
    });
    // Its pairing cannot be proven any more: it is not Bound.
    expect(readClaim(api).status?.bindingPhase).toBe('Unbound');
  });

  it('never points a recorded reference elsewhere: a resource planned where its class no longer makes them is refused, not made', async () => {
    const { api, reconciler } = world();
    const ref = { apiVersion: Managed.apiVersion, kind: Managed.kind, name: mrName, namespace: 'elsewhere' };
    api.seed(Claims, { ...claim({ finalizers: [FINALIZER_CLAIM] }), spec: { ...claim().spec, resourceRef: ref } });
    await reconciler.reconcile('app/b', signal);
    expect(api.writes).toEqual(['status Bucket b']);
    expect(readClaim(api).spec?.resourceRef).toEqual(ref);
    expect(cond(readClaim(api), 'Synced')).toMatchObject({
      status: 'False',
      reason: 'ManagedResourceNotFound',
      message: expect.stringContaining('its class now makes resources in namespace infra'),
    });
    expect(api.objects.get(`stores/infra/${mrName}`)).toBeUndefined();
  });

  it('adopts the managed resource an interrupted attempt made, instead of making a second', async () => {
    const { api, reconciler } = world();
    api.seed(Claims, claim({ finalizers: [FINALIZER_CLAIM] }));
    api.seed(Managed, {
      apiVersion: Managed.apiVersion,
      kind: Managed.kind,
      metadata: { name: mrName, namespace: 'infra' },
      spec: { claimRef: { kind: 'Bucket', name: 'b', namespace: 'app', uid: 'claim-uid' } },
    });
    await reconciler.reconcile('app/b', signal);
    expect(api.writes.filter((w) => w.startsWith('create'))).toEqual([]);
    expect(readClaim(api).spec?.resourceRef?.name).toBe(mrName);
  });

  it("C8: copies the connection Secret under the claim's control and binds once the resource is Unbound", async () => {
    const { api, reconciler } = world();
    await (api.seed(Claims, claim()), reconciler.reconcile('app/b', signal));
    const mr = api.objects.get(`stores/infra/${mrName}`)!;
    mr.status = { bindingPhase: 'Unbound', conditions: [{ type: 'Ready', status: 'True', reason: 'Available', lastTransitionTime: 'x' }] };
    seedConnectionSecret(api, mr.metadata.uid!);
    api.writes = [];
    await reconciler.reconcile('app/b', signal);
    expect(api.writes).toEqual(['create Secret mine', `status Store ${mrName}`, 'status Bucket b']);
    const copy = api.objects.get('secrets/app/mine')!;
    expect(copy.data).toEqual({ password: 'c2VjcmV0' });
    expect(copy.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'Bucket', uid: 'claim-uid', controller: true })]);
    expect(api.objects.get(`stores/infra/${mrName}`)!.status).toMatchObject({ bindingPhase: 'Bound' });
    expect(readClaim(api).status).toMatchObject({
      bindingPhase: 'Bound',
      conditions: expect.arrayContaining([expect.objectContaining({ type: 'Ready', status: 'True' })]),
    });

    api.writes = [];
    await reconciler.reconcile('app/b', signal);
    expect(api.writes).toEqual([]); // steady state
  });

  it('binds a resource its class made for the claim, which its own controller marked Bound once ready, without writing it again', async () => {
    const { api, reconciler, recorder } = world();
    await (api.seed(Claims, claim()), reconciler.reconcile('app/b', signal));
    const mr = api.objects.get(`stores/infra/${mrName}`)! as unknown as ManagedResource;
    expect([mr.spec.claimRef, mr.spec.classRef].every(Boolean)).toBe(true); // made by the class, for the claim
    mr.status = { conditions: [{ type: 'Ready', status: 'True', reason: 'Available', lastTransitionTime: 'x' }] };
    setBindable(mr); // as observe does once it is ready
    expect(mr.status.bindingPhase).toBe('Bound');
    seedConnectionSecret(api, mr.metadata.uid!);
    api.writes = [];
    recorder.events.length = 0;
    await reconciler.reconcile('app/b', signal);
    expect(api.writes).toEqual(['create Secret mine', 'status Bucket b']);
    expect(recorder.events.map((e) => e.reason)).toEqual(['BoundManagedResource']);
    expect(readClaim(api).status).toMatchObject({ bindingPhase: 'Bound' });
    await reconciler.reconcile('app/b', signal);
    expect(recorder.events.map((e) => e.reason)).toEqual(['BoundManagedResource']); // once
    // A resource with a claimRef but no class (one a platform team reserved) waits for its claim to bind it.
    const reserved: ManagedResource = { ...mr, spec: { ...mr.spec, classRef: undefined }, status: {} };
    setBindable(reserved);
    expect(reserved.status?.bindingPhase).toBe('Unbound');
  });

  it("a bound claim shows its resource's failures too: Synced=False with the resource's reason, and back", async () => {
    const { api, reconciler } = world();
    await (api.seed(Claims, claim()), reconciler.reconcile('app/b', signal));
    const mr = api.objects.get(`stores/infra/${mrName}`)!;
    const ready = { type: 'Ready', status: 'True', reason: 'Available', lastTransitionTime: 'x' };
    mr.status = { bindingPhase: 'Unbound', conditions: [ready] };
    api.seed(Secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'conn', namespace: 'infra', ownerReferences: [{ uid: mr.metadata.uid, controller: true }] },
      data: {},
    });
    await reconciler.reconcile('app/b', signal);
    expect(readClaim(api).status?.bindingPhase).toBe('Bound');
    api.objects.get(`stores/infra/${mrName}`)!.status = {
      bindingPhase: 'Bound',
      conditions: [
        ready,
        {
          type: 'Synced',
          status: 'False',
          reason: 'Unreachable',
          message: 'observe failed: cannot reach the target cluster (ECONNREFUSED)',
          lastTransitionTime: 'x',
        },
      ],
    };
    await reconciler.reconcile('app/b', signal);
    expect(cond(readClaim(api), 'Synced')).toMatchObject({
      status: 'False',
      reason: 'Unreachable',
      message: expect.stringContaining('cannot reach the target cluster'),
    });
    api.objects.get(`stores/infra/${mrName}`)!.status = {
      bindingPhase: 'Bound',
      conditions: [ready, { type: 'Synced', status: 'True', reason: 'ReconcileSuccess', lastTransitionTime: 'x' }],
    };
    await reconciler.reconcile('app/b', signal);
    expect(cond(readClaim(api), 'Synced')).toMatchObject({
      status: 'True',
      reason: 'ReconcileSuccess',
    });
  });

  it('C10: refuses a connection Secret the managed resource does not control', async () => {
    const { api, reconciler } = world();
    await (api.seed(Claims, claim()), reconciler.reconcile('app/b', signal));
    api.objects.get(`stores/infra/${mrName}`)!.status = { bindingPhase: 'Unbound' };
    api.seed(Secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'conn', namespace: 'infra', ownerReferences: [{ uid: 'someone-else', controller: true }] },
      data: {},
    });
    expect(await reconciler.reconcile('app/b', signal)).toMatchObject({ kind: 'requeueAfter' });
    expect(cond(readClaim(api), 'Synced')).toMatchObject({
      status: 'False',
      reason: 'ConnectionSecretConflict',
    });
    expect(api.objects.has('secrets/app/mine')).toBe(false);
  });

  it('C9: refuses a managed resource reserved for it but controlled by another object', async () => {
    const { api, reconciler } = world();
    api.seed(Claims, claim({ finalizers: [FINALIZER_CLAIM] }, { resourceRef: { name: 'taken', namespace: 'infra' } }));
    api.seed(Managed, {
      apiVersion: Managed.apiVersion,
      kind: Managed.kind,
      metadata: {
        name: 'taken',
        namespace: 'infra',
        ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'x', uid: 'x', controller: true }],
      },
      spec: { claimRef: { kind: 'Bucket', name: 'b', namespace: 'app', uid: 'claim-uid' } },
    });
    await reconciler.reconcile('app/b', signal);
    expect(cond(readClaim(api), 'Synced')).toMatchObject({
      reason: 'ManagedResourceConflict',
      message: expect.stringContaining('controlled by another resource'),
    });
  });

  it('C9: a resource it refused because another object controls it is neither released nor deleted with the claim', async () => {
    const { api, reconciler } = world();
    api.seed(
      Claims,
      claim(
        { finalizers: [FINALIZER_CLAIM], deletionTimestamp: '2026-01-01T00:00:00Z' },
        { resourceRef: { name: 'taken', namespace: 'infra' } },
      ),
    );
    const claimRef = { kind: 'Bucket', name: 'b', namespace: 'app', uid: 'claim-uid' };
    api.seed(Managed, {
      apiVersion: Managed.apiVersion,
      kind: Managed.kind,
      metadata: {
        name: 'taken',
        namespace: 'infra',
        ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'x', uid: 'x', controller: true }],
      },
      spec: { reclaimPolicy: 'Delete', claimRef },
      status: { bindingPhase: 'Unbound' },
    });
    expect(await reconciler.reconcile('app/b', signal)).toEqual({ kind: 'done' });
    const mr = api.objects.get('stores/infra/taken');
    expect(mr).toMatchObject({ spec: { reclaimPolicy: 'Delete', claimRef }, status: { bindingPhase: 'Unbound' } });
    expect(readClaim(api).metadata.finalizers).toEqual([]);
  });

  it('a resourceRef to a resource that is missing, or not reserved for the claim, gets one answer and no new resource', async () => {
    const answer = async (mr?: object) => {
      const { api, recorder, reconciler } = world();
      api.seed(
        Claims,
        claim(
          { finalizers: [FINALIZER_CLAIM] },
          { classRef: { name: 'std' }, resourceRef: { name: 'named', namespace: 'infra' }, writeConnectionSecretToRef: { name: 'mine' } },
        ),
      );
      if (mr)
        api.seed(Managed, {
          apiVersion: Managed.apiVersion,
          kind: Managed.kind,
          metadata: { name: 'named', namespace: 'infra' },
          status: { bindingPhase: 'Unbound' },
          ...mr,
        });
      expect(await reconciler.reconcile('app/b', signal)).toMatchObject({ kind: 'requeueAfter' });
      expect([...api.objects.keys()].filter((k) => k.startsWith('stores/'))).toEqual(mr ? ['stores/infra/named'] : []);
      expect(api.writes.filter((w) => w.includes(Managed.kind))).toEqual([]);
      const { status, spec } = readClaim(api);
      return {
        status: { ...status, conditions: status?.conditions?.map(({ lastTransitionTime: _, ...c }) => c) },
        spec,
        events: recorder.events,
      };
    };
    const missing = await answer();
    expect(missing.status.conditions).toContainEqual({
      type: 'Synced',
      status: 'False',
      reason: Reasons.ManagedResourceNotFound,
      observedGeneration: 1,
      message:
        'spec.resourceRef names Store infra/named, which does not exist or is not reserved for this claim: a platform team reserves one by setting its spec.claimRef to this claim',
    });
    for (const another of [
      { spec: {} },
      { spec: { claimRef: { kind: 'Bucket', name: 'other', namespace: 'app', uid: 'other-uid' } } },
      { spec: { claimRef: { kind: 'Bucket', name: 'b', namespace: 'app', uid: 'an-earlier-b' } } },
      {
        metadata: {
          name: 'named',
          namespace: 'infra',
          ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: 'x', uid: 'x', controller: true }],
        },
        spec: {},
      },
    ]) {
      expect(await answer(another)).toEqual(missing);
    }
  });

  it('C6 and refusals: a missing class or a refused configuration creates nothing and says why', async () => {
    const missing = world();
    missing.api.seed(Claims, claim({}, { classRef: { name: 'nope' } }));
    await missing.reconciler.reconcile('app/b', signal);
    expect(cond(readClaim(missing.api), 'Synced')).toMatchObject({
      reason: 'ClassNotFound',
      message: 'BucketClass app/nope does not exist',
    });
    const refused = world({ allowConfigure: false });
    refused.api.seed(Claims, claim());
    await refused.reconciler.reconcile('app/b', signal);
    expect(cond(readClaim(refused.api), 'Synced')).toMatchObject({ reason: 'NamespaceNotAllowed' });
    expect([...refused.api.objects.keys()].filter((k) => k.startsWith('stores/'))).toEqual([]);
  });

  it.each<['Delete' | 'Retain', boolean]>([
    ['Delete', false],
    ['Retain', true],
  ])('C3/C4: a deleted claim releases its resource; reclaim %s keeps it: %s', async (policy, kept) => {
    const { api, reconciler } = world();
    api.seed(
      Claims,
      claim(
        { finalizers: [FINALIZER_CLAIM], deletionTimestamp: '2026-01-01T00:00:00Z' },
        { resourceRef: { name: 'mr', namespace: 'infra' }, writeConnectionSecretToRef: { name: 'mine' } },
      ),
    );
    api.seed(Managed, {
      apiVersion: Managed.apiVersion,
      kind: Managed.kind,
      metadata: { name: 'mr', namespace: 'infra' },
      spec: { reclaimPolicy: policy, claimRef: { kind: 'Bucket', name: 'b', namespace: 'app', uid: 'claim-uid' } },
      status: { bindingPhase: 'Bound' },
    });
    api.seed(Secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'mine', namespace: 'app', ownerReferences: [{ uid: 'claim-uid', controller: true }] },
    });
    expect(await reconciler.reconcile('app/b', signal)).toEqual({ kind: 'done' });
    const mr = api.objects.get('stores/infra/mr');
    expect(mr !== undefined).toBe(kept);
    if (mr) expect(mr).toMatchObject({ spec: { reclaimPolicy: 'Retain' }, status: { bindingPhase: 'Released' } });
    if (mr) expect(mr.spec).not.toHaveProperty('claimRef');
    expect(api.objects.has('secrets/app/mine')).toBe(false);
    expect(readClaim(api).metadata.finalizers).toEqual([]);
  });

  it('finishes a release interrupted by a concurrent write: the resource never stays Bound to a claim that is gone', async () => {
    const { api, reconciler } = world();
    api.seed(
      Claims,
      claim(
        { finalizers: [FINALIZER_CLAIM], deletionTimestamp: '2026-01-01T00:00:00Z' },
        { resourceRef: { name: 'mr', namespace: 'infra' } },
      ),
    );
    api.seed(Managed, {
      apiVersion: Managed.apiVersion,
      kind: Managed.kind,
      metadata: { name: 'mr', namespace: 'infra' },
      spec: { reclaimPolicy: 'Retain', claimRef: { kind: 'Bucket', name: 'b', namespace: 'app', uid: 'claim-uid' } },
      status: { bindingPhase: 'Bound' },
    });
    // The managed controller writes the resource between our two writes to it (once).
    let managedWrites = 0;
    for (const method of ['update', 'updateStatus'] as const) {
      const original = api[method].bind(api);
      api[method] = async (type: ResourceType, obj: Obj) => {
        if (type === Managed && ++managedWrites === 2) throw new KubeError(409, 'Conflict', 'the object has been modified');
        return original(type, obj);
      };
    }
    expect(await reconciler.reconcile('app/b', signal)).toEqual({ kind: 'requeue' });
    expect(await reconciler.reconcile('app/b', signal)).toEqual({ kind: 'done' });
    const mr = api.objects.get('stores/infra/mr')!;
    expect(mr.status).toMatchObject({ bindingPhase: 'Released' });
    expect(mr.spec).not.toHaveProperty('claimRef');
    expect(readClaim(api).metadata.finalizers).toEqual([]);
  });

  it('names managed resources after the claim, deterministically and within 52 characters', () => {
    const long = claim({ namespace: 'a'.repeat(63), name: 'b.'.repeat(100) + 'c' });
    expect(managedNameFor(long)).toBe(managedNameFor(structuredClone(long)));
    expect(managedNameFor(long)).toMatch(/^[a-z0-9-]{1,52}$/);
    expect(managedNameFor(claim())).toMatch(/^app-b-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(managedNameFor(claim({ uid: 'other' }))).not.toBe(managedNameFor(claim()));
  });
});

describe('unserved-claim reconciler', () => {
  function unserved(portableClassRef?: object) {
    const api = new FakeApi();
    const recorder = new MemoryEventRecorder();
    if (portableClassRef)
      api.seed(Portables, {
        apiVersion: Portables.apiVersion,
        kind: 'BucketClass',
        metadata: { name: 'std', namespace: 'app' },
        classRef: portableClassRef,
      });
    const served = [{ class: Classes, managed: Managed, managedCache: api.cache<ManagedResource>(Managed) }];
    const router = new ClaimRouter(served, api.cache(Portables));
    const reconciler = new UnservedClaimReconciler({
      client: api as unknown as KubeClient,
      recorder,
      claims: { type: Claims, cache: api.cache(Claims) },
      portableClasses: { type: Portables, cache: api.cache(Portables) },
      served,
      router,
    });
    return { api, recorder, reconciler };
  }
  const synced = (api: FakeApi) => cond(readClaim(api), 'Synced');

  it('reports a class of a kind no backend serves, naming what is served; adds no finalizer', async () => {
    const { api, recorder, reconciler } = unserved({ apiVersion: 'x.example.com/v1', kind: 'OddClass', name: 'odd', namespace: 'infra' });
    api.seed(Claims, claim());
    expect(await reconciler.reconcile('app/b', signal)).toEqual({ kind: 'requeueAfter', ms: 30_000 });
    expect(api.writes).toEqual(['status Bucket b']);
    expect(synced(api)).toMatchObject({
      status: 'False',
      reason: Reasons.UnsupportedClass,
      message: 'BucketClass app/std points at x.example.com/v1 OddClass; this provider serves x.example.com/v1 StoreClass',
    });
    expect(cond(readClaim(api), 'Ready')).toMatchObject({ status: 'False', reason: 'Creating' });
    expect(recorder.events.map((e) => e.reason)).toEqual([Reasons.UnsupportedClass]);
    expect(readClaim(api).metadata.finalizers).toBeUndefined();
    api.writes = [];
    await reconciler.reconcile('app/b', signal);
    expect(api.writes).toEqual([]); // said once
  });

  it("reports a missing portable class, and leaves a claim its kind's controller takes alone", async () => {
    const missing = unserved();
    missing.api.seed(Claims, claim());
    await missing.reconciler.reconcile('app/b', signal);
    expect(synced(missing.api)).toMatchObject({ reason: Reasons.ClassNotFound, message: 'BucketClass app/std does not exist' });

    const served = unserved({ apiVersion: Classes.apiVersion, kind: Classes.kind, name: 'gold', namespace: 'infra' });
    served.api.seed(Claims, claim());
    expect(await served.reconciler.reconcile('app/b', signal)).toEqual({ kind: 'done' });
    expect(served.api.writes).toEqual([]);
  });

  it('lets a deleted claim whose class went go: what it still holds is released, then its finalizer', async () => {
    const { api, reconciler } = unserved();
    api.seed(Claims, claim({ finalizers: [FINALIZER_CLAIM], deletionTimestamp: '2026-01-01T00:00:00Z' }));
    api.seed(Managed, {
      apiVersion: Managed.apiVersion,
      kind: Managed.kind,
      metadata: { name: 'mr', namespace: 'infra' },
      spec: { reclaimPolicy: 'Delete', claimRef: { kind: 'Bucket', name: 'b', namespace: 'app', uid: 'claim-uid' } },
      status: { bindingPhase: 'Bound' },
    });
    expect(await reconciler.reconcile('app/b', signal)).toEqual({ kind: 'done' });
    expect(api.writes).toEqual(['status Store mr', 'delete Store mr', 'patch Bucket b']);
    expect(readClaim(api).metadata.finalizers).toEqual([]);
  });
});

describe('claim reconciler routing', () => {
  it('leaves a claim that is no longer its own (routed elsewhere while queued) without a write', async () => {
    const { api, reconciler } = world({ takes: () => false });
    api.seed(Claims, claim());
    expect(await reconciler.reconcile('app/b', signal)).toEqual({ kind: 'done' });
    expect(api.writes).toEqual([]);
  });
});

describe('default-class reconciler', () => {
  const policy = (name: string) => ({
    apiVersion: Policies.apiVersion,
    kind: 'BucketPolicy',
    metadata: { name, namespace: 'app' },
    spec: { defaultClassRef: { name: `class-of-${name}` } },
  });
  function setup(policies: string[], cached: (names: string[]) => string[] = (names) => names) {
    const api = new FakeApi();
    for (const p of policies) api.seed(Policies, policy(p));
    api.seed(Policies, {
      apiVersion: Policies.apiVersion,
      kind: 'BucketPolicy',
      metadata: { name: 'elsewhere', namespace: 'other' },
      spec: { defaultClassRef: { name: 'x' } },
    });
    api.seed(Claims, claim({}, { writeConnectionSecretToRef: { name: 'mine' } }));
    const reconciler = new DefaultClassReconciler({
      client: api as unknown as KubeClient,
      recorder: new MemoryEventRecorder(),
      claims: { type: Claims, cache: api.cache(Claims) },
      policies: {
        type: Policies,
        cache: {
          ...api.cache<DefaultClassPolicy>(Policies),
          // A cache that has seen only some of the policies the API server holds.
          list: () =>
            api
              .cache<DefaultClassPolicy>(Policies)
              .list()
              .filter((p) => p.metadata.namespace !== 'app' || cached(policies).includes(p.metadata.name)),
        },
      },
    });
    return { api, reconciler };
  }

  it.each<[string[], string]>([
    [[], 'NoDefaultClass'],
    [['one', 'two'], 'AmbiguousDefaultClass'],
  ])('D5/D6: with policies %j it guesses nothing (%s)', async (policies, reason) => {
    const { api, reconciler } = setup([...policies]);
    await reconciler.reconcile('app/b', signal);
    expect(readClaim(api).spec?.classRef).toBeUndefined();
    expect(cond(readClaim(api), 'Synced')).toMatchObject({ status: 'False', reason });
    api.writes = [];
    await reconciler.reconcile('app/b', signal);
    expect(api.writes).toEqual([]); // said once
  });

  it('D7: with exactly one policy it sets the class', async () => {
    const { api, reconciler } = setup(['one']);
    await reconciler.reconcile('app/b', signal);
    expect(readClaim(api).spec?.classRef).toEqual({ name: 'class-of-one' });
  });

  it('chooses no class while its cache has seen one policy of the two the API server holds', async () => {
    const { api, reconciler } = setup(['one', 'two'], () => ['one']);
    await reconciler.reconcile('app/b', signal);
    expect(readClaim(api).spec?.classRef).toBeUndefined();
    expect(cond(readClaim(api), 'Synced')).toMatchObject({ status: 'False', reason: 'AmbiguousDefaultClass' });
    expect(cond(readClaim(api), 'Synced')?.message).toContain('(one, two)');
  });
});

describe('access reconciler: a grant reaches only a bucket whose resource names its Bucket', () => {
  const Accesses = t('BucketAccess', 'bucketaccesses');
  const Grants = t('Grant', 'grants');
  const grantor: Grantor = {
    managed: Managed,
    grants: Grants,
    grant: (mr, mode, name) => ({
      apiVersion: Grants.apiVersion,
      kind: Grants.kind,
      // Like the backends' grantors: the reconciler places it beside the resource it lends from.
      metadata: { name },
      spec: { bucket: mr.spec.bucket, mode },
    }),
    reaches: (g) => String(g.spec.bucket),
  };
  /** Team b's bucket (its Store names its Bucket by uid), and team a's Bucket, Bound, pointing at `points` and shared with itself. */
  function tenants(points: 'own' | 'victim', claimRefUid = 'victim-uid') {
    const api = new FakeApi();
    const store = (name: string, bucket: string, claimName: string, namespace: string, uid: string) =>
      api.seed(Managed, {
        apiVersion: Managed.apiVersion,
        kind: Managed.kind,
        metadata: { name, namespace: 'infra' },
        spec: { bucket, claimRef: { apiVersion: Claims.apiVersion, kind: 'Bucket', name: claimName, namespace, uid } },
        status: { bindingPhase: 'Bound' },
      });
    store('victim-store', 'victim-bucket', 'victim', 'team-b', claimRefUid);
    store('own-store', 'own-bucket', 'mine', 'team-a', 'mine-uid');
    const bucket = ({ namespace, name }: Required<ObjectKey>, uid: string, resource: string, shareWith: object[]) =>
      api.seed(Claims, {
        apiVersion: Claims.apiVersion,
        kind: 'Bucket',
        metadata: { name, namespace, uid },
        spec: { resourceRef: { apiVersion: Managed.apiVersion, kind: Managed.kind, name: resource, namespace: 'infra' }, shareWith },
        status: { bindingPhase: 'Bound' },
      });
    bucket({ namespace: 'team-b', name: 'victim' }, 'victim-uid', 'victim-store', [{ namespace: 'team-c', modes: ['ReadOnly'] }]);
    bucket({ namespace: 'team-a', name: 'mine' }, 'mine-uid', points === 'own' ? 'own-store' : 'victim-store', [
      { namespace: 'team-a', modes: ['ReadWrite'] },
    ]);
    api.seed(Accesses, {
      apiVersion: Accesses.apiVersion,
      kind: 'BucketAccess',
      metadata: { name: 'steal', namespace: 'team-a', uid: 'access-uid', finalizers: [FINALIZER_CLAIM] },
      spec: { bucketRef: { namespace: 'team-a', name: 'mine' }, mode: 'ReadWrite' },
    });
    const reconciler = new AccessReconciler({
      client: api as unknown as KubeClient,
      recorder: new MemoryEventRecorder(),
      accesses: { type: Accesses, cache: api.cache(Accesses) },
      buckets: { type: Claims, cache: api.cache(Claims) },
      grantors: [grantor],
      lent: [{ type: Managed, cache: api.cache(Managed) }],
      granted: [{ type: Grants, cache: api.cache(Grants) }],
      secrets: api.cache(Secrets),
    });
    const grants = () => [...api.objects.entries()].filter(([k]) => k.startsWith('grants/')).map(([, g]) => g);
    const access = () => api.objects.get('bucketaccesses/team-a/steal') as unknown as Claim;
    return { api, reconciler, grants, access };
  }

  it("makes a user on the Bucket's own bucket when its resource's claimRef names it (uid included)", async () => {
    const { reconciler, grants } = tenants('own');
    await reconciler.reconcile('team-a/steal', signal);
    expect(grants().map((g) => g.spec)).toEqual([expect.objectContaining({ bucket: 'own-bucket', mode: 'ReadWrite' })]);
  });

  it("makes nothing on another team's bucket that a Bound Bucket's resourceRef names, and says the Bucket is not bound to it", async () => {
    const { reconciler, grants, access, api } = tenants('victim');
    await reconciler.reconcile('team-a/steal', signal);
    expect(grants()).toEqual([]);
    expect(api.writes.filter((w) => w.startsWith('create'))).toEqual([]);
    expect(cond(access(), 'Synced')).toMatchObject({
      status: 'False',
      reason: 'ManagedResourceNotFound',
      message: expect.stringContaining('Bucket team-a/mine is not bound to a resource of its own'),
    });
  });

  it('refuses a resource whose claimRef names a Bucket of the same name but another uid (an earlier claim)', async () => {
    const { reconciler, grants, api } = tenants('victim');
    // Even a claimRef that names team-a/mine by name is not proof without this Bucket's uid.
    const store = api.objects.get('stores/infra/victim-store')!;
    store.spec = {
      ...(store.spec as object),
      claimRef: { apiVersion: Claims.apiVersion, kind: 'Bucket', name: 'mine', namespace: 'team-a' },
    };
    await reconciler.reconcile('team-a/steal', signal);
    expect(grants()).toEqual([]);
  });

  it('revokes a grant made earlier on a bucket its Bucket is not (or no longer) proven to own', async () => {
    const { api, reconciler, grants, access } = tenants('victim');
    api.seed(Grants, {
      apiVersion: Grants.apiVersion,
      kind: Grants.kind,
      metadata: { name: managedNameFor(access()), namespace: 'infra' },
      spec: {
        bucket: 'victim-bucket',
        mode: 'ReadWrite',
        claimRef: { kind: 'BucketAccess', name: 'steal', namespace: 'team-a', uid: 'access-uid' },
      },
    });
    await reconciler.reconcile('team-a/steal', signal);
    expect(grants()).toEqual([]);
    expect(api.writes).toContain(`delete Grant ${managedNameFor(access())}`);
  });

  it('revokes a grant that reaches another bucket than the one its Bucket is bound to now', async () => {
    const { api, reconciler, grants, access } = tenants('own');
    const name = managedNameFor(access());
    api.seed(Grants, {
      apiVersion: Grants.apiVersion,
      kind: Grants.kind,
      metadata: { name, namespace: 'infra' },
      spec: {
        bucket: 'victim-bucket',
        mode: 'ReadWrite',
        claimRef: { kind: 'BucketAccess', name: 'steal', namespace: 'team-a', uid: 'access-uid' },
      },
    });
    await reconciler.reconcile('team-a/steal', signal);
    expect(api.writes).toContain(`delete Grant ${name}`);
    expect(grants()).toEqual([]);
    // The next pass grants on its own bucket.
    await reconciler.reconcile('team-a/steal', signal);
    expect(grants().map((g) => g.spec)).toEqual([expect.objectContaining({ bucket: 'own-bucket' })]);
  });
});
