// Claim routing: which one controller a claim (or a change that concerns it) wakes, decided before
// the queue. A table of named cases for the router, then setupClaim's watches against fakes of the
// manager's informers and controllers.
import { type ReadonlyDeep } from '../../../../src/kit/controller/informer.ts';
import { describe, expect, it } from '@jest/globals';
import { FINALIZER_CLAIM, type Claim, type PortableClass } from '../../../../src/runtime/claims/claim.ts';
import { ClaimRouter, type Route } from '../../../../src/runtime/claims/routing.ts';
import { setupClaim } from '../../../../src/runtime/claims/setup.ts';
import type { Handlers } from '../../../../src/kit/controller/informer.ts';
import type { KubeObjectLike } from '../../../../src/kit/kube/client.ts';
import { Secrets, type ResourceType } from '../../../../src/kit/kube/resources.ts';
import { silentLogger } from '../../../../src/kit/logger.ts';
import type { Manager } from '../../../../src/kit/controller/manager.ts';
import type { ManagedResource } from '../../../../src/runtime/managed/types.ts';
import { CONNECTION_SECRET_TYPE } from '../../../../src/kit/meta.ts';
import { kindName } from '../../../../src/kit/controller/names.ts';
import { mapCache } from '../../../kit/map-cache.ts';
import { formatObjectKey, type ObjectKey } from '../../../../src/kit/kube/object-key.ts';

const t = (apiVersion: string, kind: string): ResourceType => ({ apiVersion, kind, plural: `${kind.toLowerCase()}s`, namespaced: true });
const Claims = t('storage.example.com/v1', 'Bucket');
const Portables = t('storage.example.com/v1', 'BucketClass');
const Policies = t('storage.example.com/v1', 'BucketPolicy');
const A = { class: t('a.example.com/v1', 'AClass'), managed: t('a.example.com/v1', 'AStore') };
const B = { class: t('b.example.com/v1', 'BClass'), managed: t('b.example.com/v1', 'BStore') };

function portable(name: string, classRef?: { apiVersion: string; kind: string }): PortableClass {
  return {
    apiVersion: Portables.apiVersion,
    kind: Portables.kind,
    metadata: { name, namespace: 'app' },
    ...(classRef ? { classRef: { ...classRef, name: 'gold', namespace: 'infra' } } : {}),
  };
}

function claim(spec: Claim['spec'], meta: Partial<Claim['metadata']> = {}): Claim {
  return { apiVersion: Claims.apiVersion, kind: Claims.kind, metadata: { name: 'b', namespace: 'app', uid: 'claim-uid', ...meta }, spec };
}

function store(type: ResourceType, claimRef?: object): ManagedResource {
  return {
    apiVersion: type.apiVersion,
    kind: type.kind,
    metadata: { name: 'mr', namespace: 'infra' },
    spec: { ...(claimRef ? { claimRef } : {}) },
  };
}

const toThisClaim = { kind: 'Bucket', name: 'b', namespace: 'app', uid: 'claim-uid' };

describe('ClaimRouter', () => {
  const portables = new Map<string, PortableClass>([
    ['app/to-a', portable('to-a', A.class)],
    ['app/to-b', portable('to-b', B.class)],
    ['app/to-b-other-version', portable('to-b-other-version', { apiVersion: 'b.example.com/v2', kind: 'BClass' })],
    ['app/to-nothing-served', portable('to-nothing-served', { apiVersion: 'x.example.com/v1', kind: 'XClass' })],
    ['app/to-nothing', portable('to-nothing')],
  ]);
  const bStores = new Map<string, ManagedResource>([
    ['infra/reserved', store(B.managed, toThisClaim)],
    ['infra/another', store(B.managed, { ...toThisClaim, name: 'other' })],
  ]);
  const router = new ClaimRouter([{ ...A }, { ...B, managedCache: mapCache(bStores) }], mapCache(portables));
  const deleting = { deletionTimestamp: '2026-01-01T00:00:00Z' };

  const cases: { name: string; claim: Claim; want: Route }[] = [
    {
      name: 'bound: the kind of its resource',
      claim: claim({ resourceRef: { kind: 'AStore', apiVersion: 'a.example.com/v1', name: 'mr', namespace: 'infra' } }),
      want: 0,
    },
    {
      name: 'bound: a reference without apiVersion matches the kind',
      claim: claim({ resourceRef: { kind: 'BStore', name: 'mr', namespace: 'infra' } }),
      want: 1,
    },
    {
      name: 'bound: the resource kind wins over a class of another kind',
      claim: claim({ classRef: { name: 'to-b' }, resourceRef: { kind: 'AStore', name: 'mr', namespace: 'infra' } }),
      want: 0,
    },
    {
      name: 'bound to a kind of another apiVersion: no controller',
      claim: claim({ resourceRef: { kind: 'BStore', apiVersion: 'b.example.com/v2', name: 'mr' } }),
      want: 'none',
    },
    { name: 'bound to a kind nothing serves: no controller', claim: claim({ resourceRef: { kind: 'XStore', name: 'mr' } }), want: 'none' },
    {
      name: 'bound to a kind nothing serves, deleting behind our finalizer: the unserved reconciler lets it go',
      claim: claim({ resourceRef: { kind: 'XStore', name: 'mr' } }, { ...deleting, finalizers: [FINALIZER_CLAIM] }),
      want: 'unserved',
    },
    {
      name: 'bound to a kind nothing serves, deleting without our finalizer: no controller',
      claim: claim({ resourceRef: { kind: 'XStore', name: 'mr' } }, deleting),
      want: 'none',
    },
    {
      name: "neither class nor resource: the default-class controller's",
      claim: claim({ writeConnectionSecretToRef: { name: 's' } }),
      want: 'none',
    },
    { name: 'neither class nor resource, deleting: the unserved reconciler lets it go', claim: claim({}, deleting), want: 'unserved' },
    { name: 'a class of the first kind', claim: claim({ classRef: { name: 'to-a' } }), want: 0 },
    { name: 'a class of the second kind', claim: claim({ classRef: { name: 'to-b' } }), want: 1 },
    { name: 'a class of the second kind, deleting', claim: claim({ classRef: { name: 'to-b' } }, deleting), want: 1 },
    { name: 'a portable class that does not exist (yet)', claim: claim({ classRef: { name: 'missing' } }), want: 'unserved' },
    {
      name: 'a portable class pointing at a kind nothing serves',
      claim: claim({ classRef: { name: 'to-nothing-served' } }),
      want: 'unserved',
    },
    {
      name: 'a portable class pointing at a served kind of another apiVersion',
      claim: claim({ classRef: { name: 'to-b-other-version' } }),
      want: 'unserved',
    },
    { name: 'a portable class pointing at nothing', claim: claim({ classRef: { name: 'to-nothing' } }), want: 'unserved' },
    {
      name: 'a kind-less resourceRef to a resource reserved for it',
      claim: claim({ classRef: { name: 'missing' }, resourceRef: { name: 'reserved', namespace: 'infra' } }),
      want: 1,
    },
    {
      name: 'a kind-less resourceRef: the class decides first',
      claim: claim({ classRef: { name: 'to-a' }, resourceRef: { name: 'reserved', namespace: 'infra' } }),
      want: 0,
    },
    {
      name: "a kind-less resourceRef to another claim's resource",
      claim: claim({ resourceRef: { name: 'another', namespace: 'infra' } }),
      want: 'unserved',
    },
    {
      name: 'a kind-less resourceRef to nothing',
      claim: claim({ resourceRef: { name: 'nothing', namespace: 'infra' } }),
      want: 'unserved',
    },
  ];
  it.each(cases)('$name', ({ claim: c, want }) => {
    expect(router.route(c)).toBe(want);
  });
});

/** An informer's surface as setupClaim uses it: a cache and its handlers. */
class FakeInformer<T extends KubeObjectLike> {
  readonly objects = new Map<string, T>();
  private readonly handlers: Handlers<T>[] = [];
  readonly hasSynced = true;
  on(h: Handlers<T>): this {
    this.handlers.push(h);
    return this;
  }
  get(key: string | ObjectKey): T | undefined {
    return this.objects.get(formatObjectKey(key));
  }
  list(): T[] {
    return [...this.objects.values()];
  }
  add(obj: T): void {
    const key = `${obj.metadata.namespace}/${obj.metadata.name}`;
    const old = this.objects.get(key);
    this.objects.set(key, obj);
    for (const h of this.handlers)
      if (old) h.updated?.(old as ReadonlyDeep<T>, obj as ReadonlyDeep<T>);
      else h.added?.(obj as ReadonlyDeep<T>);
  }
}

function claimsWorld() {
  const informers = new Map<string, FakeInformer<KubeObjectLike>>();
  const queued: string[] = [];
  const informer = (type: ResourceType, selection: { fieldSelector?: string } = {}) => {
    const key = `${type.apiVersion}/${type.kind}?${selection.fieldSelector ?? ''}`;
    if (!informers.has(key)) informers.set(key, new FakeInformer());
    return informers.get(key)!;
  };
  const manager = {
    log: silentLogger,
    recorder: {},
    control: {},
    informer,
    controller: (name: string) => ({ name, enqueue: (key: string) => queued.push(`${name} ${key}`) }),
  } as unknown as Manager;
  const classes = [A, B].map((k) => ({
    ...k,
    configure: () => {
      throw new Error('not called');
    },
  }));
  setupClaim(manager, { claim: Claims, portableClass: Portables, policy: Policies, classes });
  const of = <T extends KubeObjectLike>(type: ResourceType, selection?: { fieldSelector?: string }) =>
    informer(type, selection) as unknown as FakeInformer<T>;
  const taken = () => queued.splice(0).filter((q) => !q.startsWith('defaultclass/'));
  const controller = (k: { managed: ResourceType }) => `claimbinding/${kindName(Claims)}/${kindName(k.managed)}`;
  return { of, taken, controller, unserved: `claimbinding/${kindName(Claims)}/unserved` };
}

describe('setupClaim routes each change to one controller', () => {
  it("a claim wakes only its class's kind; one whose class is unknown wakes the unserved reconciler, then its kind once the class appears", () => {
    const w = claimsWorld();
    w.of<PortableClass>(Portables).add(portable('to-b', B.class));
    w.of<Claim>(Claims).add(claim({ classRef: { name: 'to-b' } }));
    expect(w.taken()).toEqual([`${w.controller(B)} app/b`]);

    w.of<Claim>(Claims).add(claim({ classRef: { name: 'later' } }, { name: 'c' }));
    expect(w.taken()).toEqual([`${w.unserved} app/c`]);
    w.of<PortableClass>(Portables).add(portable('later', A.class));
    expect(w.taken()).toEqual([`${w.controller(A)} app/c`]);
  });

  it("an unsupported class is the unserved reconciler's, and a class that appears wakes its kind's waiting claims", () => {
    const w = claimsWorld();
    w.of<PortableClass>(Portables).add(portable('odd', { apiVersion: 'x.example.com/v1', kind: 'XClass' }));
    w.of<Claim>(Claims).add(claim({ classRef: { name: 'odd' } }));
    expect(w.taken()).toEqual([`${w.unserved} app/b`]);

    w.of<PortableClass>(Portables).add(portable('to-a', A.class));
    w.of<Claim>(Claims).add(claim({ classRef: { name: 'to-a' } }, { name: 'waits' }));
    w.taken();
    w.of<KubeObjectLike>(A.class).add({
      apiVersion: A.class.apiVersion,
      kind: A.class.kind,
      metadata: { name: 'gold', namespace: 'infra' },
    });
    expect(w.taken()).toEqual([`${w.controller(A)} app/waits`]);
  });

  it("a class's features changing wakes the bound claims of the resources it made, and nothing else of it does", () => {
    const w = claimsWorld();
    w.of<PortableClass>(Portables).add(portable('to-a', A.class));
    const bound = claim({ classRef: { name: 'to-a' }, resourceRef: { kind: 'AStore', name: 'mr', namespace: 'infra' } });
    w.of<Claim>(Claims).add({ ...bound, status: { bindingPhase: 'Bound' } } as Claim);
    const made = { ...store(A.managed, toThisClaim), spec: { claimRef: toThisClaim, classRef: { name: 'gold', namespace: 'infra' } } };
    w.of<ManagedResource>(A.managed).add(made as ManagedResource);
    const gold = (features: object, labels: Record<string, string> = {}) =>
      ({
        apiVersion: A.class.apiVersion,
        kind: A.class.kind,
        metadata: { name: 'gold', namespace: 'infra', labels },
        spec: { features },
      }) as KubeObjectLike;
    w.of<KubeObjectLike>(A.class).add(gold({ defaults: { versioning: 'Enabled' } }));
    w.taken();
    w.of<KubeObjectLike>(A.class).add(gold({ defaults: { versioning: 'Enabled' } }, { tier: 'gold' }));
    expect(w.taken()).toEqual([]);
    w.of<KubeObjectLike>(A.class).add(gold({ maxQuota: '10Gi' }, { tier: 'gold' }));
    expect(w.taken()).toEqual([`${w.controller(A)} app/b`]);
  });

  it('a managed resource and a connection Secret wake the claim they concern, in its controller only', () => {
    const w = claimsWorld();
    w.of<PortableClass>(Portables).add(portable('to-b', B.class));
    w.of<Claim>(Claims).add(claim({ classRef: { name: 'to-b' }, resourceRef: { kind: 'BStore', name: 'mr', namespace: 'infra' } }));
    w.taken();
    w.of<ManagedResource>(B.managed).add(store(B.managed, toThisClaim));
    expect(w.taken()).toEqual([`${w.controller(B)} app/b`]);
    const secrets = w.of<KubeObjectLike & { metadata: { ownerReferences?: object[] } }>(Secrets, {
      fieldSelector: `type=${CONNECTION_SECRET_TYPE}`,
    });
    secrets.add({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'conn', namespace: 'infra', ownerReferences: [{ kind: 'BStore', name: 'mr', uid: 'u', controller: true }] },
    });
    expect(w.taken()).toEqual([`${w.controller(B)} app/b`]);
    secrets.add({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'copy', namespace: 'app', ownerReferences: [{ kind: 'Bucket', name: 'b', uid: 'claim-uid', controller: true }] },
    });
    expect(w.taken()).toEqual([`${w.controller(B)} app/b`]);
  });
});
