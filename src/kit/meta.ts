// Well-known annotation keys and finalizer helpers (crossplane-runtime's names, so tools that know
// Crossplane read our objects correctly).
/** The metadata every object we read carries (a subset of ObjectMeta). */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[];
  generateName?: string;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

export const ANNOTATION_EXTERNAL_NAME = 'crossplane.io/external-name';
export const ANNOTATION_CREATE_PENDING = 'crossplane.io/external-create-pending';
export const ANNOTATION_CREATE_SUCCEEDED = 'crossplane.io/external-create-succeeded';
export const ANNOTATION_CREATE_FAILED = 'crossplane.io/external-create-failed';
export const ANNOTATION_PAUSED = 'crossplane.io/paused';
export const FINALIZER_MANAGED = 'finalizer.managedresource.crossplane.io';
export const CONNECTION_SECRET_TYPE = 'connection.crossplane.io/v1alpha1';

/** What these helpers read of an object's metadata: a cached (read-only) copy will do. */
interface Meta {
  readonly name: string;
  readonly annotations?: Readonly<Record<string, string>>;
  readonly finalizers?: readonly string[];
  readonly deletionTimestamp?: string;
}

export function hasFinalizer(meta: Meta, finalizer: string): boolean {
  return meta.finalizers?.includes(finalizer) ?? false;
}

export function withFinalizer(meta: Meta, finalizer: string): string[] {
  return hasFinalizer(meta, finalizer) ? [...meta.finalizers!] : [...(meta.finalizers ?? []), finalizer];
}

export function isDeleting(meta: Meta): boolean {
  return Boolean(meta.deletionTimestamp);
}

/** RFC 3339 at second precision, as Crossplane writes its create annotations. */
export function timestamp(now: Date): string {
  return now.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function externalNameOf(meta: Meta): string {
  return meta.annotations?.[ANNOTATION_EXTERNAL_NAME] || meta.name;
}

export function ownerReference(owner: { apiVersion?: string; kind?: string; metadata: { name: string; uid?: string } }, controller = true) {
  return {
    apiVersion: owner.apiVersion!,
    kind: owner.kind!,
    name: owner.metadata.name,
    uid: owner.metadata.uid!,
    controller,
    blockOwnerDeletion: true,
  };
}
