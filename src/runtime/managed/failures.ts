// Each step of a managed resource's pass that can fail: the reason of the Warning Event it records,
// and how its message begins (the Synced condition's reason is the error's own). One table, so a
// step reads the same wherever it fails; a step throws StepFailed, and the pass reports it once.
import type { setCondition } from '../../kit/conditions.ts';
import { Reasons, type Reason } from '../reasons.ts';

export const Failures = {
  connect: { event: Reasons.CannotConnectToProvider, prefix: 'connect failed' },
  observe: { event: Reasons.CannotObserveExternalResource, prefix: 'observe failed' },
  withhold: { event: Reasons.CannotPublishConnectionDetails, prefix: 'cannot withhold the endpoint' },
  publish: { event: Reasons.CannotPublishConnectionDetails, prefix: 'cannot publish connection details' },
  addFinalizer: { event: Reasons.CannotUpdateManagedResource, prefix: 'cannot add finalizer' },
  updateManaged: { event: Reasons.CannotUpdateManagedResource, prefix: 'cannot update managed resource' },
  create: { event: Reasons.CannotCreateExternalResource, prefix: 'create failed' },
  recordCreate: { event: Reasons.CannotUpdateManagedResource, prefix: 'cannot record creation' },
  update: { event: Reasons.CannotUpdateExternalResource, prefix: 'update failed' },
  recordMade: { event: Reasons.CannotUpdateManagedResource, prefix: 'cannot record what was made again' },
  delete: { event: Reasons.CannotDeleteExternalResource, prefix: 'delete failed' },
  keep: { event: Reasons.CannotUpdateExternalResource, prefix: 'cannot mark what it made to be kept' },
} as const satisfies Record<string, { event: Reason; prefix: string }>;

export type FailedStep = keyof typeof Failures;

/** A step of the pass failed: thrown up to the reconciler, which reports it (ManagedPass.fail). */
export class StepFailed extends Error {
  readonly step: FailedStep;
  /** What Ready says meanwhile (creating, deleting, unproven); unset: Ready is left as it is. */
  readonly ready?: Parameters<typeof setCondition>[1];

  constructor(step: FailedStep, cause: unknown, ready?: Parameters<typeof setCondition>[1]) {
    super(`${Failures[step].prefix}: ${(cause as Error)?.message}`, { cause });
    [this.step, this.ready] = [step, ready];
  }
}
