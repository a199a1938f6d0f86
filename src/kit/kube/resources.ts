// The API types the runtime touches, with their REST paths: no discovery round-trips needed.
import { InvalidRequestError } from './errors.ts';
export interface ResourceType {
  apiVersion: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

/** An object of a type, by its key. */
export interface ObjectRef {
  type: ResourceType;
  name: string;
  namespace?: string;
}

/** An object as messages name it, e.g. "Secret ns/name". */
export const describeRef = (ref: ObjectRef): string => `${ref.type.kind} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}`;
/** An object's identity, for comparing refs. */
export const refKey = (ref: ObjectRef): string => `${ref.type.apiVersion}/${ref.type.kind}/${ref.namespace ?? ''}/${ref.name}`;

/** A type's API group, "" for the core group: version-free, as an object stays itself across served versions. */
export const groupOf = (type: ResourceType): string => (type.apiVersion.includes('/') ? type.apiVersion.split('/')[0]! : '');

export const Namespaces: ResourceType = { apiVersion: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false };
export const Secrets: ResourceType = { apiVersion: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
export const Events: ResourceType = { apiVersion: 'v1', kind: 'Event', plural: 'events', namespaced: true };
export const ServiceAccounts: ResourceType = { apiVersion: 'v1', kind: 'ServiceAccount', plural: 'serviceaccounts', namespaced: true };
export const StatefulSets: ResourceType = { apiVersion: 'apps/v1', kind: 'StatefulSet', plural: 'statefulsets', namespaced: true };
export const Jobs: ResourceType = { apiVersion: 'batch/v1', kind: 'Job', plural: 'jobs', namespaced: true };
export const Deployments: ResourceType = { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', namespaced: true };
export const CustomResourceDefinitions: ResourceType = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  plural: 'customresourcedefinitions',
  namespaced: false,
};
export const ClusterRoles: ResourceType = {
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRole',
  plural: 'clusterroles',
  namespaced: false,
};
export const ClusterRoleBindings: ResourceType = {
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRoleBinding',
  plural: 'clusterrolebindings',
  namespaced: false,
};
export const Leases: ResourceType = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', plural: 'leases', namespaced: true };

/** A name as one path segment: escaped, and never "." or ".." (which a URL resolves to another path). */
function segment(value: string): string {
  if (value === '.' || value === '..') throw new InvalidRequestError(`'${value}' is not an object or namespace name`);
  return encodeURIComponent(value);
}

export function resourcePath(type: ResourceType, namespace?: string, name?: string, subresource?: string): string {
  const base = type.apiVersion.includes('/') ? `/apis/${type.apiVersion}` : `/api/${type.apiVersion}`;
  const ns = type.namespaced && namespace ? `/namespaces/${segment(namespace)}` : '';
  const obj = name ? `/${segment(name)}` : '';
  return `${base}${ns}/${type.plural}${obj}${subresource && name ? `/${subresource}` : ''}`;
}
export const Pods: ResourceType = { apiVersion: 'v1', kind: 'Pod', plural: 'pods', namespaced: true };
export const Services: ResourceType = { apiVersion: 'v1', kind: 'Service', plural: 'services', namespaced: true };
export const NetworkPolicies: ResourceType = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  plural: 'networkpolicies',
  namespaced: true,
};
export const ConfigMaps: ResourceType = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
export const PersistentVolumeClaims: ResourceType = {
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  plural: 'persistentvolumeclaims',
  namespaced: true,
};
export const Roles: ResourceType = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', plural: 'roles', namespaced: true };
export const RoleBindings: ResourceType = {
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'RoleBinding',
  plural: 'rolebindings',
  namespaced: true,
};
export const StorageClasses: ResourceType = {
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  plural: 'storageclasses',
  namespaced: false,
};

const KNOWN = [
  Namespaces,
  Secrets,
  Events,
  ServiceAccounts,
  StatefulSets,
  Deployments,
  CustomResourceDefinitions,
  ClusterRoles,
  ClusterRoleBindings,
  Leases,
  Pods,
  Services,
  ConfigMaps,
  PersistentVolumeClaims,
  Roles,
  RoleBindings,
  StorageClasses,
];

/**
 * The type of an object read from a manifest: a known one, or else the regular plural of its kind,
 * namespaced when the manifest gives a namespace (what operator bundles hold is that regular).
 */
export function typeOfManifest(
  obj: { apiVersion?: string; kind?: string; metadata: { namespace?: string } },
  extra: ResourceType[] = [],
): ResourceType {
  const known = [...extra, ...KNOWN].find((t) => t.apiVersion === obj.apiVersion && t.kind === obj.kind);
  if (known) return known;
  if (!obj.apiVersion || !obj.kind) throw new InvalidRequestError('a manifest without apiVersion or kind');
  const lower = obj.kind.toLowerCase();
  const plural = lower.endsWith('s') ? `${lower}es` : lower.endsWith('y') ? `${lower.slice(0, -1)}ies` : `${lower}s`;
  return { apiVersion: obj.apiVersion, kind: obj.kind, plural, namespaced: Boolean(obj.metadata.namespace) };
}
