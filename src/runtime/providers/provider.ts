// The Provider (kubernetes.crossplane.io): one target cluster and the Secret that reaches it. It
// belongs to no backend: every native kind uses it, and each kind's operator is configured in it by
// name. src/apis/provider.ts gives it a schema; this is the shape the runtime reads.
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import { ReasonedError, type Condition } from '../../kit/conditions.ts';
import { Reasons } from '../reasons.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import type { ObjectMeta } from '../../kit/meta.ts';

export const Providers: ResourceType = {
  apiVersion: 'kubernetes.crossplane.io/v1alpha2',
  kind: 'Provider',
  plural: 'providers',
  namespaced: true,
};

/** How one operator may be installed into the Provider's target. */
export interface OperatorSettings {
  /** The operator, e.g. "rook-minio" (OperatorBundle.name). */
  name: string;
  install?: boolean;
  image?: string;
  /** The Provider's explicit yes to an image other than the bundle's. */
  imageOverride?: boolean;
  namespace?: string;
  /** The version to install, or to upgrade (or go back) to; the bundle's newest when unset. */
  version?: string;
  /** Upgrade it although someone else installed it. */
  adopt?: boolean;
  /** Install it although someone else's CRD of it is there, without its Deployment where this one would go. */
  installBesideOthers?: boolean;
}

export interface OperatorStatus {
  name: string;
  present: boolean;
  installedBy?: 'provider-rook' | 'other';
  missing?: string[];
  /** The version its Deployment runs. */
  version?: string;
  /** A change of version under way or done: to which version, how it stands, and why. */
  upgrade?: { to: string; phase: 'Progressing' | 'Complete' | 'Failed' | 'Held'; reason?: string; message?: string };
}

export interface ProviderObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta & { name: string };
  spec: {
    credentialsSecretRef: { name: string };
    /** The target namespaces stores and operators may use (see allowsNamespace). */
    allowedNamespaces?: string[];
    operators?: OperatorSettings[];
    capacity?: { maxResources?: number };
    /** Which control-cluster namespaces' claims may deliver connection Secrets into which namespaces here. */
    consumers?: { claimNamespace: string; namespaces: string[] }[];
    /** v0.1's settings of its only operator (Rook MinIO); read as that operator's entry in operators. */
    operatorInstall?: { enabled?: boolean; image?: string; imageOverride?: boolean; namespace?: string };
  };
  status?: {
    conditions?: Condition[];
    users?: number;
    serverVersion?: string;
    operators?: OperatorStatus[];
    reservations?: Reservation[];
  };
}

/** A managed resource the scheduler placed on a Provider with a capacity. */
export interface Reservation {
  kind: string;
  name: string;
  uid: string;
}

/**
 * The settings for operator `name`: its entry in spec.operators, or for the operator that v0.1's
 * spec.operatorInstall configured (`legacy`), that field, so an upgrade changes nothing.
 */
export function operatorSettings(provider: ReadonlyDeep<ProviderObject>, name: string, legacy = false): Readonly<OperatorSettings> {
  const entry = provider.spec.operators?.find((o) => o.name === name);
  if (entry) return entry;
  const old = legacy ? provider.spec.operatorInstall : undefined;
  return old
    ? { name, install: old.enabled ?? false, image: old.image, imageOverride: old.imageOverride, namespace: old.namespace }
    : { name };
}

/** Where operatorSettings found operator `name`'s settings, for messages: "spec.operators[1]" or "spec.operatorInstall". */
export function operatorField(provider: ReadonlyDeep<ProviderObject>, name: string, legacy = false): string {
  const index = provider.spec.operators?.findIndex((o) => o.name === name) ?? -1;
  if (index >= 0) return `spec.operators[${index}]`;
  return legacy && provider.spec.operatorInstall ? 'spec.operatorInstall' : 'spec.operators';
}

/** Namespaces of a target that hold its own machinery: used only when the Provider lists them. */
export const SYSTEM_NAMESPACES: readonly string[] = ['kube-system', 'kube-public', 'kube-node-lease'];

/**
 * What no store may use unless the Provider lists it in spec.allowedNamespaces: the system's
 * namespaces, every operator's default namespace (`operatorDefaults`) and those the Provider puts one in.
 */
export function protectedNamespaces(provider: ReadonlyDeep<ProviderObject>, operatorDefaults: Iterable<string>): Set<string> {
  const configured = [...(provider.spec.operators ?? []), provider.spec.operatorInstall].map((o) => o?.namespace);
  return new Set([...SYSTEM_NAMESPACES, ...operatorDefaults, ...configured.filter((n): n is string => Boolean(n))]);
}

/** An entry of spec.allowedNamespaces that ends in `*` allows the names it begins, protected ones aside. */
function prefixAllows(allowed: readonly string[], namespace: string): boolean {
  return allowed.some((entry) => entry.endsWith('*') && namespace.startsWith(entry.slice(0, -1)));
}

/**
 * A namespace spec.allowedNamespaces names is always allowed, and one it allows by a prefix unless
 * it is protected (so `kube-*` never opens kube-system); with no list, any but the protected ones.
 */
export function allowsNamespace(provider: ReadonlyDeep<ProviderObject>, namespace: string, protect: ReadonlySet<string>): boolean {
  const allowed = provider.spec.allowedNamespaces;
  if (!allowed) return !protect.has(namespace);
  return allowed.includes(namespace) || (prefixAllows(allowed, namespace) && !protect.has(namespace));
}

/** The refusal of `namespace`, which `field` of the object put in the target. */
export function namespaceNotAllowed(provider: ReadonlyDeep<ProviderObject>, namespace: string, field: string): ReasonedError {
  const allowed = provider.spec.allowedNamespaces;
  const where = `Provider ${provider.metadata.namespace}/${provider.metadata.name}`;
  return new ReasonedError(
    Reasons.TargetNamespaceNotAllowed,
    `${field} is ${namespace}, a namespace ${where} does not allow: ` +
      (allowed && !allowed.includes(namespace) && !prefixAllows(allowed, namespace)
        ? `its spec.allowedNamespaces lists only ${allowed.join(', ') || 'none'}`
        : `it is a system or operator namespace, used only when the Provider's spec.allowedNamespaces lists it`),
  );
}

/** The fields of `obj` whose value is `value` (e.g. "spec.targetNamespace"), to name them in a message. */
export function fieldsHolding(obj: unknown, value: string, path = ''): string[] {
  if (obj === value) return [path];
  if (obj === null || typeof obj !== 'object') return [];
  return Object.entries(obj).flatMap(([k, v]) => fieldsHolding(v, value, Array.isArray(obj) ? `${path}[${k}]` : path ? `${path}.${k}` : k));
}
