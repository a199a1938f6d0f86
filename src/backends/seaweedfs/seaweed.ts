// What a SeaweedStore gives its Seaweed besides the spec (store.ts): a name that fits what the
// operator derives from it, its S3 gateway's guard identity, its admin server's credentials where a
// worker carries out lifecycle rules, and the NetworkPolicy that keeps its unauthenticated ports to
// its own servers and its operator.
import { createHash } from 'node:crypto';
import { NetworkPolicies } from '../../kit/kube/resources.ts';
import type { KindContext, TargetObject } from '../../runtime/native/kind.ts';
import { importRequested } from '../../runtime/ownership/marks.ts';
import type { SeaweedStore } from './api.ts';
import { seaweedfsOperator } from './operator.ts';

/** The S3 gateway's port (the operator's default, spec.s3.port). */
export const S3_PORT = 8333;
/** The managed kind, as ownership marks and derived credentials name it. */
export const STORE_RESOURCE = 'seaweedstores.seaweedfs.crossplane.io';
export const storeOwnerOf = (mr: SeaweedStore): string => `${STORE_RESOURCE}/${mr.metadata.uid}`;
const ownerOf = storeOwnerOf;

/**
 * The longest Seaweed name the operator's objects fit: it names StatefulSets `<name>-volume` and
 * `<name>-master`, whose pods' controller-revision-hash label (`<StatefulSet>-<hash of up to 10>`)
 * must fit 63 characters, and headless Services `<name>-volume-peer` (63 at most, as every Service).
 */
const SEAWEED_NAME_MAX = 45;

/**
 * The Seaweed's name for a store that records none: its own, when it fits the operator's derived
 * names (at most 45 characters, a letter first, as Service names need); else its start, and a digest
 * of the whole that keeps two long names apart. A claim's store has a name of up to 52 characters.
 */
export function seaweedNameFor(name: string): string {
  if (name.length <= SEAWEED_NAME_MAX && /^[a-z]/.test(name)) return name;
  const digest = createHash('sha256').update(name).digest('hex').slice(0, 8);
  const start = `${/^[a-z]/.test(name) ? '' : 's-'}${name}`.slice(0, SEAWEED_NAME_MAX - digest.length - 1).replace(/-+$/, '');
  return `${start}-${digest}`;
}

/**
 * The S3 gateway's identities file (spec.s3.configSecret, its `-config`), holding one identity that
 * may do nothing. SeaweedFS turns authentication on only while it knows an identity: a gateway with
 * none answers every anonymous request as an admin, its IAM API included. The operator's users come
 * later and may all go (a shared store between claims), so this one is there from the start and
 * stays. Its keys are derived (the same on every pass) and given to no one.
 */
export function s3Config(mr: SeaweedStore, name: string, ctx: KindContext): TargetObject {
  const purpose = `seaweed-s3-guard/${ownerOf(mr)}`;
  const guard = {
    name: 'provider-rook-auth-guard',
    credentials: [{ accessKey: ctx.credential(`${purpose}/access-key`, 20), secretKey: ctx.credential(`${purpose}/secret-key`, 40) }],
    actions: [],
  };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: s3ConfigName(name), namespace: mr.spec.targetNamespace },
    type: 'Opaque',
    data: { [S3_CONFIG_KEY]: Buffer.from(JSON.stringify({ identities: [guard] })).toString('base64') },
  };
}
export const s3ConfigName = (name: string): string => `${name.slice(0, 253 - '-s3-config'.length)}-s3-config`;
export const S3_CONFIG_KEY = 'config.json';

/**
 * SeaweedFS carries out a bucket's lifecycle rules (expiration, non-current versions) in its admin
 * server's workers, job `s3_lifecycle`: a store gets an admin and a worker of that job when its own
 * bucket has rules, or when it has no bucket of its own (a shared store, whose buckets may). An
 * imported Seaweed is its owner's to say.
 */
export const runsLifecycle = (mr: SeaweedStore): boolean =>
  !importRequested(mr) && (!mr.spec.bucket || Boolean(mr.spec.bucket.features?.lifecycle));
export const LIFECYCLE_JOB = 's3_lifecycle';

/**
 * The admin server's credentials (spec.admin.credentialsSecret, the env its UI authenticates with):
 * without them, whoever reaches its port drives the cluster. Derived (the same on every pass), given
 * to no one: provider-rook does not use the UI.
 */
export function adminCredentials(mr: SeaweedStore, name: string, ctx: KindContext): TargetObject {
  const password = ctx.credential(`seaweed-admin/${ownerOf(mr)}/password`, 40);
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: adminSecretName(name), namespace: mr.spec.targetNamespace },
    type: 'Opaque',
    data: { adminUser: Buffer.from('provider-rook').toString('base64'), adminPassword: Buffer.from(password).toString('base64') },
  };
}
export const adminSecretName = (name: string): string => `${name.slice(0, 253 - '-admin-credentials'.length)}-admin-credentials`;

/**
 * Who may reach the Seaweed's servers. SeaweedFS's own ports (master, volume servers, filer, and
 * their gRPC, which `weed shell` and the IAM service use) take no credentials: anyone who reaches
 * them reads, writes and deletes every bucket, and makes users. Only the store's own servers and its
 * operator may (the operator drives buckets and users through them); the S3 gateway, which checks
 * every request's keys, anyone. Enforced where the cluster's network plugin enforces NetworkPolicy.
 */
export function isolation(mr: SeaweedStore, name: string, ctx: KindContext): TargetObject {
  const servers = { matchLabels: { 'app.kubernetes.io/name': 'seaweedfs', 'app.kubernetes.io/instance': name } };
  const operator = ctx.operatorNamespace ?? seaweedfsOperator.defaultNamespace;
  return {
    apiVersion: NetworkPolicies.apiVersion,
    kind: NetworkPolicies.kind,
    metadata: { name: isolationName(name), namespace: mr.spec.targetNamespace },
    spec: {
      podSelector: servers,
      policyTypes: ['Ingress'],
      ingress: [
        { from: [{ podSelector: servers }] },
        { from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': operator } } }] },
        { ports: [{ protocol: 'TCP', port: S3_PORT }] },
      ],
    },
  };
}
export const isolationName = (name: string): string => `${name.slice(0, 253 - '-ingress'.length)}-ingress`;
