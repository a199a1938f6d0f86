// Every backend as the tests meet it (TEST DOUBLE support): the stand-in that plays each operator a
// backend acts through, and a class of each backend as a platform team would write it. It is keyed
// by what src/backends/index.ts gives (an operator's bundle name, a managed kind), and the lists the
// tests, specs and tools run "every backend" from are derived here from that list: a backend added
// there without an entry here fails at import, and test/unit/test/fakes/backends.test.ts says which.
import { backends } from '../../src/backends/index.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import type { ResourceType } from '../../src/kit/kube/resources.ts';
import { installOperatorBundle } from '../kit/manifests.ts';
import { applyRookBucketStorageClass, FakeBucketProvisioner } from './fake-bucket-provisioner.ts';
import { FakeMinioOperator } from './fake-minio-operator.ts';
import { FakeSeaweedOperator } from './fake-seaweed-operator.ts';
import { FakeTenantOperator, SMALL_POOL } from './fake-tenant-operator.ts';

/** A stand-in as its users see it: started before provider-rook, stopped after it. */
export interface Running {
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface OperatorStandIn {
  /** The stand-in that plays this operator on a target; with `s3`, a real S3 server for each store it makes. */
  make(target: KubeClient, opts?: { s3?: boolean }): Running;
  /** What the target's platform team sets up beside the operator, if anything (Rook's bucket StorageClass). */
  prepare?(target: KubeClient): Promise<void>;
}

/** The stand-in of each operator, by its bundle's name (config/operators/NAME/). */
export const operatorStandIns: Record<string, OperatorStandIn> = {
  seaweedfs: { make: (t, o) => new FakeSeaweedOperator(t, o) },
  'rook-minio': { make: (t, o) => new FakeMinioOperator(t, o) },
  'minio-operator': { make: (t, o) => new FakeTenantOperator(t, o) },
  'rook-ceph': { make: (t, o) => new FakeBucketProvisioner(t, o), prepare: applyRookBucketStorageClass },
};

type Loose = KubeObjectLike & { spec?: Record<string, unknown> };

/** A backend whose class makes a store or bucket of a claim's own from a Provider alone. */
export interface OwnStore {
  /** Its class's spec, serving claims through the Provider named `provider`. */
  classSpec(provider: string): Record<string, unknown>;
  /** The namespace of its target object, by the managed resource's name. */
  targetNamespace(mr: string): string;
  /** A change someone makes to that object in the target, and whether it was put back. */
  drift: { patch: Record<string, unknown>; repaired(o: Loose): boolean };
}

/** A backend whose classes name a store that some other managed resource keeps: a bucket in it. */
export interface InStore {
  inStore: string;
}

/** Each backend's managed kind, and what the tests know of it. */
export const backendsUnderTest: Record<string, OwnStore | InStore> = {
  SeaweedStore: {
    // Its claims' objects may go with it, so deleting one leaves nothing behind.
    classSpec: (provider) => ({ providerRef: { name: provider }, deleteObjects: true }),
    targetNamespace: (mr) => `seaweedfs-${mr}`,
    drift: { patch: { spec: { image: 'example.com/seaweedfs:old' } }, repaired: (o) => o.spec?.image === 'chrislusf/seaweedfs:4.44' },
  },
  SeaweedBucket: { inStore: 'a SeaweedStore' },
  ObjectStore: {
    classSpec: (provider) => ({ scope: { nodeCount: 4 }, providerRef: { name: provider }, targetNamespace: 'rook-minio' }),
    targetNamespace: () => 'rook-minio',
    drift: {
      patch: { spec: { scope: { nodeCount: 6 } } },
      repaired: (o) => (o.spec?.scope as { nodeCount?: number } | undefined)?.nodeCount === 4,
    },
  },
  Tenant: {
    classSpec: (provider) => ({ pools: [SMALL_POOL], providerRef: { name: provider } }),
    targetNamespace: (mr) => `minio-${mr}`,
    drift: { patch: { spec: { requestAutoCert: true } }, repaired: (o) => o.spec?.requestAutoCert === false },
  },
  CephBucket: {
    classSpec: (provider) => ({
      storageClassName: 'rook-ceph-bucket',
      additionalConfig: { maxObjects: '1000' },
      providerRef: { name: provider },
    }),
    targetNamespace: () => 'rook-ceph-buckets',
    drift: {
      patch: { spec: { additionalConfig: { maxObjects: '5' } } },
      repaired: (o) => (o.spec?.additionalConfig as { maxObjects?: string } | undefined)?.maxObjects === '1000',
    },
  },
  MinioBucket: { inStore: 'an ObjectStore or a Tenant' },
};

/** A backend that makes a store of a claim's own, with the kinds src/backends/index.ts gives it. */
export interface OwnStoreBackend extends OwnStore {
  /** Its operator's bundle name: the name tests give its classes and claims. */
  name: string;
  managed: ResourceType;
  class: ResourceType;
  /** The object kept in the target for each managed resource. */
  target: ResourceType;
}

function entryOf(kind: string): OwnStore | InStore {
  const entry = backendsUnderTest[kind];
  if (!entry) throw new Error(`backend ${kind} has no entry in test/fakes/backends.ts: say what plays it and a class of it`);
  return entry;
}

/** The backends that make a store of a claim's own, in src/backends/index.ts's order. */
export const ownStoreBackends: OwnStoreBackend[] = backends.flatMap((b) => {
  const entry = entryOf(b.managed.kind);
  if ('inStore' in entry) return [];
  if (!b.native.operator) throw new Error(`backend ${b.managed.kind} makes a store of its own but acts through no operator`);
  return [{ ...entry, name: b.native.operator.name, managed: b.managed, class: b.class, target: b.native.target }];
});

/** Every operator the backends act through, by bundle name, each once, in src/backends/index.ts's order. */
export const operatorsUnderTest: string[] = [...new Set(backends.flatMap((b) => (b.native.operator ? [b.native.operator.name] : [])))];

function standInOf(operator: string): OperatorStandIn {
  const s = operatorStandIns[operator];
  if (!s) throw new Error(`operator ${operator} has no stand-in in test/fakes/backends.ts`);
  return s;
}

/** The stand-ins of these operators on a target, made and not started; the target set up for them as its platform team would. */
export async function standInsFor(target: KubeClient, operators: string[], opts: { s3?: boolean } = {}): Promise<Running[]> {
  for (const o of operators) await standInOf(o).prepare?.(target);
  return operators.map((o) => standInOf(o).make(target, opts));
}

/** These operators' bundles (config/operators/NAME/) installed in a target, as its admin would. */
export async function installOperators(target: KubeClient, operators: string[]): Promise<void> {
  for (const o of operators) await installOperatorBundle(target, o);
}

// A backend's operator with no stand-in fails every test that imports this list, saying which.
for (const o of operatorsUnderTest) standInOf(o);
