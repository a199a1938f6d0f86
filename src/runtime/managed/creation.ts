// Crash-safe create: "pending" is recorded (with a resourceVersion check, so two writers cannot
// both proceed) before the external write, "succeeded"/"failed" after it. Our external names are
// deterministic and create is an idempotent apply, so an interrupted create is simply retried.
// The finalizer goes in with the pending mark: one write before anything is made, none when both are
// there already (a claim makes its resource with them).
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
import { isConflict } from '../../kit/kube/errors.ts';
import { Reasons, Ready, Synced } from '../reasons.ts';
import { requeue, type Result } from '../../kit/controller/result.ts';
import { StepFailed } from './failures.ts';
import type { ManagedPass } from './pass.ts';
import { RecordedError, type ExternalClient, type ManagedResource } from './types.ts';

/**
 * A managed resource as a claim makes it, for a create: with our finalizer and its create marked
 * pending, so createExternal needs no write of it before the create.
 */
export function madeToCreate<MR extends ManagedResource>(mr: MR, now: Date): MR {
  const annotations = { ...mr.metadata.annotations, [ANNOTATION_CREATE_PENDING]: timestamp(now) };
  return { ...mr, metadata: { ...mr.metadata, finalizers: withFinalizer(mr.metadata, FINALIZER_MANAGED), annotations } };
}

/** Creates the external resource, recording the attempt before and its outcome after. */
export async function createExternal<MR extends ManagedResource>(pass: ManagedPass<MR>, external: ExternalClient<MR>): Promise<Result> {
  const { kind } = pass;
  const { mr } = pass;
  // A create recorded as pending, never finished, behind our finalizer (a claim makes its resource
  // so, for this create; or a crash interrupted one) needs no write before it: names are deterministic
  // and creates never write over anything, so it is simply made (again).
  const marks = mr.metadata.annotations ?? {};
  const pending =
    hasFinalizer(mr.metadata, FINALIZER_MANAGED) &&
    Boolean(marks[ANNOTATION_CREATE_PENDING]) &&
    !marks[ANNOTATION_CREATE_SUCCEEDED] &&
    !marks[ANNOTATION_CREATE_FAILED];
  mr.metadata.annotations = { ...marks, ...(pending ? {} : { [ANNOTATION_CREATE_PENDING]: timestamp(kind.now()) }) };
  // An empty annotation names nothing (as externalNameOf reads it).
  mr.metadata.annotations[ANNOTATION_EXTERNAL_NAME] ||= external.externalName?.(mr) ?? mr.metadata.name;
  if (!pending) {
    mr.metadata.finalizers = withFinalizer(mr.metadata, FINALIZER_MANAGED);
    try {
      await pass.update();
    } catch (err) {
      throw new StepFailed('updateManaged', err, Ready.creating());
    }
  }
  let created;
  try {
    created = await external.create(pass.mr, pass.signal);
  } catch (thrown) {
    // What the create made before it failed is recorded with the failure.
    const [err, made] = thrown instanceof RecordedError ? [thrown.cause, thrown.annotations] : [thrown, {}];
    if (!isConflict(err)) kind.recorder.warning(mr, Reasons.CannotCreateExternalResource, `create failed: ${(err as Error).message}`);
    // The status below is written over the resource as recorded: its resourceVersion is the current one.
    await pass.annotate({ ...made, [ANNOTATION_CREATE_FAILED]: timestamp(kind.now()) }).catch(() => undefined);
    throw new StepFailed('create', err, Ready.creating());
  }
  try {
    // The external name too: with no write before the create, this is its first (a re-read keeps it).
    const named = { [ANNOTATION_EXTERNAL_NAME]: externalNameOf(mr.metadata), ...created.annotations };
    await pass.annotate({ ...named, [ANNOTATION_CREATE_SUCCEEDED]: timestamp(kind.now()) });
  } catch (err) {
    throw new StepFailed('recordCreate', err, Ready.creating());
  }
  try {
    await pass.publish(created.connectionDetails);
  } catch (err) {
    throw new StepFailed('publish', err, Ready.creating());
  }
  kind.recorder.normal(mr, Reasons.CreatedExternalResource, `Created ${externalNameOf(mr.metadata)} in the target cluster`);
  pass.conditions(Ready.creating(), Synced.success());
  await pass.writeStatusNow();
  return requeue();
}
