// The manager (controller-runtime's Manager): the control-cluster client, shared informers, the
// controllers, the target clients and what every native kind shares: the Provider controller, its
// operators and the leak sweepers. setupNativeManaged and setupClaim (setup.ts) register kinds on
// it; start() runs them all. It knows no backend.
import type { ClusterAccess } from './kube/config.ts';
import { Controller } from './controller.ts';
import { ApiEventRecorder } from './events.ts';
import type { HealthSources } from './health.ts';
import { Informer } from './informer.ts';
import { KubeClient, type KubeObjectLike } from './kube/client.ts';
import { Namespaces, type ResourceType } from './kube/resources.ts';
import type { Logger } from './logger.ts';
import { observeProviders } from './metrics.ts';
import type { ManagedResource } from './managed/types.ts';
import { ProviderResolver } from './native/connecter.ts';
import type { EndpointPolicy } from './native/credentials.ts';
import type { LeakReport, LeakSweeper } from './native/leaks.ts';
import { OperatorInstaller, type OperatorBundle } from './native/operator.ts';
import { OwnershipMarks } from './native/ownership.ts';
import { loadOwnershipKey, type SecretRef } from './native/ownership-key.ts';
import { Providers, type ProviderObject } from './native/provider.ts';
import { ProviderStatusReconciler } from './native/provider-status.ts';
import { TargetClients } from './native/targets.ts';
import { Reservations } from './scheduling/reservations.ts';
import { ProviderUsage } from './scheduling/usage.ts';
import { keyOf, type Reconciler } from './result.ts';

export interface ManagerOptions {
  control: ClusterAccess;
  log: Logger;
  /** Written as the field manager of every write. */
  fieldManager: string;
  /** Watch only these namespaces of the control cluster (all namespaces when unset). */
  namespaces?: string[];
  /** Names this control plane in ownership marks; defaults to the control cluster's kube-system UID. */
  controlPlaneId?: string;
  /** The control-cluster Secret holding the key that signs ownership marks (made when missing). */
  ownershipKeySecret?: SecretRef;
  pollIntervalMs?: number;
  pollJitterMs?: number;
  leakIntervalMs?: number;
  /** Target objects younger than this are never judged leaked. */
  leakGraceMs?: number;
  /** Report leaked target objects instead of deleting them. */
  leakReportOnly?: boolean;
  /** Let Provider kubeconfigs run exec credential plugins inside this process (off by default). */
  allowExecCredentials?: boolean;
  /** Where Provider endpoints may be (--allow-plain-http, --refuse-endpoint-ranges); link-local is refused always. */
  endpoints?: EndpointPolicy;
  workers?: number;
  maxReconcileRate?: number;
  /** Count API requests (for tests and benchmarks). */
  onRequest?: (server: string, method: string, path: string) => void;
}

export const DEFAULT_OWNERSHIP_KEY_SECRET: SecretRef = { namespace: 'default', name: 'provider-rook-ownership-key' };

/** A managed kind as the manager's shared parts see it. */
export interface RegisteredKind {
  type: ResourceType;
  cache: Informer<ManagedResource>;
  installer?: OperatorInstaller;
}

export class Manager {
  readonly opts: ManagerOptions & { pollIntervalMs: number; pollJitterMs: number };
  readonly log: Logger;
  readonly control: KubeClient;
  readonly marks: OwnershipMarks;
  readonly recorder: ApiEventRecorder;
  readonly targets: TargetClients;
  readonly resolver: ProviderResolver;
  readonly providers: Informer<ProviderObject>;
  readonly providerController: Controller;
  readonly kinds: RegisteredKind[] = [];
  readonly sweepers: LeakSweeper<ManagedResource>[] = [];
  /** Who uses each Provider, and the capacity places the API server arbitrates (scheduling/). */
  readonly usage = new ProviderUsage();
  readonly reservations: Reservations;
  readonly reservationController: Controller;
  private readonly informers = new Map<string, Informer<KubeObjectLike>>();
  private readonly controllers: Controller[] = [];
  private readonly installers = new Map<string, OperatorInstaller>();
  private idle?: NodeJS.Timeout;
  /** Run by stop(): e.g. metrics that read this manager's caches stop reading them. */
  readonly cleanups: (() => void)[] = [];

  /** Resolves the control-plane id (a read of kube-system unless given) and builds the shared parts. */
  static async create(opts: ManagerOptions): Promise<Manager> {
    const control = clientFor(opts, opts.control, { trusted: true });
    const id = opts.controlPlaneId ?? (await control.get(Namespaces, 'kube-system'))?.metadata.uid;
    if (!id) throw new Error('cannot determine the control plane id (no kube-system namespace); pass --control-plane-id');
    const key = await loadOwnershipKey(control, opts.ownershipKeySecret ?? DEFAULT_OWNERSHIP_KEY_SECRET);
    return new Manager(opts, control, new OwnershipMarks(id, key));
  }

  private constructor(opts: ManagerOptions, control: KubeClient, marks: OwnershipMarks) {
    const pollIntervalMs = opts.pollIntervalMs ?? 60_000;
    this.opts = { ...opts, pollIntervalMs, pollJitterMs: opts.pollJitterMs ?? pollIntervalMs / 10 };
    this.log = opts.log;
    this.control = control;
    this.marks = marks;
    this.recorder = new ApiEventRecorder(control, opts.fieldManager, opts.log);
    // A target's endpoint comes from a Secret: nothing its server answers is echoed into status.
    // One target that does not answer must cost the others nothing: its client fails fast (isolate).
    this.targets = new TargetClients((creds) => clientFor(opts, creds.access, { trusted: false, name: 'the target cluster', isolate: true }), opts.log);
    this.providers = this.informer<ProviderObject>(Providers);
    this.resolver = new ProviderResolver(control, this.providers, this.targets, {
      credentials: { allowExec: opts.allowExecCredentials ?? false, endpoints: opts.endpoints }, log: opts.log,
      // A rotated Secret: its Providers resolve again now, which replaces the target's client.
      secretChanged: (namespace, name) => {
        for (const p of this.providers.list()) if (p.metadata.namespace === namespace && p.spec.credentialsSecretRef.name === name) this.providerController.enqueue(keyOf(p.metadata));
      },
    });
    this.providerController = this.controller('provider', new ProviderStatusReconciler({
      client: control, cache: this.providers, resolver: this.resolver, recorder: this.recorder, pollIntervalMs,
      operators: () => [...this.installers.values()],
      users: {
        cached: (namespace, name) => this.kinds.reduce((n, k) => n + k.cache.list().filter(usesProvider(namespace, name)).length, 0),
        live: async (namespace, name, signal) => {
          let n = 0;
          for (const k of this.kinds) n += (await control.list<ManagedResource>(k.type, { namespace, signal })).items.filter(usesProvider(namespace, name)).length;
          // A place reserved for a resource not placed yet may still become one.
          const provider = this.providers.get(`${namespace}/${name}`);
          return n + (provider ? this.reservations.pending(provider) : 0);
        },
      },
    }));
    this.reservations = new Reservations({
      client: control, providers: this.providers, usage: this.usage,
      managed: (kind) => this.kinds.find((k) => k.type.kind === kind),
    });
    this.reservationController = this.controller('scheduling/reservations', this.reservations);
    // A resource that went away frees its place on the Providers that reserved one for it.
    this.usage.onFreed((mr) => {
      for (const p of this.providers.list()) {
        if (p.metadata.namespace === mr.metadata.namespace && p.status?.reservations?.some((r) => r.uid === mr.metadata.uid)) this.reservationController.enqueue(keyOf(p.metadata));
      }
    });
    // Only changes a user makes (the spec, deletion) wake it; our own status writes do not.
    this.providers.on({
      added: (p) => {
        this.providerController.enqueue(keyOf(p.metadata));
        if (this.reservations.mayHoldStale(p)) this.reservationController.enqueue(keyOf(p.metadata));
      },
      updated: (old, p) => {
        if (old.metadata.generation !== p.metadata.generation || old.metadata.deletionTimestamp !== p.metadata.deletionTimestamp) this.providerController.enqueue(keyOf(p.metadata));
        if (old.spec.credentialsSecretRef.name !== p.spec.credentialsSecretRef.name) void this.resolver.prune();
        // A place taken in a race the other scheduler won may be written after its resource was placed.
        if (this.reservations.mayHoldStale(p)) this.reservationController.enqueue(keyOf(p.metadata));
      },
      deleted: () => void this.resolver.prune(),
    });
  }

  get controlPlaneId(): string {
    return this.marks.controlPlaneId;
  }

  /** The shared informer for a type (and selection): one list/watch however many controllers read it. */
  informer<T extends KubeObjectLike>(type: ResourceType, selection: { fieldSelector?: string } = {}): Informer<T> {
    const key = `${type.apiVersion}/${type.kind}?${selection.fieldSelector ?? ''}`;
    let informer = this.informers.get(key);
    if (!informer) {
      informer = new Informer(this.control, type, { log: this.log, namespaces: this.opts.namespaces, ...selection });
      this.informers.set(key, informer);
    }
    return informer as unknown as Informer<T>;
  }

  controller(name: string, reconciler: Reconciler): Controller {
    const controller = new Controller(name, reconciler, this.log, { workers: this.opts.workers ?? 4, maxReconcileRate: this.opts.maxReconcileRate ?? 10 });
    this.controllers.push(controller);
    return controller;
  }

  /** One installer per operator, shared by the kinds that need it and by Provider status. */
  installerFor(bundle: OperatorBundle): OperatorInstaller {
    let installer = this.installers.get(bundle.name);
    if (!installer) this.installers.set(bundle.name, (installer = new OperatorInstaller(bundle, this.marks)));
    return installer;
  }

  registerKind(kind: RegisteredKind): void {
    this.kinds.push(kind);
    this.usage.track(kind.cache);
    // A Provider counts its users, and a Provider being deleted waits for the last one to go.
    const providerOf = (mr: ManagedResource): void => {
      if (mr.spec.providerRef?.name) this.providerController.enqueue(`${mr.metadata.namespace}/${mr.spec.providerRef.name}`);
    };
    kind.cache.on({
      added: providerOf, deleted: providerOf,
      updated: (old, mr) => {
        const placed = mr.spec.providerRef?.name;
        if (!placed || old.spec.providerRef?.name === placed) return;
        // Placed by the scheduler: that Provider has one more user, and another one that reserved a
        // place for it in a race it lost gives that place back.
        providerOf(mr);
        for (const p of this.providers.list()) {
          if (p.metadata.namespace === mr.metadata.namespace && p.metadata.name !== placed && p.status?.reservations?.some((r) => r.uid === mr.metadata.uid)) {
            this.reservationController.enqueue(keyOf(p.metadata));
          }
        }
      },
    });
  }

  /** What the probes check: the informers' first lists, and whether a controller or informer is stuck. */
  readonly health: HealthSources = {
    synced: () => [...this.informers.values()].every((i) => i.hasSynced),
    probes: () => [...this.controllers, ...this.informers.values()],
  };

  /** One leak sweep over every registered kind. */
  async sweepLeaks(signal?: AbortSignal, now?: number): Promise<LeakReport[]> {
    const reports: LeakReport[] = [];
    for (const sweeper of this.sweepers) reports.push(...(await sweeper.sweep(signal, now)));
    return reports;
  }

  async start(): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.start()));
    for (const c of this.controllers) c.start();
    for (const s of this.sweepers) s.start(this.opts.leakIntervalMs ?? 5 * 60_000);
    this.idle = setInterval(() => void this.targets.sweepIdle(), 5 * 60_000);
    this.idle.unref();
    this.cleanups.push(observeProviders(() => this.providers.list()));
    this.log.info('provider-rook started', { controlPlaneId: this.controlPlaneId, server: this.control.server, kinds: this.kinds.map((k) => k.type.kind) });
  }

  async stop(): Promise<void> {
    for (const cleanup of this.cleanups.splice(0)) cleanup();
    for (const s of this.sweepers) s.stop();
    clearInterval(this.idle);
    await Promise.all(this.controllers.map((c) => c.stop()));
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
    await this.resolver.stop();
    await this.targets.closeAll();
    await this.control.close();
  }
}

function clientFor(opts: ManagerOptions, kc: ClusterAccess, trust: { trusted: boolean; name?: string; isolate?: boolean }): KubeClient {
  const client: KubeClient = new KubeClient(kc, { fieldManager: opts.fieldManager, ...trust, onRequest: (m, p) => opts.onRequest?.(client.server, m, p) });
  return client;
}

const usesProvider = (namespace: string, name: string) => (mr: ManagedResource): boolean =>
  mr.metadata.namespace === namespace && mr.spec.providerRef?.name === name;
