// Wires provider-rook together on the control cluster: the default-class, claim and managed
// controllers (reconciling in concert on Buckets and ObjectStores), Provider status, drift watches
// in every target, and the leak sweeper. Everything generic lives in src/runtime; MinIO in src/minio.
import type { KubeConfig } from '@kubernetes/client-node';
import { resourceTypeOf } from './apis/crd.ts';
import { ObjectStoreKind, type ObjectStore } from './apis/objectstore.ts';
import { ObjectStoreClassKind, type ObjectStoreClass } from './apis/objectstoreclass.ts';
import type { Provider } from './apis/provider.ts';
import { BucketClassKind, BucketKind, BucketPolicyKind, type BucketClass, type BucketPolicy } from './apis/storage.ts';
import { minioObjectStore } from './minio/objectstore.ts';
import { configureObjectStore } from './minio/objectstoreclass.ts';
import { rookMinioOperator } from './minio/operator.ts';
import { ClaimReconciler } from './runtime/claims/binding.ts';
import type { Claim, ObjectReference } from './runtime/claims/claim.ts';
import { DefaultClassReconciler } from './runtime/claims/defaulting.ts';
import { Controller } from './runtime/controller.ts';
import { ApiEventRecorder } from './runtime/events.ts';
import { Informer } from './runtime/informer.ts';
import { KubeClient } from './runtime/kube/client.ts';
import { Namespaces, Secrets } from './runtime/kube/resources.ts';
import type { Logger } from './runtime/logger.ts';
import type { SecretObject } from './runtime/managed/publisher.ts';
import { ManagedReconciler } from './runtime/managed/reconciler.ts';
import { CONNECTION_SECRET_TYPE } from './runtime/meta.ts';
import { NativeConnecter, ProviderResolver } from './runtime/native/connecter.ts';
import { LeakSweeper } from './runtime/native/leaks.ts';
import { OperatorInstaller } from './runtime/native/operator.ts';
import { OwnershipMarks } from './runtime/native/ownership.ts';
import { ProviderStatusReconciler, Providers, type ProviderUsers } from './runtime/native/provider-status.ts';
import { TargetClients } from './runtime/native/targets.ts';
import { TargetWatches } from './runtime/native/watches.ts';
import { desiredStateChanged } from './runtime/predicates.ts';
import { keyOf } from './runtime/result.ts';

export const FIELD_MANAGER = 'provider-rook';

export const ManagedObjectStores = resourceTypeOf(ObjectStoreKind);
export const ObjectStoreClasses = resourceTypeOf(ObjectStoreClassKind);
export const BucketClasses = resourceTypeOf(BucketClassKind);
export const BucketPolicies = resourceTypeOf(BucketPolicyKind);
export const Buckets = resourceTypeOf(BucketKind);

export interface AppOptions {
  control: KubeConfig;
  log: Logger;
  /** Watch only these namespaces of the control cluster (all namespaces when unset). */
  namespaces?: string[];
  /** Names this control plane in ownership marks; defaults to the control cluster's kube-system UID. */
  controlPlaneId?: string;
  pollIntervalMs?: number;
  pollJitterMs?: number;
  leakIntervalMs?: number;
  /** Report leaked target objects instead of deleting them. */
  leakReportOnly?: boolean;
  /** Target objects younger than this are never judged leaked. */
  leakGraceMs?: number;
  /** Let Provider kubeconfigs run exec credential plugins inside this process (off by default). */
  allowExecCredentials?: boolean;
  workers?: number;
  maxReconcileRate?: number;
  /** Count API requests (for tests and benchmarks). */
  onRequest?: (server: string, method: string, path: string) => void;
}

export interface App {
  controlPlaneId: string;
  leaks: LeakSweeper<ObjectStore>;
  targets: TargetClients;
  stop(): Promise<void>;
}

export async function startApp(opts: AppOptions): Promise<App> {
  const log = opts.log;
  const pollIntervalMs = opts.pollIntervalMs ?? 60_000;
  const clientFor = (kc: KubeConfig, trust: { trusted: boolean; name?: string }): KubeClient => {
    const client: KubeClient = new KubeClient(kc, { fieldManager: FIELD_MANAGER, ...trust, onRequest: (m, p) => opts.onRequest?.(client.server, m, p) });
    return client;
  };
  const control = clientFor(opts.control, { trusted: true });
  const controlPlaneId = opts.controlPlaneId ?? (await control.get(Namespaces, 'kube-system'))?.metadata.uid;
  if (!controlPlaneId) throw new Error('cannot determine the control plane id (no kube-system namespace); pass --control-plane-id');
  const marks = new OwnershipMarks(controlPlaneId);
  const recorder = new ApiEventRecorder(control, FIELD_MANAGER, log);

  const scope = { log, namespaces: opts.namespaces };
  const providers = new Informer<Provider>(control, Providers, scope);
  const stores = new Informer<ObjectStore>(control, ManagedObjectStores, scope);
  const classes = new Informer<ObjectStoreClass>(control, ObjectStoreClasses, scope);
  const bucketClasses = new Informer<BucketClass>(control, BucketClasses, scope);
  const policies = new Informer<BucketPolicy>(control, BucketPolicies, scope);
  const buckets = new Informer<Claim>(control, Buckets, scope);
  // Only connection Secrets: caching every Secret of the cluster would cost memory and trust.
  const connectionSecrets = new Informer<SecretObject>(control, Secrets, { ...scope, fieldSelector: `type=${CONNECTION_SECRET_TYPE}` });
  const informers = [providers, stores, classes, bucketClasses, policies, buckets, connectionSecrets];

  // A target's endpoint comes from a Secret: nothing its server answers is echoed into status.
  const targets = new TargetClients((creds) => clientFor(creds.kubeConfig, { trusted: false, name: 'the target cluster' }));
  const resolver = new ProviderResolver(control, providers, targets, { allowExec: opts.allowExecCredentials ?? false });
  const usesProvider = (namespace: string, name: string) => (mr: ObjectStore): boolean => mr.metadata.namespace === namespace && mr.spec.providerRef?.name === name;
  const users: ProviderUsers = {
    cached: (namespace, name) => stores.list().filter(usesProvider(namespace, name)).length,
    live: async (namespace, name, signal) => (await control.list<ObjectStore>(ManagedObjectStores, { namespace, signal })).items.filter(usesProvider(namespace, name)).length,
  };

  const common = { workers: opts.workers ?? 4, maxReconcileRate: opts.maxReconcileRate ?? 10 };
  const providerController = new Controller('provider', new ProviderStatusReconciler({
    client: control, cache: providers, resolver, users, recorder, pollIntervalMs, operator: new OperatorInstaller(rookMinioOperator, marks),
  }), log, common);
  const storeController = new Controller('managed/objectstore.minio.rook.crossplane.io', new ManagedReconciler<ObjectStore>({
    type: ManagedObjectStores, client: control, cache: stores, recorder, log,
    connecter: new NativeConnecter(resolver, minioObjectStore, marks, recorder),
    pollIntervalMs, pollJitterMs: opts.pollJitterMs ?? pollIntervalMs / 10,
    // A Kubernetes API is read-your-writes consistent: a missing object right after create is drift.
    creationGraceMs: 0,
  }), log, common);
  const defaultController = new Controller('defaultclass/bucket.storage.crossplane.io', new DefaultClassReconciler({
    client: control, claims: { type: Buckets, cache: buckets }, policies: { type: BucketPolicies, cache: policies }, recorder,
  }), log, common);
  const claimController = new Controller('claimbinding/bucket.storage.crossplane.io', new ClaimReconciler<ObjectStoreClass, ObjectStore>({
    client: control, recorder, log,
    claims: { type: Buckets, cache: buckets },
    portableClasses: { type: BucketClasses, cache: bucketClasses },
    classes: { type: ObjectStoreClasses, cache: classes },
    managed: { type: ManagedObjectStores, cache: stores },
    secrets: connectionSecrets,
    configure: configureObjectStore,
  }), log, common);
  const controllers = [providerController, storeController, defaultController, claimController];

  // Only changes a user makes (spec, labels, annotations, deletion) wake a controller; our own
  // status writes do not (crossplane's DesiredStateChanged filter).
  providers.on({
    added: (p) => providerController.enqueue(keyOf(p.metadata)),
    updated: (old, p) => { if (old.metadata.generation !== p.metadata.generation) providerController.enqueue(keyOf(p.metadata)); },
  });
  stores.on({
    added: (mr) => storeController.enqueue(keyOf(mr.metadata)),
    updated: (old, mr) => { if (desiredStateChanged(old, mr)) storeController.enqueue(keyOf(mr.metadata)); },
  });
  // A Provider counts its users, and a Provider being deleted waits for the last one to go.
  const providerOf = (mr: ObjectStore): void => {
    if (mr.spec.providerRef?.name) providerController.enqueue(`${mr.metadata.namespace}/${mr.spec.providerRef.name}`);
  };
  stores.on({ added: providerOf, deleted: providerOf });
  targets.addHooks(new TargetWatches(minioObjectStore, marks, (key) => storeController.enqueue(key), log));

  // The claim side: a claim wakes both claim controllers; anything a claim depends on wakes the claim.
  const enqueueClaim = (key: string): void => {
    defaultController.enqueue(key);
    claimController.enqueue(key);
  };
  const claimOf = (ref: ObjectReference | undefined): void => {
    if (ref?.kind === Buckets.kind && ref.namespace) claimController.enqueue(`${ref.namespace}/${ref.name}`);
  };
  buckets.on({
    added: (c) => enqueueClaim(keyOf(c.metadata)),
    updated: (old, c) => { if (desiredStateChanged(old, c)) enqueueClaim(keyOf(c.metadata)); },
  });
  stores.on({
    added: (mr) => claimOf(mr.spec.claimRef),
    updated: (old, mr) => { claimOf(old.spec.claimRef); claimOf(mr.spec.claimRef); },
    deleted: (mr) => claimOf(mr.spec.claimRef),
  });
  const secretChanged = (s: SecretObject): void => {
    const owner = s.metadata.ownerReferences?.find((r) => r.controller) as { kind?: string; name: string } | undefined;
    if (owner?.kind === ManagedObjectStores.kind) claimOf(stores.get(`${s.metadata.namespace}/${owner.name}`)?.spec.claimRef);
    if (owner?.kind === Buckets.kind) claimController.enqueue(`${s.metadata.namespace}/${owner.name}`);
  };
  connectionSecrets.on({ added: secretChanged, updated: (_, s) => secretChanged(s), deleted: secretChanged });
  // A claim waiting for a default, or for a class to appear or allow it, is retried when that changes.
  const unclassedIn = (ns: string | undefined): void => {
    for (const c of buckets.list()) if (c.metadata.namespace === ns && !c.spec?.classRef) defaultController.enqueue(keyOf(c.metadata));
  };
  policies.on({ added: (p) => unclassedIn(p.metadata.namespace), updated: (_, p) => unclassedIn(p.metadata.namespace), deleted: (p) => unclassedIn(p.metadata.namespace) });
  const unboundUsing = (uses: (claim: Claim) => boolean): void => {
    for (const c of buckets.list()) if (c.status?.bindingPhase !== 'Bound' && uses(c)) claimController.enqueue(keyOf(c.metadata));
  };
  const usesBucketClass = (bc: BucketClass) => (c: Claim): boolean => c.metadata.namespace === bc.metadata.namespace && c.spec?.classRef?.name === bc.metadata.name;
  bucketClasses.on({ added: (bc) => unboundUsing(usesBucketClass(bc)), updated: (_, bc) => unboundUsing(usesBucketClass(bc)) });
  const classChanged = (cls: ObjectStoreClass): void => {
    const pointing = bucketClasses.list().filter((bc) => bc.classRef.kind === ObjectStoreClasses.kind && bc.classRef.name === cls.metadata.name && bc.classRef.namespace === cls.metadata.namespace);
    unboundUsing((c) => pointing.some((bc) => usesBucketClass(bc)(c)));
  };
  classes.on({ added: classChanged, updated: (_, cls) => classChanged(cls) });

  await Promise.all(informers.map((i) => i.start()));
  for (const c of controllers) c.start();

  const leaks = new LeakSweeper<ObjectStore>({
    kind: minioObjectStore, marks, resolver, providers, control, managedType: ManagedObjectStores, namespaces: opts.namespaces,
    graceMs: opts.leakGraceMs ?? 5 * 60_000, reportOnly: opts.leakReportOnly ?? false, recorder, log,
  });
  leaks.start(opts.leakIntervalMs ?? 5 * 60_000);
  const idle = setInterval(() => void targets.sweepIdle(), 5 * 60_000);
  idle.unref();
  log.info('provider-rook started', { controlPlaneId, server: control.server });

  return {
    controlPlaneId,
    leaks,
    targets,
    async stop() {
      leaks.stop();
      clearInterval(idle);
      await Promise.all(controllers.map((c) => c.stop()));
      await Promise.all(informers.map((i) => i.stop()));
      await targets.close();
      await control.close();
    },
  };
}
