// What observing a target object reads and records, apart from the client that does it (external.ts):
// whether a resource asked to import, its external name checked before it reaches a request, and
// what the kind read of its object, in the resource's status.
import { ReasonedError, setCondition } from '../../kit/conditions.ts';
import { ANNOTATION_CREATE_PENDING, ANNOTATION_CREATE_SUCCEEDED, ANNOTATION_EXTERNAL_NAME, externalNameOf } from '../../kit/meta.ts';
import { setBindable, type ManagedResource } from '../managed/types.ts';
import { Reasons, Ready } from '../reasons.ts';
import type { Client } from '../../kit/kube/client.ts';
import { isNotFound } from '../../kit/kube/errors.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import { describeRef, diffFields, type Inspection, type ObjectRef, type TargetObject } from './kind.ts';
import { ANNOTATION_TARGET_UID, type Owner, type OwnershipMarks, type Relation, type Vouchers } from '../ownership/marks.ts';

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
      ...(inspection.ready
        ? Ready.available()
        : { ...Ready.unavailable(inspection.message), ...(inspection.reason ? { reason: inspection.reason } : {}) }),
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

/** Identity is fixed at creation: a resource whose object now lives under another name or namespace moved. */
export async function refuseMovedIdentity(
  client: Client,
  marks: OwnershipMarks,
  target: ResourceType,
  mr: ManagedResource,
  owner: Owner,
  ref: ObjectRef,
  signal: AbortSignal,
): Promise<void> {
  // Only a resource that was created or imported has an object to find (and it costs a list).
  if (!mr.metadata.annotations?.[ANNOTATION_EXTERNAL_NAME]) return;
  // A 404 means the kind is not served (yet): then nothing of it exists anywhere.
  const { items } = await client.list<TargetObject>(target, { labelSelector: marks.selectorFor(owner), signal }).catch((err: unknown) => {
    if (isNotFound(err)) return { items: [] };
    throw err;
  });
  // Only a signed object counts: copied labels must not hold a resource back.
  const elsewhere = items.find(
    (o) => (o.metadata.name !== ref.name || (o.metadata.namespace ?? undefined) !== ref.namespace) && marks.signed(target, o),
  );
  if (!elsewhere) return;
  throw new ReasonedError(
    Reasons.IdentityChanged,
    `this resource's object in the target cluster is ${describeRef({ ...ref, name: elsewhere.metadata.name, namespace: elsewhere.metadata.namespace })}, ` +
      `but its external-name and target namespace now say ${describeRef(ref)}. These cannot change after creation: set them back, ` +
      'or delete this resource and create a new one',
  );
}

/** Adopting a store must not change what its operator would never apply to it (`fixed`, the kind's fixedAtCreation). */
export function refuseUnappliableImport(desired: TargetObject, observed: TargetObject, fixed: string[] = []): void {
  const changed = diffFields(withoutMetadata(desired), withoutMetadata(observed)).filter((p) =>
    fixed.some((f) => p === f || p.startsWith(`${f}.`) || p.startsWith(`${f}[`)),
  );
  if (changed.length === 0) return;
  const ref = {
    type: { kind: observed.kind ?? 'object' } as ResourceType,
    name: observed.metadata.name,
    namespace: observed.metadata.namespace,
  };
  throw new ReasonedError(
    Reasons.ImportMismatch,
    `cannot adopt ${describeRef(ref)}: ${changed.join(', ')} differ from this resource's spec, ` +
      'and the operator applies those only when it creates a store. Make the spec match the existing object, or leave those fields unset to take them from it',
  );
}

/**
 * The resource names its proven object by uid, so a restore of it from a backup can prove it
 * again. Not while its marks are unsigned (an upgrade): the record ends the legacy belief, which
 * its companions and namespace still need until the update signs them.
 */
export function uidRecord(
  marks: OwnershipMarks,
  mr: ManagedResource,
  type: ResourceType,
  observed: TargetObject,
  relation: Relation,
): { annotations?: Record<string, string> } {
  const proven = (relation === 'ours' || relation === 'restored') && marks.signed(type, observed);
  return proven && observed.metadata.uid && mr.metadata.annotations?.[ANNOTATION_TARGET_UID] !== observed.metadata.uid
    ? { annotations: { [ANNOTATION_TARGET_UID]: observed.metadata.uid } }
    : {};
}

/** What vouches for a resource's objects besides their signatures (see ownership.ts). */
export function vouchersOf(mr: ManagedResource): Vouchers {
  const annotations = mr.metadata.annotations ?? {};
  const recordedUid = annotations[ANNOTATION_TARGET_UID] || undefined;
  // Made or imported before marks were signed, and not proven since: its unsigned marks are believed once.
  const legacy = !recordedUid && (Boolean(annotations[ANNOTATION_CREATE_SUCCEEDED]) || importRequested(mr));
  // Pending newer than succeeded (second precision): a create began after the last one recorded its object.
  const pending = Date.parse(annotations[ANNOTATION_CREATE_PENDING] ?? '');
  const creating = pending > (Date.parse(annotations[ANNOTATION_CREATE_SUCCEEDED] ?? '') || 0);
  return { recordedUid, legacy, creating };
}
