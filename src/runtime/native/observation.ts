// What observing a target object reads and records, apart from the client that does it (external.ts):
// whether a resource asked to import, its external name checked before it reaches a request, and
// what the kind read of its object, in the resource's status.
import { Ready, ReasonedError, setCondition } from '../conditions.ts';
import { ANNOTATION_CREATE_PENDING, ANNOTATION_EXTERNAL_NAME, externalNameOf } from '../meta.ts';
import { setBindable, type ManagedResource } from '../managed/types.ts';
import { Reasons } from '../reasons.ts';
import type { Inspection, TargetObject } from './kind.ts';

/** The user asked to adopt an existing object by naming it before we ever tried to create one. */
export function importRequested(mr: ManagedResource): boolean {
  const annotations = mr.metadata.annotations ?? {};
  return Boolean(annotations[ANNOTATION_EXTERNAL_NAME]) && !annotations[ANNOTATION_CREATE_PENDING];
}

const OBJECT_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The external name: the annotation has no schema, so it is checked before it becomes part of a request. */
export function checkedExternalName(mr: ManagedResource): string {
  const name = externalNameOf(mr.metadata);
  if (name.length > 253 || !OBJECT_NAME.test(name)) {
    throw new ReasonedError(
      Reasons.InvalidExternalName,
      `annotation ${ANNOTATION_EXTERNAL_NAME} must be a lower-case DNS-1123 subdomain (a-z, 0-9, "-", ".") of at most 253 characters; it has ${name.length} characters`,
    );
  }
  return name;
}

/** What the kind read of its object, in the resource's status: Ready, atProvider, and bindable once ready. */
export function recordInspection(mr: ManagedResource, inspection: Inspection): void {
  mr.status = {
    ...mr.status,
    conditions: setCondition(mr.status?.conditions, {
      ...(inspection.ready ? Ready.available() : Ready.unavailable(inspection.message)),
      observedGeneration: mr.metadata.generation,
    }),
    ...(inspection.atProvider ? { atProvider: inspection.atProvider } : {}),
  };
  if (inspection.ready) setBindable(mr);
}

export function withoutMetadata(obj: TargetObject): Record<string, unknown> {
  const { metadata: _m, apiVersion: _a, kind: _k, status: _s, ...rest } = obj;
  return rest;
}
