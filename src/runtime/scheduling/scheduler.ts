// The scheduler (one shared reconciler for every kind of managed resource; kube-scheduler's bind step and OCM
// Placement's decisions as models): a managed resource that names providerSelector instead of
// providerRef gets one Provider, chosen by chooseProvider among the Providers of its namespace, and
// keeps it for good: spec.providerRef is set once and the CRD refuses any change. Nothing is
// provisioned until then, so a resource that cannot be placed costs no target anything. Each
// decision is a Scheduled condition and an Event, on the resource and on its claim.
import { keyOf } from '../../kit/controller/result.ts';
import { copyOf, type ReadonlyDeep } from '../../kit/controller/informer.ts';
import { getCondition, setCondition, type Condition } from '../../kit/conditions.ts';
import type { EventRecorder, EventTarget } from '../../kit/controller/events.ts';
import { sameJson } from '../../kit/json.ts';
import type { Client } from '../../kit/kube/client.ts';
import { isConflict, isNotFound } from '../../kit/kube/errors.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import type { ManagedResource } from '../managed/types.ts';
import { isDeleting } from '../../kit/meta.ts';
import { operatorSettings, type ProviderObject } from '../providers/provider.ts';
import { Reasons, type Reason } from '../reasons.ts';
import { done, requeue, requeueAfter, type Reconciler, type Result } from '../../kit/controller/result.ts';
import { chooseProvider, type Candidate, type Decision } from './choose.ts';
import type { Reservations } from './reservations.ts';
import type { ProviderUsage } from './usage.ts';
import type { Cache } from '../../kit/controller/informer.ts';

export interface SchedulerOptions<MR extends ManagedResource> {
  type: ResourceType;
  client: Client;
  cache: Cache<MR>;
  providers: Cache<ProviderObject>;
  usage: ProviderUsage;
  reservations: Reservations;
  /** The operator the kind needs in its target (its bundle's name), if any. */
  operator?: { name: string; legacy?: boolean };
  /** A target namespace of the resource the Provider does not allow, if any: such a Provider is not chosen. */
  refusedNamespace?(provider: ReadonlyDeep<ProviderObject>, mr: MR): string | undefined;
  recorder: EventRecorder;
  /** How often an unschedulable resource is looked at again without any Provider changing. */
  recheckMs: number;
}

/**
 * Whether the scheduler has anything to do for this resource: it names a selector, and has no
 * Provider yet or does not say Scheduled=True yet (that write can lose a race with the managed
 * controller, which starts the moment providerRef is set).
 */
export function needsScheduler(mr: ReadonlyDeep<ManagedResource>): boolean {
  if (isDeleting(mr.metadata) || !mr.spec.providerSelector) return false;
  return !mr.spec.providerRef || getCondition(mr.status?.conditions, 'Scheduled')?.status !== 'True';
}

export class Scheduler<MR extends ManagedResource> implements Reconciler {
  private readonly o: SchedulerOptions<MR>;

  constructor(opts: SchedulerOptions<MR>) {
    this.o = opts;
  }

  async reconcile(key: string, signal: AbortSignal): Promise<Result> {
    const cached = this.o.cache.get(key);
    if (!cached || !needsScheduler(cached)) return done();
    const mr = copyOf<MR>(cached);
    try {
      // Placed (and its Event written), but the status did not say so yet: a crash or a lost race.
      if (mr.spec.providerRef) return await this.scheduled(mr, cached, mr.spec.providerRef.name, signal);
      return await this.schedule(mr, cached, signal);
    } catch (err) {
      if (isConflict(err)) return requeue();
      if (isNotFound(err)) return done();
      throw err;
    }
  }

  private async schedule(mr: MR, cached: ReadonlyDeep<MR>, signal: AbortSignal): Promise<Result> {
    const namespace = mr.metadata.namespace!;
    const uid = mr.metadata.uid!;
    const providers = this.o.providers.list().filter((p) => p.metadata.namespace === namespace);
    // A place taken before a crash, not yet recorded on the resource: it is this resource's, unless
    // its Provider is going away meanwhile.
    const held = providers.find((p) => !isDeleting(p.metadata) && p.status?.reservations?.some((r) => r.uid === uid));
    let chosen: string;
    let why: string;
    if (held) {
      chosen = held.metadata.name;
      why = `Provider ${chosen}: its place was reserved by an earlier pass`;
    } else {
      const decision = chooseProvider(
        providers.map((p) => this.candidate(p, mr)),
        mr.spec.providerSelector!,
        this.o.operator?.name,
      );
      if (decision.provider === undefined) return this.unschedulable(mr, cached, decision, signal);
      chosen = decision.provider;
      why = decision.message;
    }
    const providerKey = keyOf({ namespace, name: chosen });
    // Counted at once, before any await, so the other workers' choices spread around it.
    this.o.usage.assume(uid, providerKey);
    let placed: MR;
    try {
      if (!held) {
        const reserved = await this.o.reservations.reserve(providerKey, { ...mr, kind: this.o.type.kind }, signal);
        // Another scheduler took the last place first, or the Provider is going: choose again.
        if (reserved !== 'reserved') {
          this.o.usage.forget(uid);
          return requeue();
        }
      }
      placed = await this.o.client.update<MR>(this.o.type, { ...mr, spec: { ...mr.spec, providerRef: { name: chosen } } }, signal);
    } catch (err) {
      this.o.usage.forget(uid);
      throw err;
    }
    // The decision is made and kept from here on (the assumption stays until the cache shows it):
    // say so before anything else can fail.
    this.record(mr, 'normal', Reasons.Scheduled, `Scheduled on ${why}`);
    return this.scheduled({ ...placed, status: mr.status }, cached, chosen, signal);
  }

  private async scheduled(mr: MR, cached: ReadonlyDeep<MR>, provider: string, signal: AbortSignal): Promise<Result> {
    await this.writeScheduled(
      mr,
      cached,
      { type: 'Scheduled', status: 'True', reason: Reasons.Scheduled, message: `on Provider ${provider}` },
      signal,
    );
    return done();
  }

  private async unschedulable(
    mr: MR,
    cached: ReadonlyDeep<MR>,
    decision: Exclude<Decision, { provider: string }>,
    signal: AbortSignal,
  ): Promise<Result> {
    const { counts } = decision;
    const message = `${decision.message} (providers ${counts.providers}, matching ${counts.matching}, usable ${counts.usable}, with room ${counts.withRoom})`;
    // An Event when the verdict changes, not at every recheck: a waiting resource costs no writes.
    if (await this.writeScheduled(mr, cached, { type: 'Scheduled', status: 'False', reason: decision.reason, message }, signal)) {
      this.record(mr, 'warning', decision.reason, message);
    }
    // Provider changes and freed places wake it sooner (see setup.ts).
    return requeueAfter(this.o.recheckMs);
  }

  /** The Provider as the choice sees it: its labels, whether it can be used now and for these namespaces, its load. */
  private candidate(p: ReadonlyDeep<ProviderObject>, mr: MR): Candidate {
    const ready = getCondition(p.status?.conditions, 'Ready');
    const refused = this.o.refusedNamespace?.(p, mr);
    const unreachable = isDeleting(p.metadata)
      ? 'being deleted'
      : !ready
        ? 'not yet checked by provider-rook'
        : ready.status !== 'True'
          ? `its target cannot be used now (${ready.reason})`
          : undefined;
    let operator: Candidate['operator'];
    if (this.o.operator) {
      const { name, legacy } = this.o.operator;
      operator = p.status?.operators?.find((o) => o.name === name)?.present
        ? 'present'
        : operatorSettings(p, name, legacy).install
          ? 'installable'
          : 'missing';
    }
    return {
      name: p.metadata.name,
      labels: p.metadata.labels,
      unreachable,
      ...(refused ? { refuses: `it does not allow namespace ${refused} (see its spec.allowedNamespaces)` } : {}),
      operator,
      used: this.o.reservations.used(p),
      maxResources: p.spec.capacity?.maxResources,
    };
  }

  /** Writes the condition when it changed; says whether it did. */
  private async writeScheduled(
    mr: MR,
    cached: ReadonlyDeep<MR>,
    condition: Omit<Condition, 'lastTransitionTime'>,
    signal: AbortSignal,
  ): Promise<boolean> {
    const conditions = setCondition(mr.status?.conditions, { ...condition, observedGeneration: mr.metadata.generation });
    const status = { ...mr.status, conditions };
    if (sameJson(status, cached.status ?? {})) return false;
    await this.o.client.updateStatus(this.o.type, { ...mr, status }, signal);
    return true;
  }

  /** An Event on the resource and, so its app team sees it too, on its claim. */
  private record(mr: MR, type: 'normal' | 'warning', reason: Reason, message: string): void {
    this.o.recorder[type](mr, reason, message);
    const claim = mr.spec.claimRef as { apiVersion?: string; kind?: string; name?: string; namespace?: string; uid?: string } | undefined;
    if (claim?.name && claim.namespace) {
      const target: EventTarget = {
        apiVersion: claim.apiVersion,
        kind: claim.kind,
        metadata: { name: claim.name, namespace: claim.namespace, uid: claim.uid },
      };
      this.o.recorder[type](target, reason, `${this.o.type.kind} ${mr.metadata.name}: ${message}`);
    }
  }
}
