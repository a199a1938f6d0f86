// What crossplane-runtime measures of a managed resource's lifecycle, kept per resource while it
// lives: its first Synced and first Ready (once per process), the time from up to date to a repaired
// drift, and how long its deletion took.
import { getCondition } from '../../kit/conditions.ts';
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import { gvkLabel, managedMetrics } from '../managed-metrics.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import type { ManagedResource } from './types.ts';

export class LifecycleMeasures {
  private readonly gvk: { gvk: string };
  /** Resources first reconciled by this process and not Ready yet: their first readiness is measured. */
  private readonly newSinceStart = new Set<string>();
  /** When each resource (by uid) was last found up to date: what drift_seconds measures from. */
  private readonly lastUpToDate = new Map<string, number>();
  private readonly now: () => Date;

  constructor(type: ResourceType, now: () => Date) {
    this.gvk = { gvk: gvkLabel(type) };
    this.now = now;
  }

  /** Seconds from a timestamp of the resource (creation, deletion) until now. */
  since(at: string | undefined): number | undefined {
    const t = Date.parse(at ?? '');
    return Number.isNaN(t) ? undefined : Math.max(0, (this.now().getTime() - t) / 1000);
  }

  /** First reports after a status write, as crossplane-runtime measures them: the first Synced, the first Ready=True. */
  written(mr: ManagedResource, before: ReadonlyDeep<ManagedResource>): void {
    const was = (type: string) => getCondition(before.status?.conditions, type);
    const is = (type: string) => getCondition(mr.status?.conditions, type);
    const age = this.since(mr.metadata.creationTimestamp);
    if (age === undefined) return;
    const uid = mr.metadata.uid ?? '';
    if (!was('Synced') && is('Synced')) {
      managedMetrics.firstTimeToReconcile.observe(this.gvk, age);
      this.newSinceStart.add(uid);
    }
    if (is('Ready')?.status === 'True' && this.newSinceStart.delete(uid)) managedMetrics.firstTimeToReadiness.observe(this.gvk, age);
  }

  upToDate(mr: ManagedResource): void {
    this.lastUpToDate.set(mr.metadata.uid ?? '', this.now().getTime());
  }

  /** Once per drift: a repair that fails and retries is not measured again. */
  drifted(mr: ManagedResource): void {
    const uid = mr.metadata.uid ?? '';
    const upToDateAt = this.lastUpToDate.get(uid);
    if (upToDateAt !== undefined) managedMetrics.drift.observe(this.gvk, (this.now().getTime() - upToDateAt) / 1000);
    this.lastUpToDate.delete(uid);
  }

  /** Its finalizer went: the deletion is measured, and nothing is kept for it. */
  deleted(mr: ManagedResource): void {
    this.forget(mr.metadata.uid);
    const took = this.since(mr.metadata.deletionTimestamp);
    if (took !== undefined) managedMetrics.deletion.observe(this.gvk, took);
  }

  /** The resource is gone (whoever let it go): nothing is kept for it. */
  forget(uid: string | undefined): void {
    for (const kept of [this.lastUpToDate, this.newSinceStart]) kept.delete(uid ?? '');
  }
}
