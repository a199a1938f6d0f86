// The manager (controller-runtime's Manager): the control-cluster client, shared informers, the
// controllers and whatever else runs beside them (add(runnable)), the probe and metrics server, and
// leader election. It knows nothing of Providers, targets or backends: the Provider system
// (runtime/system/provider-system.ts) is one runnable among others.
import type { ClusterAccess } from '../kube/config.ts';
import { Controller } from './controller.ts';
import { ApiEventRecorder } from './events.ts';
import { Health, type HealthSources } from '../health.ts';
import { Informer } from './informer.ts';
import { KubeClient, type KubeObjectLike, type Selection } from '../kube/client.ts';
import type { ResourceType } from '../kube/resources.ts';
import { LeaderElector, type LeaderElectionOptions } from './leader.ts';
import type { Logger } from '../logger.ts';
import type { Reconciler } from './result.ts';
import { serveProbes, type ProbeServer } from '../serve.ts';

export interface ManagerOptions {
  control: ClusterAccess;
  log: Logger;
  /** Written as the field manager of every write. */
  fieldManager: string;
  /** Watch only these namespaces of the control cluster (all namespaces when unset). */
  namespaces?: string[];
  workers?: number;
  maxReconcileRate?: number;
  /** Count API requests (for tests and benchmarks). */
  onRequest?: (server: string, method: string, path: string) => void;
  /** Serve /metrics, /healthz and /readyz at "host:port" (unset: not served). */
  metricsAddr?: string;
  /** Hold this Lease before anything starts; `lost` runs when it is lost (another process may lead now). */
  leaderElection?: Pick<
    LeaderElectionOptions,
    'namespace' | 'name' | 'identity' | 'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs'
  > & {
    lost(): void;
  };
}

/** Something that runs beside the controllers: started after them, once the informers synced; stopped after them. */
export interface Runnable {
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
}

export class Manager {
  readonly opts: ManagerOptions;
  readonly log: Logger;
  /** The control cluster's client. */
  readonly control: KubeClient;
  readonly recorder: ApiEventRecorder;
  /** What /readyz and /healthz answer. */
  readonly health = new Health();
  private readonly informers = new Map<string, Informer<KubeObjectLike>>();
  private readonly controllers: Controller[] = [];
  private readonly runnables: Runnable[] = [];
  private readonly elector?: LeaderElector;
  private readonly stopping = new AbortController();
  /** Ends the Lease's renewals: only once stop() has waited for every controller, runnable and informer. */
  private readonly holding = new AbortController();
  private server?: ProbeServer;
  private leading?: Promise<boolean>;
  /** Set when the Lease is lost (another process leads): the controllers must not start. */
  private leaseLost = false;
  /** Run by stop(): e.g. metrics that read this manager's caches stop reading them. */
  readonly cleanups: (() => void)[] = [];

  constructor(opts: ManagerOptions) {
    this.opts = opts;
    this.log = opts.log;
    this.control = this.client(opts.control, { trusted: true });
    // Our caches read our own writes at once: no pass writes again from a copy older than its last write.
    this.control.onWritten((type, obj) => {
      for (const informer of this.informers.values()) if (informer.caches(type)) informer.remember(obj);
    });
    this.recorder = new ApiEventRecorder(this.control, opts.fieldManager, opts.log);
    const election = opts.leaderElection;
    if (election)
      this.elector = new LeaderElector({
        client: this.control,
        namespace: election.namespace,
        name: election.name,
        identity: election.identity,
        log: opts.log,
        leaseDurationMs: election.leaseDurationMs,
        renewDeadlineMs: election.renewDeadlineMs,
        retryPeriodMs: election.retryPeriodMs,
      });
  }

  /** A client for `access` with this manager's field manager and request counting. */
  client(access: ClusterAccess, trust: { trusted: boolean; name?: string; isolate?: boolean }): KubeClient {
    const client: KubeClient = new KubeClient(access, {
      fieldManager: this.opts.fieldManager,
      ...trust,
      onRequest: (m, p) => this.opts.onRequest?.(client.server, m, p),
    });
    return client;
  }

  /** The shared informer for a type (and selection): one list/watch however many controllers read it. */
  informer<T extends KubeObjectLike>(type: ResourceType, selection: Pick<Selection, 'fieldSelector'> = {}): Informer<T> {
    const key = `${type.apiVersion}/${type.kind}?${selection.fieldSelector ?? ''}`;
    let informer = this.informers.get(key);
    if (!informer) {
      informer = new Informer(this.control, type, { log: this.log, namespaces: this.opts.namespaces, ...selection });
      this.informers.set(key, informer);
    }
    return informer as unknown as Informer<T>;
  }

  controller(name: string, reconciler: Reconciler): Controller {
    const controller = new Controller(name, reconciler, this.log, {
      workers: this.opts.workers ?? 4,
      maxReconcileRate: this.opts.maxReconcileRate ?? 10,
    });
    this.controllers.push(controller);
    return controller;
  }

  add(runnable: Runnable): void {
    this.runnables.push(runnable);
  }

  /** What the probes check: the informers' first lists, and whether a controller or informer is stuck. */
  readonly sources: HealthSources = {
    synced: () => [...this.informers.values()].every((i) => i.hasSynced),
    probes: () => [...this.controllers, ...this.informers.values()],
  };

  /**
   * Serves the probes and, when electing, waits for the Lease (a standby says so on /readyz).
   * False when stopped while standing by. Kinds may be registered after it, as leader.
   */
  async lead(): Promise<boolean> {
    this.leading ??= (async () => {
      if (this.opts.metricsAddr) this.server = await serveProbes(this.opts.metricsAddr, this.health, this.log);
      if (!this.elector) return true;
      const { namespace, name } = this.opts.leaderElection!;
      this.health.set('standby', `waiting for Lease ${namespace}/${name}`);
      if (!(await this.elector.acquire(this.stopping.signal))) return false;
      // Renewed from now on, not once the caches have synced: their first lists may take longer than the
      // lease; and until the last reconcile has ended on stop, or a standby would act beside it.
      void this.elector.hold(this.holding.signal).then((outcome) => {
        if (outcome !== 'lost') return;
        this.leaseLost = true;
        this.opts.leaderElection!.lost();
      });
      return true;
    })();
    return this.leading;
  }

  /** Leads (above), then starts the informers, the controllers and the runnables. False when stopped first. */
  async start(): Promise<boolean> {
    if (!(await this.lead())) return false;
    this.health.set('syncing');
    await Promise.all([...this.informers.values()].map((i) => i.start()));
    // A Lease lost while the caches synced (someone else leads now): nothing starts.
    if (this.leaseLost || this.stopping.signal.aborted) return false;
    for (const c of this.controllers) c.start();
    for (const r of this.runnables) await r.start();
    this.health.watch(this.sources);
    if (this.stopping.signal.aborted) return false;
    this.health.set('running');
    return true;
  }

  /** Stops in reverse: controllers, runnables, informers; then gives up the Lease, after our last write. */
  async stop(): Promise<void> {
    this.health.set('stopping');
    this.stopping.abort();
    for (const cleanup of this.cleanups.splice(0)) cleanup();
    await Promise.all(this.controllers.map((c) => c.stop()));
    for (const r of [...this.runnables].reverse()) await r.stop();
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
    this.holding.abort(); // nothing of ours acts any more
    await this.elector?.release(); // the next leader may start at once
    await this.server?.close();
    await this.control.close();
  }
}
