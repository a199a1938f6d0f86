// Crash-safe create: "pending" is recorded (with a resourceVersion check, so two writers cannot
// both proceed) before the external write, "succeeded"/"failed" after it. Our external names are
// deterministic and create is an idempotent apply, so an interrupted create is simply retried.
// The finalizer goes in with the pending mark: one write before anything is made, none when both are
// there already (a claim makes its resource with them).
import { type setCondition } from '../../kit/conditions.ts';
import type { EventRecorder } from '../../kit/controller/events.ts';
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import type { Client } from '../../kit/kube/client.ts';
import { isConflict } from '../../kit/kube/errors.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import {
  ANNOTATION_CREATE_FAILED,
  ANNOTATION_CREATE_PENDING,
  ANNOTATION_CREATE_SUCCEEDED,
  ANNOTATION_EXTERNAL_NAME,
  FINALIZER_MANAGED,
  externalNameOf,
  hasFinalizer,
  timestamp,
  withFinalizer,
} from '../../kit/meta.ts';
import { Reasons, Ready, Synced } from '../reasons.ts';
import { requeue, type Result } from '../../kit/controller/result.ts';
import type { FailedStep } from './failures.ts';
import { RecordedError, type ConnectionDetails, type ExternalClient, type ManagedResource } from './types.ts';

type Condition = Parameters<typeof setCondition>[1];

/** The pass a step failed in: the resource as it stands, the copy it was read as, and the pass's signal. */
export interface FailureAt<MR extends ManagedResource> {
  mr: MR;
  cached: ReadonlyDeep<MR>;
  signal: AbortSignal;
}

/** What the create step uses of the managed reconciler: its client and clock, its writes, and how a pass fails. */
export interface CreationSteps<MR extends ManagedResource> {
  client: Client;
  type: ResourceType;
  recorder: EventRecorder;
  now(): Date;
  /** Updates the resource; what comes back carries the status of `mr`. */
  update(mr: MR, signal: AbortSignal): Promise<MR>;
  /** Reports a failed step (event, Synced error, status write) and says when to try again. */
  fail(at: FailureAt<MR>, step: FailedStep, err: unknown, ready?: Condition): Promise<Result>;
  publish(mr: MR, details: ConnectionDetails | undefined, signal: AbortSignal): Promise<void>;
  setConditions(mr: MR, ...conds: Condition[]): void;
  /** Measures the first reports after a status write. */
  observeFirsts(mr: MR, cached: ReadonlyDeep<MR>): void;
}

/**
 * A managed resource as a claim makes it, for a create: with our finalizer and its create marked
 * pending, so createExternal needs no write of it before the create.
 */
export function madeToCreate<MR extends ManagedResource>(mr: MR, now: Date): MR {
  const annotations = { ...mr.metadata.annotations, [ANNOTATION_CREATE_PENDING]: timestamp(now) };
  return { ...mr, metadata: { ...mr.metadata, finalizers: withFinalizer(mr.metadata, FINALIZER_MANAGED), annotations } };
}

/** Creates the external resource, recording the attempt before and its outcome after. */
export async function createExternal<MR extends ManagedResource>(
  s: CreationSteps<MR>,
  mr: MR,
  cached: ReadonlyDeep<MR>,
  external: ExternalClient<MR>,
  signal: AbortSignal,
): Promise<Result> {
  // A create recorded as pending, never finished, behind our finalizer (a claim makes its resource
  // so, for this create; or a crash interrupted one) needs no write before it: names are deterministic
  // and creates never write over anything, so it is simply made (again).
  const marks = mr.metadata.annotations ?? {};
  const pending =
    hasFinalizer(mr.metadata, FINALIZER_MANAGED) &&
    Boolean(marks[ANNOTATION_CREATE_PENDING]) &&
    !marks[ANNOTATION_CREATE_SUCCEEDED] &&
    !marks[ANNOTATION_CREATE_FAILED];
  mr.metadata.annotations = { ...marks, ...(pending ? {} : { [ANNOTATION_CREATE_PENDING]: timestamp(s.now()) }) };
  mr.metadata.annotations[ANNOTATION_EXTERNAL_NAME] ??= mr.metadata.name;
  if (!pending) {
    mr.metadata.finalizers = withFinalizer(mr.metadata, FINALIZER_MANAGED);
    try {
      mr = await s.update(mr, signal);
    } catch (err) {
      return s.fail({ mr, cached, signal }, 'updateManaged', err, Ready.creating());
    }
  }
  let created;
  try {
    created = await external.create(mr, signal);
  } catch (thrown) {
    // What the create made before it failed is recorded with the failure.
    const [err, made] = thrown instanceof RecordedError ? [thrown.cause, thrown.annotations] : [thrown, {}];
    if (!isConflict(err)) s.recorder.warning(mr, Reasons.CannotCreateExternalResource, `create failed: ${(err as Error).message}`);
    // The status below is written over the object recordCreate returns: its resourceVersion is the current one.
    mr = (await recordCreate(s, mr, ANNOTATION_CREATE_FAILED, signal, made).catch(() => undefined)) ?? mr;
    return s.fail({ mr, cached, signal }, 'create', err, Ready.creating());
  }
  try {
    // The external name too: with no write before the create, this is its first (a re-read keeps it).
    const named = { [ANNOTATION_EXTERNAL_NAME]: externalNameOf(mr.metadata), ...created.annotations };
    mr = await recordCreate(s, mr, ANNOTATION_CREATE_SUCCEEDED, signal, named);
  } catch (err) {
    return s.fail({ mr, cached, signal }, 'recordCreate', err, Ready.creating());
  }
  try {
    await s.publish(mr, created.connectionDetails, signal);
  } catch (err) {
    return s.fail({ mr, cached, signal }, 'publish', err, Ready.creating());
  }
  s.recorder.normal(mr, Reasons.CreatedExternalResource, `Created ${externalNameOf(mr.metadata)} in the target cluster`);
  s.setConditions(mr, Ready.creating(), Synced.success());
  await s.client.updateStatus(s.type, mr, signal);
  s.observeFirsts(mr, cached);
  return requeue();
}

/** Persists a create-outcome annotation, re-reading and retrying on conflicts. */
async function recordCreate<MR extends ManagedResource>(
  s: CreationSteps<MR>,
  mr: MR,
  annotation: string,
  signal: AbortSignal,
  more: Record<string, string> = {},
): Promise<MR> {
  const value = timestamp(s.now());
  let current = mr;
  for (let attempt = 0; ; attempt++) {
    current.metadata.annotations = { ...current.metadata.annotations, ...more, [annotation]: value };
    try {
      return await s.update(current, signal);
    } catch (err) {
      if (!isConflict(err) || attempt >= 4) throw err;
      const fresh = await s.client.get<MR>(s.type, { namespace: mr.metadata.namespace, name: mr.metadata.name }, signal);
      if (!fresh) throw err;
      current = { ...fresh, status: mr.status };
    }
  }
}
