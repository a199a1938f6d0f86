// What scenario 9 (chaos-backends.ts) checks of everything it made, once all is Bound: the stores'
// root keys (to look for in the control cluster), each bucket user's reach, each endpoint's proof.
import { backends } from '../../src/backends/index.ts';
import type { ResourceType } from '../../src/kit/kube/resources.ts';
import { Services } from '../../src/kit/kube/resources.ts';
import { ANNOTATION_COMPANION_UIDS, LABEL_OWNER_UID, entryUid } from '../../src/runtime/ownership/marks.ts';
import type { ChaosEnv, Conditioned } from './chaos.ts';

export type Obj = Conditioned & { spec?: Record<string, unknown>; data?: Record<string, string> };

/** The target kind of each managed kind: one object of it per managed resource. */
const TARGET_OF = new Map(backends.map((b) => [b.managed.kind, b.native.target.kind]));

/** One target object of its kind per managed resource: a store's, a Tenant's, an OBC's of its own kind; a MinIO bucket's is its user's Secret (its keys). */
export function targetObjectViolations(mrs: Obj[], held: { type: ResourceType; obj: Obj }[]): string[] {
  const violations: string[] = [];
  for (const mr of mrs) {
    const mine = held.filter(({ obj }) => obj.metadata.labels?.[LABEL_OWNER_UID] === mr.metadata.uid);
    const target = TARGET_OF.get(mr.kind!);
    const n = mine.filter(({ type, obj }) => type.kind === target && (type.kind !== 'Secret' || obj.data?.secretKey)).length;
    if (n !== 1) violations.push(`${mr.kind} ${mr.metadata.name} has ${n} target objects (a MinIO bucket: user Secrets) in target a`);
  }
  return violations;
}

/**
 * No store's root credentials in what the control cluster holds (`control`: its Secrets' values,
 * the status of managed resources and claims); and the check is not blind: the bucket users' keys,
 * which are meant to be there, are found in it.
 */
export function credentialViolations(
  held: { obj: Obj }[],
  control: string,
): { roots: Set<string>; userKeys: number; seen: number; violations: string[] } {
  const violations: string[] = [];
  const roots = rootCredentials(held.map((h) => h.obj));
  const leaked = [...roots].filter((r) => control.includes(r));
  if (roots.size === 0) violations.push('no root credentials found in target a: nothing was looked for');
  const userKeys = held
    .filter(({ obj }) => obj.kind === 'Secret' && obj.data?.secretKey)
    .map(({ obj }) => Buffer.from(obj.data!.secretKey!, 'base64').toString());
  const seen = userKeys.filter((k) => control.includes(k)).length;
  if (userKeys.length === 0 || seen === 0)
    violations.push(`the credentials check is blind: ${seen} of ${userKeys.length} bucket users' keys found`);
  if (leaked.length) violations.push(`${leaked.length} root credential values appear in the control cluster`);
  return { roots, userKeys: userKeys.length, seen, violations };
}

/** The root keys of the stores in the target: Rook MinIO's access-keys Secrets and the Tenants' config.env. */
function rootCredentials(objs: Obj[]): Set<string> {
  const out = new Set<string>();
  for (const o of objs) {
    if (o.kind !== 'Secret') continue;
    const data = Object.fromEntries(Object.entries(o.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
    if (o.metadata.name.endsWith('-access-keys')) for (const k of ['username', 'password']) if (data[k]) out.add(data[k]);
    for (const m of (data['config.env'] ?? '').matchAll(/MINIO_ROOT_(?:USER|PASSWORD)="?([^"\n]+)"?/g)) out.add(m[1]!);
  }
  return out;
}

const text = (data: Record<string, string> | undefined): Record<string, string> =>
  Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));

/** The buckets a MinIO policy document names (arn:aws:s3:::<bucket> and <bucket>/*). */
function policyBuckets(policy: string): Set<string> {
  const doc = JSON.parse(policy) as { Statement?: { Resource?: string | string[] }[] };
  const resources = (doc.Statement ?? []).flatMap((st) => [st.Resource ?? []].flat());
  return new Set(resources.map((r) => r.replace(/^arn:aws:s3:::/, '').split('/')[0]!));
}

/**
 * Every bucket user (a Secret of ours holding policy.json) reaches exactly one bucket, the one its
 * resource's claim names: a Bucket's own (its Secret's BUCKET_NAME), or, for a grant, the Bucket its
 * BucketAccess names.
 */
export function reachViolations(
  held: { obj: Obj }[],
  mrs: Obj[],
  claims: Record<'Bucket' | 'BucketAccess', Obj[]>,
  secrets: Obj[],
): { checked: number; violations: string[] } {
  const violations: string[] = [];
  const secretOf = (claim: Obj | undefined): Record<string, string> => {
    const to = (claim?.spec?.writeConnectionSecretToRef as { name?: string } | undefined)?.name;
    return text(secrets.find((x) => x.metadata.namespace === claim?.metadata.namespace && x.metadata.name === to)?.data);
  };
  // Listed items carry no kind: each list is of one.
  const claimOf = (ref: { kind?: string; namespace?: string; name?: string } | undefined): Obj | undefined =>
    (ref?.kind === 'Bucket' || ref?.kind === 'BucketAccess' ? claims[ref.kind] : []).find(
      (c) => c.metadata.namespace === ref?.namespace && c.metadata.name === ref?.name,
    );
  let checked = 0;
  for (const { obj } of held) {
    const policy = text(obj.data)['policy.json'];
    if (obj.kind !== 'Secret' || !policy) continue;
    const mr = mrs.find((m) => m.metadata.uid === obj.metadata.labels?.[LABEL_OWNER_UID]);
    const claim = claimOf(mr?.spec?.claimRef as { kind?: string } | undefined);
    if (!mr || !claim) continue; // a store's own user, made for no claim
    // A grant reaches its Bucket's bucket; a Bucket's user, its own.
    const bucketRef = claim.spec?.bucketRef as { namespace: string; name: string } | undefined;
    const owner = bucketRef ? claimOf({ kind: 'Bucket', ...bucketRef }) : claim;
    const want = secretOf(owner).BUCKET_NAME;
    const got = [...policyBuckets(policy)];
    checked++;
    if (!want || got.length !== 1 || got[0] !== want)
      violations.push(
        `${claim.kind} ${claim.metadata.name}'s user ${obj.metadata.name} reaches ${got.join(', ') || 'nothing'}, not ${want ?? '(no bucket named)'}`,
      );
  }
  if (checked === 0) violations.push('the reach check is blind: no bucket user of a claim was found');
  return { checked, violations };
}

/**
 * Every endpoint a connection Secret names, of a Service in target a, is one provider-rook proves: a
 * store's endpoint Service whose uid a managed resource recorded, or an operator's own Service
 * of a store provider-rook made (its owner reference names that store's uid).
 */
export async function endpointViolations(
  target: ChaosEnv['admin'],
  mrs: Obj[],
  secrets: Obj[],
  held: { type: ResourceType; obj: Obj }[],
): Promise<{ checked: number; violations: string[] }> {
  const violations: string[] = [];
  const recorded = new Set(
    mrs.flatMap((m) =>
      Object.values(
        JSON.parse((m.metadata as { annotations?: Record<string, string> }).annotations?.[ANNOTATION_COMPANION_UIDS] ?? '{}') as Record<
          string,
          string
        >,
      ).map(entryUid),
    ),
  );
  // What an operator makes for a store of ours (its S3 Service) is proven by its owner reference to that store.
  const targetKinds = new Set(TARGET_OF.values());
  const stores = new Set(held.filter(({ type }) => targetKinds.has(type.kind)).map(({ obj }) => obj.metadata.uid));
  let checked = 0;
  for (const secret of secrets) {
    const endpoint = text(secret.data).endpoint;
    const host = endpoint ? new URL(endpoint).hostname.split('.') : [];
    // A Service of the target's cluster DNS; the Ceph provisioner's own endpoint is its, not ours to prove.
    if (host[2] !== 'svc' || host[0]?.startsWith('rook-ceph')) continue;
    const [name, namespace] = host as [string, string];
    const svc = await target.get<Obj & { metadata: { ownerReferences?: { uid: string }[] } }>(Services, { namespace, name });
    checked++;
    const proven = svc && (recorded.has(svc.metadata.uid!) || svc.metadata.ownerReferences?.some((r) => stores.has(r.uid)));
    if (!proven)
      violations.push(
        `Secret ${secret.metadata.namespace}/${secret.metadata.name} names ${endpoint}, a Service provider-rook cannot prove`,
      );
  }
  if (checked === 0) violations.push('the endpoint check is blind: no connection Secret names a Service');
  return { checked, violations };
}
