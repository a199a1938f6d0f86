// provider-rook's own metrics and crossplane-runtime's managed resource metrics, registered with the
// process's registry (kit/metrics.ts).
import { Gauge, Histogram, registry } from '../kit/metrics.ts';
import { getCondition, conditionIs } from '../kit/conditions.ts';

export const targetClients = new Gauge({
  name: 'provider_rook_target_clients',
  help: 'Cached clients for target clusters (one per credential set).',
  registers: [registry],
});

// crossplane-runtime's managed resource metrics, under its names and its one label, gvk
// ("group/version, Kind=Kind"), so its dashboards and alerts work here.
interface Conditioned {
  readonly metadata?: { readonly name?: string; readonly deletionTimestamp?: string };
  readonly status?: {
    readonly conditions?: readonly {
      readonly type: string;
      readonly status: string;
      readonly reason?: string;
      readonly lastTransitionTime?: string;
    }[];
  };
}

const managedKinds = new Set<{ gvk: string; list: () => Conditioned[] }>();

/** Counts a managed kind's cached resources at every scrape, until the returned function is called. */
export function observeManagedKind(gvk: string, list: () => Conditioned[]): () => void {
  const entry = { gvk, list };
  managedKinds.add(entry);
  return () => managedKinds.delete(entry);
}

const isTrue = (mr: Pick<Conditioned, 'status'>, type: string): boolean => conditionIs(mr.status?.conditions, type);

function managedGauge(name: string, help: string, counts: (mr: Conditioned) => boolean): void {
  new Gauge({
    name,
    help,
    labelNames: ['gvk'],
    registers: [registry],
    collect(this: Gauge) {
      this.reset();
      for (const { gvk, list } of managedKinds) this.inc({ gvk }, list().filter(counts).length);
    },
  });
}

managedGauge('crossplane_managed_resource_exists', 'The number of managed resources that exist.', () => true);
managedGauge('crossplane_managed_resource_ready', 'The number of managed resources in Ready=True state.', (mr) => isTrue(mr, 'Ready'));
managedGauge('crossplane_managed_resource_synced', 'The number of managed resources in Synced=True state.', (mr) => isTrue(mr, 'Synced'));

const DELIBERATE = new Set(['ReconcilePaused', 'CannotUseInvalidManagementPolicy']);

/** How long a resource must wait before the waiting gauge counts it (5 minutes; tests shorten it). */
let waitingAfterMs = 300_000;
export function countWaitingAfter(ms: number): void {
  waitingAfterMs = ms;
}

/**
 * What a resource has been waiting on for longer than the threshold, or undefined: a Synced=False
 * (an unreachable target, a missing operator, a finalizer of someone else's), a Ready=False (an
 * operator that never makes the store ready), a deletion that does not end. The condition says
 * since when (its lastTransitionTime).
 */
export function waitingOn(mr: Conditioned, now: number, afterMs = waitingAfterMs): string | undefined {
  const long = (at: string | undefined) => now - (Date.parse(at ?? '') || now) >= afterMs;
  for (const type of ['Synced', 'Ready']) {
    const c = getCondition(mr.status?.conditions, type);
    // A state someone chose (paused, policies to fix) waits on no fault: not counted.
    if (c?.status === 'False' && !DELIBERATE.has(c.reason ?? '') && long(c.lastTransitionTime)) return c.reason ?? type;
  }
  return mr.metadata?.deletionTimestamp && long(mr.metadata.deletionTimestamp) ? 'Deleting' : undefined;
}

new Gauge({
  name: 'provider_rook_managed_resource_waiting',
  help: 'Managed resources waiting for longer than 5 minutes, by what they wait on (the reason of their Synced or Ready condition, or Deleting).',
  labelNames: ['gvk', 'reason'],
  registers: [registry],
  collect(this: Gauge) {
    this.reset();
    const now = Date.now();
    for (const { gvk, list } of managedKinds)
      for (const mr of list()) {
        const reason = waitingOn(mr, now);
        if (reason) this.inc({ gvk, reason });
      }
  },
});

const SLOW_BUCKETS = [1, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600];
const managedHistogram = (name: string, help: string, buckets = SLOW_BUCKETS): Histogram =>
  new Histogram({ name, help, labelNames: ['gvk'], buckets, registers: [registry] });

export const managedMetrics = {
  firstTimeToReconcile: managedHistogram(
    'crossplane_managed_resource_first_time_to_reconcile_seconds',
    'The time it took for a managed resource to be detected by the controller.',
    [0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
  ),
  firstTimeToReadiness: managedHistogram(
    'crossplane_managed_resource_first_time_to_readiness_seconds',
    'The time it took for a managed resource to become ready first time after creation.',
  ),
  deletion: managedHistogram('crossplane_managed_resource_deletion_seconds', 'The time it took for a managed resource to be deleted.'),
  drift: managedHistogram(
    'crossplane_managed_resource_drift_seconds',
    'ALPHA: How long since the previous successful reconcile when a resource was found drifted.',
  ),
};

/** crossplane-runtime's gvk label value. */
export function gvkLabel(type: { apiVersion: string; kind: string }): string {
  return `${type.apiVersion}, Kind=${type.kind}`;
}

// Whether each Provider's target could be reached at its last check (its Ready condition).
const providers = new Set<() => { metadata: { name: string; namespace?: string }; status?: Conditioned['status'] }[]>();

/** Reports the Providers' reachability at every scrape, until the returned function is called. */
export function observeProviders(
  list: () => { metadata: { name: string; namespace?: string }; status?: Conditioned['status'] }[],
): () => void {
  providers.add(list);
  return () => providers.delete(list);
}

new Gauge({
  name: 'provider_rook_provider_ready',
  help: "1 when the Provider's target cluster answered at its last check (Ready=True), else 0.",
  labelNames: ['namespace', 'name'],
  registers: [registry],
  collect(this: Gauge) {
    this.reset();
    for (const list of providers)
      for (const p of list()) this.set({ namespace: p.metadata.namespace ?? '', name: p.metadata.name }, isTrue(p, 'Ready') ? 1 : 0);
  },
});
