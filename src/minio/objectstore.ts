// The MinIO part of provider-rook: how a managed ObjectStore maps onto a minio.rook.io ObjectStore in
// the target, when that store is ready, and what its users need to connect. Everything else is the
// generic runtime.
import { randomBytes } from 'node:crypto';
import type { ObjectStore } from '../apis/objectstore.ts';
import type { NativeKind } from '../runtime/native/external.ts';
import { Secrets, StatefulSets, type ResourceType } from '../runtime/kube/resources.ts';
import { secretText } from '../runtime/native/credentials.ts';
import { withoutNulls } from '../runtime/json.ts';
import { rookMinioOperator } from './operator.ts';

export const RookObjectStores: ResourceType = { apiVersion: 'minio.rook.io/v1alpha1', kind: 'ObjectStore', plural: 'objectstores', namespaced: true };

const MINIO_PORT = 9000;

function credentialsRef(mr: ObjectStore, name: string): { name: string; namespace: string } {
  const creds = mr.spec.forProvider.credentials;
  return { name: creds?.name ?? `${name}-access-keys`, namespace: creds?.namespace ?? mr.spec.targetNamespace };
}

/** Random keys from an alphabet MinIO accepts everywhere (no symbols to escape). */
function randomKey(length: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = randomBytes(length * 2);
  let out = '';
  // Rejection sampling keeps every character equally likely.
  for (const b of bytes) if (b < 248 && out.length < length) out += alphabet[b % 62];
  return out.length === length ? out : randomKey(length);
}

export function endpointOf(name: string, namespace: string, clusterDomain?: string): string {
  return `http://${name}.${namespace}.svc.${clusterDomain || 'cluster.local'}:${MINIO_PORT}`;
}

export const minioObjectStore: NativeKind<ObjectStore> = {
  resource: 'objectstores.minio.rook.crossplane.io',
  target: RookObjectStores,
  operator: rookMinioOperator,

  desired(mr, name) {
    const { scope, annotations, placement, clusterDomain } = mr.spec.forProvider;
    return {
      apiVersion: RookObjectStores.apiVersion,
      kind: RookObjectStores.kind,
      metadata: { name, namespace: mr.spec.targetNamespace },
      spec: {
        scope,
        ...(annotations ? { annotations } : {}),
        // Rook's sample leaves placement keys empty ("tolerations:"), which means nothing to apply.
        ...(placement ? { placement: withoutNulls(placement) } : {}),
        // The operator reads the Secret from credentials.namespace, so it is always set.
        credentials: credentialsRef(mr, name),
        ...(clusterDomain ? { clusterDomain } : {}),
      },
    };
  },

  // The access-keys Secret we chose (or the user's, on import) is recorded in the spec once known.
  lateInitialize(mr, observed) {
    const observedCreds = (observed.spec as { credentials?: { name: string; namespace?: string } } | undefined)?.credentials;
    if (mr.spec.forProvider.credentials || !observedCreds) return false;
    mr.spec.forProvider.credentials = { ...observedCreds };
    return true;
  },

  // The operator labels its StatefulSet app=minio, objectstore=<store>; readiness changes arrive through it.
  related: [{
    type: StatefulSets,
    labelSelector: 'app=minio',
    targetKey: (sts) => (sts.metadata.labels?.objectstore ? `${sts.metadata.namespace}/${sts.metadata.labels.objectstore}` : undefined),
  }],

  companions(mr, name) {
    const ref = credentialsRef(mr, name);
    return [{
      type: Secrets,
      ...ref,
      build: () => ({
        apiVersion: 'v1', kind: 'Secret', metadata: { ...ref }, type: 'Opaque',
        data: { username: Buffer.from(randomKey(20)).toString('base64'), password: Buffer.from(randomKey(40)).toString('base64') },
      }),
    }];
  },

  async inspect({ client, mr, observed, companions, signal }) {
    const { name, namespace } = observed.metadata;
    const endpoint = endpointOf(name, namespace!, mr.spec.forProvider.clusterDomain);
    const want = mr.spec.forProvider.scope.nodeCount;
    // The operator writes no status; its StatefulSet (same name, same namespace) tells readiness.
    const sts = await client.get<{ metadata: { name: string }; status?: { readyReplicas?: number } }>(StatefulSets, name, namespace, signal);
    const readyReplicas = sts?.status?.readyReplicas ?? 0;
    const keys = secretText((companions[0] as { data?: Record<string, string> } | undefined)?.data);
    const ready = sts !== undefined && readyReplicas >= want;
    const connectionDetails: Record<string, string> = { endpoint };
    if (keys.username && keys.password) Object.assign(connectionDetails, { username: keys.username, password: keys.password });
    return {
      ready,
      message: !sts ? `waiting for the MinIO operator to create StatefulSet ${namespace}/${name}` : ready ? undefined : `${readyReplicas}/${want} MinIO servers ready`,
      connectionDetails,
      atProvider: { namespace, name, endpoint, readyReplicas },
    };
  },
};
