// What the claim machinery refuses, one builder each, so a claim reads the same words whichever
// reconciler finds the problem (its kind's controller, or the one for claims no kind serves).
import type { ObjectKey } from '../../kit/kube/object-key.ts';
import { ReasonedError } from '../../kit/conditions.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import { ANNOTATION_EXTERNAL_NAME } from '../../kit/meta.ts';
import { Reasons } from '../reasons.ts';
import type { ObjectReference, PortableClass } from './claim.ts';

/** Missing or another's: one answer, so an app team learns nothing of resources not its own. */
export function resourceNotReserved(kind: string, ref: ObjectReference): ReasonedError {
  return new ReasonedError(
    Reasons.ManagedResourceNotFound,
    `spec.resourceRef names ${kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}, ` +
      'which does not exist or is not reserved for this claim: a platform team reserves one by setting its spec.claimRef to this claim',
  );
}

// Adopting an existing external resource can hand over someone else's data and keys: that is a
// platform team's decision, made on a managed resource, never an app team's through a claim.
export function importNotAllowed(kind: string): ReasonedError {
  return new ReasonedError(
    Reasons.ImportNotAllowed,
    `a claim cannot adopt an existing resource (annotation ${ANNOTATION_EXTERNAL_NAME}). Ask a platform team to create the managed ` +
      `${kind} with that annotation and a spec.claimRef naming this claim, then set this claim's spec.resourceRef to it`,
  );
}

/** The portable class `namespace/name` (of kind `portableKind`) does not exist. */
export function portableClassNotFound(portableKind: string, { namespace, name }: Required<ObjectKey>): ReasonedError {
  return new ReasonedError(Reasons.ClassNotFound, `${portableKind} ${namespace}/${name} does not exist`);
}

/** The class a portable class names does not exist. */
export function classNotFound(ref: NonNullable<PortableClass['classRef']>, portableKind: string, portableName: string): ReasonedError {
  return new ReasonedError(
    Reasons.ClassNotFound,
    `${ref.kind} ${ref.namespace}/${ref.name} (named by ${portableKind} ${portableName}) does not exist`,
  );
}

/** The portable class points at nothing, or at a kind none of `served` is. */
export function unsupportedClass(portableKind: string, portable: PortableClass, served: ResourceType[]): ReasonedError {
  const ref = portable.classRef;
  return new ReasonedError(
    Reasons.UnsupportedClass,
    `${portableKind} ${portable.metadata.namespace}/${portable.metadata.name} points at ${ref ? `${ref.apiVersion} ${ref.kind}` : 'nothing'}; this provider serves ` +
      served.map((t) => `${t.apiVersion} ${t.kind}`).join(', '),
  );
}
