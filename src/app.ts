// Wires provider-rook together: informers on the control cluster, the Provider status and managed
// ObjectStore controllers, drift watches in every target, and the leak sweeper.
import type { KubeConfig } from '@kubernetes/client-node';
import { ObjectStoreKind, type ObjectStore } from './apis/objectstore.ts';
import type { Provider } from './apis/provider.ts';
import { minioObjectStore } from './minio/objectstore.ts';
import { rookMinioOperator } from './minio/operator.ts';
import { OperatorInstaller } from './runtime/native/operator.ts';
import { Controller } from './runtime/controller.ts';
import { ApiEventRecorder } from './runtime/events.ts';
import { Informer } from './runtime/informer.ts';
import { KubeClient } from './runtime/kube/client.ts';
import { Namespaces, type ResourceType } from './runtime/kube/resources.ts';
import type { Logger } from './runtime/logger.ts';
import { ManagedReconciler } from './runtime/managed/reconciler.ts';
import { NativeConnecter, ProviderResolver } from './runtime/native/connecter.ts';
import { LeakSweeper } from './runtime/native/leaks.ts';
import { OwnershipMarks } from './runtime/native/ownership.ts';
import { ProviderStatusReconciler, Providers } from './runtime/native/provider-status.ts';
import { TargetClients } from './runtime/native/targets.ts';
import { TargetWatches } from './runtime/native/watches.ts';
import { keyOf } from './runtime/result.ts';

export const FIELD_MANAGER = 'provider-rook';

export const ManagedObjectStores: ResourceType = {
  apiVersion: `${ObjectStoreKind.group}/${ObjectStoreKind.version}`, kind: ObjectStoreKind.kind, plural: ObjectStoreKind.plural, namespaced: true,
};

export interface AppOptions {
  control: KubeConfig;
  log: Logger;
  /** Watch only this namespace of the control cluster (all namespaces when unset). */
  namespace?: string;
  /** Names this control plane in ownership marks; defaults to the control cluster's kube-system UID. */
  controlPlaneId?: string;
  pollIntervalMs?: number;
  pollJitterMs?: number;
  leakIntervalMs?: number;
  /** Report leaked target objects instead of deleting them. */
  leakReportOnly?: boolean;
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
  const clientFor = (kc: KubeConfig): KubeClient => {
    const client: KubeClient = new KubeClient(kc, { fieldManager: FIELD_MANAGER, onRequest: (m, p) => opts.onRequest?.(client.server, m, p) });
    return client;
  };
  const control = clientFor(opts.control);
  const controlPlaneId = opts.controlPlaneId ?? (await control.get(Namespaces, 'kube-system'))?.metadata.uid;
  if (!controlPlaneId) throw new Error('cannot determine the control plane id (no kube-system namespace); pass --control-plane-id');
  const marks = new OwnershipMarks(controlPlaneId);
  const recorder = new ApiEventRecorder(control, FIELD_MANAGER, log);

  const providers = new Informer<Provider>(control, Providers, { log, namespace: opts.namespace });
  const stores = new Informer<ObjectStore>(control, ManagedObjectStores, { log, namespace: opts.namespace });
  const targets = new TargetClients((creds) => clientFor(creds.kubeConfig));
  const resolver = new ProviderResolver(control, providers, targets);

  const common = { workers: opts.workers ?? 4, maxReconcileRate: opts.maxReconcileRate ?? 10 };
  const providerController = new Controller('provider', new ProviderStatusReconciler({
    client: control, cache: providers, resolver, pollIntervalMs, operator: new OperatorInstaller(rookMinioOperator, marks),
  }), log, common);
  const storeController = new Controller('managed/objectstore.minio.rook.crossplane.io', new ManagedReconciler<ObjectStore>({
    type: ManagedObjectStores, client: control, cache: stores, recorder, log,
    connecter: new NativeConnecter(resolver, minioObjectStore, marks),
    pollIntervalMs, pollJitterMs: opts.pollJitterMs ?? pollIntervalMs / 10,
    // A Kubernetes API is read-your-writes consistent: a missing object right after create is drift.
    creationGraceMs: 0,
  }), log, common);

  // Only changes a user makes (spec, labels, annotations, deletion) wake the managed controller;
  // our own status writes do not (crossplane's DesiredStateChanged filter).
  providers.on({
    added: (p) => providerController.enqueue(keyOf(p.metadata)),
    updated: (old, p) => { if (old.metadata.generation !== p.metadata.generation) providerController.enqueue(keyOf(p.metadata)); },
  });
  stores.on({
    added: (mr) => storeController.enqueue(keyOf(mr.metadata)),
    updated: (old, mr) => { if (desiredStateChanged(old, mr)) storeController.enqueue(keyOf(mr.metadata)); },
  });
  targets.addHooks(new TargetWatches(minioObjectStore, marks, (key) => storeController.enqueue(key), log));

  await Promise.all([providers.start(), stores.start()]);
  providerController.start();
  storeController.start();

  const leaks = new LeakSweeper<ObjectStore>({
    kind: minioObjectStore, marks, resolver, providers, managed: stores, reportOnly: opts.leakReportOnly ?? false, log,
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
      await Promise.all([providerController.stop(), storeController.stop()]);
      await Promise.all([providers.stop(), stores.stop()]);
      await targets.close();
      await control.close();
    },
  };
}

function desiredStateChanged(old: ObjectStore, mr: ObjectStore): boolean {
  const volatile = new Set(['crossplane.io/external-create-pending', 'crossplane.io/external-create-failed']);
  const annotations = (o: ObjectStore): Record<string, string> =>
    Object.fromEntries(Object.entries(o.metadata.annotations ?? {}).filter(([k]) => !volatile.has(k)));
  return old.metadata.generation !== mr.metadata.generation ||
    JSON.stringify(old.metadata.labels ?? {}) !== JSON.stringify(mr.metadata.labels ?? {}) ||
    JSON.stringify(annotations(old)) !== JSON.stringify(annotations(mr)) ||
    old.metadata.deletionTimestamp !== mr.metadata.deletionTimestamp ||
    JSON.stringify(old.metadata.finalizers ?? []) !== JSON.stringify(mr.metadata.finalizers ?? []);
}
