// The Provider system: what every native managed kind shares, registered on the generic manager as
// one runnable. Providers and their controller (provider-status.ts), the target clients they
// resolve to, the operators installed into targets and their upgrade waves, scheduling's usage and
// capacity reservations, ownership marks, and the leak sweepers of every kind. Each part sets up its
// own controller and wake-ups; this class holds what they share.
import { keyOf } from '../../kit/controller/result.ts';
import type { ObjectKey } from '../../kit/kube/object-key.ts';
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import type { Controller } from '../../kit/controller/controller.ts';
import { setupOperatorWaves } from '../operators/waves.ts';
import type { Informer } from '../../kit/controller/informer.ts';
import type { Client } from '../../kit/kube/client.ts';
import { Namespaces, type ResourceType } from '../../kit/kube/resources.ts';
import type { Manager, Runnable } from '../../kit/controller/manager.ts';
import type { ManagedResource } from '../managed/types.ts';
import { setupReservations, type Reservations } from '../scheduling/reservations.ts';
import { ProviderUsage } from '../scheduling/usage.ts';
import { StoreUsers } from '../native/store-users.ts';
import type { EndpointPolicy } from '../providers/credentials.ts';
import type { LeakReport, LeakSweeper } from '../native/leaks.ts';
import { OperatorInstaller, type OperatorBundle } from '../operators/operator.ts';
import { OwnershipMarks } from '../ownership/marks.ts';
import { loadOwnershipKey, type SecretRef } from '../ownership/key.ts';
import { Providers, type ProviderObject } from '../providers/provider.ts';
import { setupProviderStatus } from './provider-status.ts';
import { TargetClients } from '../providers/targets.ts';
import { observeProviders } from '../managed-metrics.ts';
import { ProviderResolver } from '../providers/resolver.ts';
import { onChange } from '../../kit/controller/handlers.ts';

/** The longest a Provider waits between checks, and an unplaced resource between tries. */
const PROVIDER_POLL_MS = 60_000;

export const DEFAULT_OWNERSHIP_KEY_SECRET: SecretRef = { namespace: 'default', name: 'provider-rook-ownership-key' };

export interface ProviderSystemOptions {
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
  /** Where Provider endpoints may be (--allow-plain-http, --refuse-endpoint-ranges; tests inject a resolver). */
  endpoints?: EndpointPolicy;
}

/** A managed kind as the Provider system sees it. */
export interface RegisteredKind {
  type: ResourceType;
  cache: Informer<ManagedResource>;
  installer?: OperatorInstaller;
}

export class ProviderSystem implements Runnable {
  readonly opts: ProviderSystemOptions & { pollIntervalMs: number; pollJitterMs: number; providerPollMs: number };
  readonly manager: Manager;
  readonly marks: OwnershipMarks;
  readonly targets: TargetClients;
  readonly resolver: ProviderResolver;
  /** The Providers, cached: what every part reads, and whose changes wake them. */
  readonly providers: Informer<ProviderObject>;
  /** Who uses each Provider, and the capacity places the API server arbitrates (scheduling/). */
  readonly usage = new ProviderUsage();
  /** Which managed resources live in another's store: a store is deleted after them. */
  readonly storeUsers: StoreUsers;
  readonly reservations: Reservations;
  private readonly providerController: Controller;
  private readonly placed: (mr: ReadonlyDeep<ManagedResource>) => void;
  private readonly kinds: RegisteredKind[] = [];
  private readonly sweepers: LeakSweeper<ManagedResource>[] = [];
  private readonly installers = new Map<string, OperatorInstaller>();
  private idle?: NodeJS.Timeout;
  private stopProviderMetrics?: () => void;

  /** Resolves the control-plane id (a read of kube-system unless given) and the ownership key, and registers on `manager`. */
  static async create(manager: Manager, opts: ProviderSystemOptions = {}): Promise<ProviderSystem> {
    const control = manager.control;
    const id = opts.controlPlaneId ?? (await control.get(Namespaces, { name: 'kube-system' }))?.metadata.uid;
    if (!id) throw new Error('cannot determine the control plane id (no kube-system namespace); pass --control-plane-id');
    const key = await loadOwnershipKey(control, opts.ownershipKeySecret ?? DEFAULT_OWNERSHIP_KEY_SECRET);
    const system = new ProviderSystem(manager, opts, new OwnershipMarks(id, key));
    manager.add(system);
    return system;
  }

  /** Each part wires its own controller and what wakes it: the Provider controller, reservations, operator waves. */
  private constructor(manager: Manager, opts: ProviderSystemOptions, marks: OwnershipMarks) {
    const pollIntervalMs = opts.pollIntervalMs ?? 600_000;
    // Providers are few and cheap to check, and placement judges a target's reachability by the last
    // check: they are checked at least once a minute, however long the poll of managed resources.
    const providerPollMs = Math.min(pollIntervalMs, PROVIDER_POLL_MS);
    this.opts = { ...opts, pollIntervalMs, pollJitterMs: opts.pollJitterMs ?? pollIntervalMs / 10, providerPollMs };
    this.manager = manager;
    this.storeUsers = new StoreUsers(manager.control);
    this.marks = marks;
    // A target's endpoint comes from a Secret: nothing its server answers is echoed into status.
    // One target that does not answer must cost the others nothing: its client fails fast (isolate).
    this.targets = new TargetClients(
      (creds) => manager.client(creds.access, { trusted: false, name: 'the target cluster', isolate: true }),
      manager.log,
    );
    this.providers = manager.informer<ProviderObject>(Providers);
    this.resolver = new ProviderResolver(manager.control, this.providers, this.targets, {
      credentials: { allowExec: opts.allowExecCredentials ?? false, endpoints: opts.endpoints },
      log: manager.log,
      // A rotated Secret: its Providers resolve again now, which replaces the target's client.
      secretChanged: ({ namespace, name }) => {
        for (const p of this.providers.list())
          if (p.metadata.namespace === namespace && p.spec.credentialsSecretRef.name === name) this.recheck(p.metadata);
      },
    });
    // A Provider that names another Secret, or goes, leaves the resolver's watches.
    onChange(this.providers, () => void this.resolver.prune(), {
      on: ['updated', 'deleted'],
      when: (old, p) => old.spec.credentialsSecretRef.name !== p.spec.credentialsSecretRef.name,
    });
    this.providerController = setupProviderStatus(manager, {
      providers: this.providers,
      resolver: this.resolver,
      pollIntervalMs: providerPollMs,
      operators: () => [...this.installers.values()],
      users: {
        cached: (key) => this.kinds.reduce((n, k) => n + k.cache.list().filter(usesProvider(key)).length, 0),
        live: (key, signal) => this.liveUsers(manager.control, key, signal),
      },
    });
    ({ reservations: this.reservations, placed: this.placed } = setupReservations(manager, {
      providers: this.providers,
      usage: this.usage,
      managed: (kind) => this.kinds.find((k) => k.type.kind === kind),
    }));
    setupOperatorWaves(
      manager,
      this.providers,
      (p, operator) => Boolean(p.spec.operatorInstall) && Boolean(this.installers.get(operator)?.bundle.legacy),
    );
  }

  /** Looks at a Provider's status again now (its Secret rotated, an operator installed or gone, a user more or less). */
  recheck(provider: { namespace?: string; name: string }): void {
    this.providerController.enqueue(keyOf(provider));
  }

  /** A kind's leak sweeper, started and stopped with the system. */
  addSweeper(sweeper: LeakSweeper<ManagedResource>): void {
    this.sweepers.push(sweeper);
  }

  get controlPlaneId(): string {
    return this.marks.controlPlaneId;
  }

  /** A Provider's users, read live: before its deletion may go on, no cache is trusted. */
  private async liveUsers(control: Client, { namespace, name }: Required<ObjectKey>, signal?: AbortSignal): Promise<number> {
    let n = 0;
    for (const k of this.kinds)
      n += (await control.list<ManagedResource>(k.type, { namespace, signal })).items.filter(usesProvider({ namespace, name })).length;
    // A place reserved for a resource not placed yet may still become one.
    const provider = this.providers.get({ namespace, name });
    return n + (provider ? this.reservations.pending(provider) : 0);
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
    const providerOf = (mr: ReadonlyDeep<ManagedResource>): void => {
      if (mr.spec.providerRef?.name) this.recheck({ namespace: mr.metadata.namespace, name: mr.spec.providerRef.name });
    };
    onChange(kind.cache, providerOf, { on: ['added', 'deleted'] });
    // Placed by the scheduler: that Provider has one more user, and another one that reserved a
    // place for it in a race it lost gives that place back.
    const newlyPlaced = (mr: ReadonlyDeep<ManagedResource>): void => {
      providerOf(mr);
      this.placed(mr);
    };
    onChange(kind.cache, newlyPlaced, {
      on: ['updated'],
      when: (old, mr) => !!mr.spec.providerRef?.name && old.spec.providerRef?.name !== mr.spec.providerRef.name,
    });
  }

  /** One leak sweep over every registered kind. */
  async sweepLeaks(signal?: AbortSignal, now?: number): Promise<LeakReport[]> {
    const reports: LeakReport[] = [];
    for (const sweeper of this.sweepers) reports.push(...(await sweeper.sweep(signal, now)));
    return reports;
  }

  start(): void {
    for (const s of this.sweepers) s.start(this.opts.leakIntervalMs ?? 5 * 60_000);
    this.idle = setInterval(() => void this.targets.sweepIdle(), 5 * 60_000);
    this.idle.unref();
    this.stopProviderMetrics = observeProviders(() => this.providers.list());
    this.manager.log.info('provider-rook started', {
      controlPlaneId: this.controlPlaneId,
      server: this.manager.control.server,
      kinds: this.kinds.map((k) => k.type.kind),
    });
  }

  /** After the controllers: nothing reconciles through a target client once it is closed. */
  async stop(): Promise<void> {
    this.stopProviderMetrics?.();
    for (const s of this.sweepers) s.stop();
    clearInterval(this.idle);
    await this.resolver.stop();
    await this.targets.closeAll();
  }
}

const usesProvider =
  ({ namespace, name }: Required<ObjectKey>) =>
  (mr: ReadonlyDeep<ManagedResource>): boolean =>
    mr.metadata.namespace === namespace && mr.spec.providerRef?.name === name;
