// One pass of the managed reconciler over one resource: the resource as it stands (its copy, changed
// in place by each write), the cache's copy it was read as, and the pass's signal; with the writes a
// step makes of it in the control cluster (status, annotations, connection Secret) and how a step
// reports its failure. Creation, deletion and convergence each take the pass, not a bag of callbacks.
import { setCondition, getCondition } from '../../kit/conditions.ts';
import type { EventRecorder } from '../../kit/controller/events.ts';
import { sameJson } from '../../kit/json.ts';
import type { Client } from '../../kit/kube/client.ts';
import { isConflict } from '../../kit/kube/errors.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import type { Logger } from '../../kit/logger.ts';
import { requeue, requeueAfter, type Result, keyOf } from '../../kit/controller/result.ts';
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import { Synced, reasonOf, type Reason } from '../reasons.ts';
import type { ProgressWrites } from '../progress.ts';
import { Failures, type FailedStep } from './failures.ts';
import type { LifecycleMeasures } from './measures.ts';
import { publishSecret, unpublishSecret, withholdKeys, type ConnectionSecrets, type SecretsAccess } from './publisher.ts';
import type { ConnectionDetails, ManagedResource } from './types.ts';

/** The longest a resource that is not Ready waits for its next look (from caches: no request). */
const NOT_READY_POLL_MS = 30_000;

type NewCondition = Parameters<typeof setCondition>[1];

/** What every pass of one managed kind shares: where it writes, its clock, its polls, what it measures. */
export interface ManagedKind {
  type: ResourceType;
  client: Client;
  recorder: EventRecorder;
  log: Logger;
  /** Connection Secrets as cached: an unchanged one is checked without a read. */
  secrets?: ConnectionSecrets;
  now(): Date;
  pollIntervalMs: number;
  /** Each poll is moved by a random amount in [-jitter, +jitter] so resources do not poll in lockstep. */
  pollJitterMs: number;
  progress: ProgressWrites;
  measures: LifecycleMeasures;
}

export class ManagedPass<MR extends ManagedResource> {
  readonly kind: ManagedKind;
  /** This pass's copy: each write below updates it in place. */
  readonly mr: MR;
  /** The cache's copy: compared against, never changed. */
  readonly cached: ReadonlyDeep<MR>;
  readonly signal: AbortSignal;

  constructor(kind: ManagedKind, mr: MR, cached: ReadonlyDeep<MR>, signal: AbortSignal) {
    [this.kind, this.mr, this.cached, this.signal] = [kind, mr, cached, signal];
  }

  conditions(...conds: NewCondition[]): void {
    let list = this.mr.status?.conditions;
    for (const c of conds) list = setCondition(list, { ...c, observedGeneration: this.mr.metadata.generation }, this.kind.now());
    this.mr.status = { ...this.mr.status, conditions: list };
  }

  /** Whether its condition of `type` says `reason` already (what is said once is not said again). */
  says(type: string, reason: Reason): boolean {
    return getCondition(this.mr.status?.conditions, type)?.reason === reason;
  }

  /** Writes status only when it differs from what the cache holds; a wait (ms) when only progress changed. */
  async writeStatus(): Promise<number> {
    const { mr, cached, kind } = this;
    if (sameJson(mr.status ?? {}, cached.status ?? {})) return 0;
    const [key, now] = [keyOf(mr.metadata), kind.now().getTime()];
    // Only a new progress message: written when the window since our last write ends (progress.ts).
    const wait = kind.progress.wait(key, mr.status, cached.status, now);
    if (wait > 0) return wait;
    await this.writeStatusNow();
    kind.progress.wrote(key, now);
    return 0;
  }

  /** Writes status as it stands, compared with nothing. */
  async writeStatusNow(): Promise<void> {
    await this.kind.client.updateStatus(this.kind.type, this.mr, this.signal);
    this.kind.measures.written(this.mr, this.cached);
  }

  /** Reports a failed step (its Event, the Synced error, a status write) and says when to try again. */
  async fail(step: FailedStep, err: unknown, ready?: NewCondition): Promise<Result> {
    if (isConflict(err)) return requeue();
    const { event, prefix } = Failures[step];
    const message = `${prefix}: ${(err as Error).message}`;
    this.kind.recorder.warning(this.mr, event, message);
    this.conditions(...(ready ? [ready] : []), Synced.error(reasonOf(err), message));
    this.kind.log.debug('reconcile error', { resource: keyOf(this.mr.metadata), error: message });
    await this.writeStatus();
    return requeue();
  }

  /** The next speculative poll; sooner for a recheck the observation asked for, or a status write that waits. */
  poll(o: { recheckAfterMs?: number; deferredMs?: number; soonerUntilReady?: boolean } = {}): Result {
    const { pollIntervalMs, pollJitterMs } = this.kind;
    const jitter = (Math.random() * 2 - 1) * pollJitterMs;
    // A resource that is not Ready yet may wait on what no watch shows (a Gateway's address, a consumer
    // still holding old keys): it is looked at again within NOT_READY_POLL_MS, as provider-kubernetes does.
    const notReady = o.soonerUntilReady && getCondition(this.mr.status?.conditions, 'Ready')?.status !== 'True';
    const interval = notReady ? Math.min(pollIntervalMs, NOT_READY_POLL_MS) : pollIntervalMs + jitter;
    return requeueAfter(Math.min(interval, o.recheckAfterMs ?? Infinity, o.deferredMs || Infinity));
  }

  /** Updates the resource (its metadata and spec come back into this pass's copy; its status stays this pass's). */
  async update(): Promise<void> {
    const updated = await this.kind.client.update<MR>(this.kind.type, this.mr, this.signal);
    this.mr.metadata = updated.metadata;
    this.mr.spec = updated.spec;
  }

  /** Records annotations on the resource, re-read and tried again on conflicts (a concurrent writer). */
  async annotate(annotations: Record<string, string>): Promise<void> {
    const { mr, kind, signal } = this;
    for (let attempt = 0; ; attempt++) {
      mr.metadata.annotations = { ...mr.metadata.annotations, ...annotations };
      try {
        return await this.update();
      } catch (err) {
        if (!isConflict(err) || attempt >= 4) throw err;
        const fresh = await kind.client.get<MR>(kind.type, { namespace: mr.metadata.namespace, name: mr.metadata.name }, signal);
        if (!fresh) throw err;
        mr.metadata = fresh.metadata;
        mr.spec = fresh.spec;
      }
    }
  }

  async publish(details: ConnectionDetails | undefined): Promise<void> {
    const ref = this.mr.spec.writeConnectionSecretToRef;
    if (!ref || !details || Object.keys(details).length === 0) return;
    await publishSecret(this.secrets(), this.mr, { namespace: this.mr.metadata.namespace!, name: ref.name }, details);
  }

  async unpublish(): Promise<void> {
    const ref = this.mr.spec.writeConnectionSecretToRef;
    if (ref) await unpublishSecret(this.secrets(), this.mr, { namespace: this.mr.metadata.namespace!, name: ref.name });
  }

  /** Its connection Secret leads nowhere it cannot vouch for: these keys of it are taken out. */
  async withhold(keys: string[]): Promise<void> {
    const ref = this.mr.spec.writeConnectionSecretToRef;
    if (ref) await withholdKeys(this.secrets(), this.mr, { namespace: this.mr.metadata.namespace!, name: ref.name }, keys);
  }

  private secrets(): SecretsAccess {
    return { client: this.kind.client, cache: this.kind.secrets, signal: this.signal };
  }
}
