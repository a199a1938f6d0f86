// What a claim delivers where its app runs, decided without any I/O: the consumers it asks for, the
// consumer cluster's consent, and the connection details as an app in that cluster needs them (the
// store's Service name in the store's own cluster, the class's exposure anywhere else).
import { createHash } from 'node:crypto';
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import type { KubeObjectLike } from '../../kit/kube/client.ts';
import { ReasonedError } from '../../kit/conditions.ts';
import type { ProviderObject } from '../providers/provider.ts';
import { Reasons, type Reason, type Reported } from '../reasons.ts';
import type { Claim } from '../claims/claim.ts';

/** One entry of a claim's spec.consumers. */
export interface Consumer {
  providerRef: { name: string; namespace: string };
  namespace: string;
  secretName?: string;
}

/** One entry of a claim's status.deliveries. */
export interface Delivery {
  /** <provider namespace>/<provider>/<namespace> */
  to: string;
  secretName: string;
  delivered: boolean;
  endpoint?: 'ClusterDNS' | 'Exposed';
  removing?: boolean;
  /** A digest of the access key id the Secret there holds (hold.ts): what rotation waits for. */
  keys?: string;
  reason?: Reason | Reported;
  message?: string;
}

export interface DeliveringClaim extends Claim {
  spec?: Claim['spec'] & { consumers?: Consumer[] };
  status?: Claim['status'] & { deliveries?: Delivery[] };
}

/** How apps in other clusters than the store's reach it, as its class says. */
export interface Exposure {
  url: string;
  caBundle?: string;
  addressingStyle?: 'path' | 'virtual';
}

/** A consumer, resolved: where its Secret goes, and the field that asked for it. */
export interface Place {
  to: string;
  provider: { namespace: string; name: string };
  namespace: string;
  secretName: string;
  field: string;
}

export const placeKey = (p: { to: string; secretName: string }): string => `${p.to}/${p.secretName}`;

/** The places a claim asks to deliver to (none while it is being deleted). */
export function wantedPlaces(claim: DeliveringClaim): Place[] {
  if (claim.metadata.deletionTimestamp) return [];
  const own = claim.spec?.writeConnectionSecretToRef?.name;
  const places = new Map<string, Place>();
  (claim.spec?.consumers ?? []).forEach((c, i) => {
    const secretName = c.secretName ?? own;
    if (!secretName) return; // refused at admission
    const provider = { namespace: c.providerRef.namespace, name: c.providerRef.name };
    const to = `${provider.namespace}/${provider.name}/${c.namespace}`;
    // The same place named twice is one Secret, delivered once.
    if (!places.has(placeKey({ to, secretName })))
      places.set(placeKey({ to, secretName }), { to, provider, namespace: c.namespace, secretName, field: `spec.consumers[${i}]` });
  });
  return [...places.values()];
}

/** The place a recorded delivery names. */
export function placeOf(d: Delivery): Place | undefined {
  const [namespace, name, ns] = d.to.split('/');
  if (!namespace || !name || !ns) return undefined;
  return { to: d.to, provider: { namespace, name }, namespace: ns, secretName: d.secretName, field: 'status.deliveries' };
}

/** Refuses a place its cluster's Provider does not let the claim's namespace deliver to. */
export function refuseUnlessConsented(provider: ReadonlyDeep<ProviderObject>, claimNamespace: string, place: Place): void {
  const entry = provider.spec.consumers?.find((c) => c.claimNamespace === claimNamespace);
  if (entry?.namespaces.includes(place.namespace)) return;
  const who = `Provider ${place.provider.namespace}/${place.provider.name}`;
  throw new ReasonedError(
    Reasons.ConsumerNotAllowed,
    `${place.field}: ${who} does not let claims of namespace ${claimNamespace} deliver into its namespace ${place.namespace} ` +
      `(its spec.consumers ${entry ? `allows ${entry.namespaces.join(', ')}` : `names no entry for ${claimNamespace}`})`,
  );
}

/** The keys that say where the store is, replaced for a consumer in another cluster. */
const ENDPOINT_KEYS = ['endpoint', 'AWS_ENDPOINT_URL', 'BUCKET_HOST', 'BUCKET_PORT'];
const b64 = (text: string): string => Buffer.from(text).toString('base64');

/**
 * The data of a consumer's Secret, base64 as in the claim's own: the same keys, and where the store
 * is as it resolves from the consumer's cluster. A copy that withholds the endpoint (the store's
 * Service is not proven) withholds it everywhere: an exposure leads to that same Service.
 */
export function dataFor(source: Record<string, string>, place: 'ClusterDNS' | 'Exposed', exposure?: Exposure): Record<string, string> {
  const data = { ...source };
  const withheld = !('endpoint' in source);
  if (place === 'ClusterDNS' || withheld) return { ...data, AWS_S3_ADDRESSING_STYLE: b64('path') };
  const url = new URL(exposure!.url);
  const endpoint = `${url.protocol}//${url.host}`;
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  for (const k of ENDPOINT_KEYS) delete data[k];
  Object.assign(data, {
    endpoint: b64(endpoint),
    AWS_ENDPOINT_URL: b64(endpoint),
    BUCKET_HOST: b64(url.hostname),
    BUCKET_PORT: b64(port),
    AWS_S3_ADDRESSING_STYLE: b64(exposure!.addressingStyle ?? 'path'),
    ...(exposure!.caBundle ? { 'ca.crt': b64(exposure!.caBundle) } : {}),
  });
  return data;
}

/**
 * A Secret of a consumer cluster as provider-rook's watch there holds it: its data as a digest.
 * Whoever may make Secrets there can make ones that match the watch's labels, of any size; held
 * whole, they would fill provider-rook's memory.
 */
export type HeldSecret = KubeObjectLike & { data?: Record<string, string>; dataDigest?: string };

/** A digest of a Secret's data, the same for the same keys and values in any order. */
export function dataDigest(data: Readonly<Record<string, string>> | undefined): string {
  const entries = Object.entries(data ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256').update(JSON.stringify(entries)).digest('base64url');
}

/** What the watch keeps of a Secret: all but its data, and the data's digest. */
export function heldAsDigest(obj: KubeObjectLike): KubeObjectLike {
  const { data, ...rest } = obj as HeldSecret;
  return { ...rest, dataDigest: dataDigest(data) } as KubeObjectLike;
}

/** The digest of a Secret's data, held by the watch or read whole. */
export const digestOf = (s: ReadonlyDeep<HeldSecret>): string => s.dataDigest ?? dataDigest(s.data);
