// The Provider (kubernetes.crossplane.io): one target cluster and the Secret that reaches it. It
// belongs to no backend: every native kind uses it, and each kind's operator is configured in it by
// name. src/apis/provider.ts gives it a schema; this is the shape the runtime reads.
import type { Condition } from '../conditions.ts';
import type { ResourceType } from '../kube/resources.ts';
import type { ObjectMeta } from '../meta.ts';

export const Providers: ResourceType = { apiVersion: 'kubernetes.crossplane.io/v1alpha2', kind: 'Provider', plural: 'providers', namespaced: true };

/** How one operator may be installed into the Provider's target. */
export interface OperatorSettings {
  /** The operator, e.g. "rook-minio" (OperatorBundle.name). */
  name: string;
  install?: boolean;
  image?: string;
  namespace?: string;
}

export interface OperatorStatus {
  name: string;
  present: boolean;
  installedBy?: 'provider-rook' | 'other';
  missing?: string[];
}

export interface ProviderObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta & { name: string };
  spec: {
    credentialsSecretRef: { name: string };
    operators?: OperatorSettings[];
    capacity?: { maxResources?: number };
    /** v0.1's settings of its only operator (Rook MinIO); read as that operator's entry in operators. */
    operatorInstall?: { enabled?: boolean; image?: string; namespace?: string };
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
export function operatorSettings(provider: ProviderObject, name: string, legacy = false): OperatorSettings {
  const entry = provider.spec.operators?.find((o) => o.name === name);
  if (entry) return entry;
  const old = legacy ? provider.spec.operatorInstall : undefined;
  return old ? { name, install: old.enabled ?? false, image: old.image, namespace: old.namespace } : { name };
}
