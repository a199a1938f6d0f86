// Chaos scenario 9: every backend at once on target A (a claim's own store through each operator the
// backends act through, each with its stand-in, from test/fakes/backends.ts; and buckets in one shared store,
// each with a user of its own, shared with another namespace by BucketAccess grants), provider-rook
// SIGKILLed while they bind, then two stuck deletions that must say what they wait for, be counted, and end by themselves
// once the cause goes: a target that does not answer (A stopped), and a finalizer someone else
// added; and a store its operator never makes ready. Invariants: one managed resource per claim and one target object per managed resource, no
// root credential of any store anywhere in the control cluster, nothing of any kind left at the end.
import { BucketAccesses, BucketClasses, Buckets } from '../../src/app.ts';
import { backends } from '../../src/backends/index.ts';
import { isNotFound } from '../../src/kit/kube/errors.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Namespaces, Secrets, Services, type ResourceType } from '../../src/kit/kube/resources.ts';
import { ANNOTATION_COMPANION_UIDS, LABEL_OWNER_UID } from '../../src/runtime/ownership/marks.ts';
import {
  installOperators,
  operatorStandIns,
  operatorsUnderTest,
  ownStoreBackends,
  standInsFor,
  type Running,
} from '../../test/fakes/backends.ts';
import { ENV_OPERATOR, isBound, sleep, within, type ChaosEnv, type Conditioned } from './chaos.ts';
import { cond } from '../../test/kit/conditions.ts';
import { eventually } from '../../test/kit/eventually.ts';
import { bucketClass } from '../../test/kit/claims.ts';

export interface BackendsSize {
  /** Claims per backend. */
  claims: number;
  kills: number;
  outageS: number;
}

/** Every backend's managed kind, from the list: the invariants look at all of them, whichever this scenario claims. */
const MANAGED = backends.map((b) => b.managed);
/** Everything of ours a managed resource may have in a target: each backend's target kind, its companions and its work. */
const TARGET_TYPES: ResourceType[] = [
  ...new Map(
    backends
      .flatMap((b) => [b.native.target, ...(b.native.companionTypes ?? []), ...(b.native.superseded ? [b.native.superseded.type] : [])])
      .map((t) => [`${t.apiVersion}/${t.plural}`, t]),
  ).values(),
];
/** The target kind of each managed kind: one object of it per managed resource. */
const TARGET_OF = new Map(backends.map((b) => [b.managed.kind, b.native.target.kind]));
const HOLD = 'chaos.example.com/hold';
/** How long a resource waits before the waiting gauge counts it, in this scenario's replica. */
const WAITING_AFTER_S = 3;

type Obj = Conditioned & { spec?: Record<string, unknown>; data?: Record<string, string> };
const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

export async function everyBackend(env: ChaosEnv, size: BackendsSize): Promise<{ figures: string[]; violations: string[] }> {
  const a = env.targets.a;
  // Every operator the backends act through, besides the one the environment plays on every target.
  const operators = operatorsUnderTest.filter((o) => o !== ENV_OPERATOR);
  await installOperators(a.admin, operators);
  const playing = async (): Promise<Running[]> => {
    const made = await standInsFor(a.admin, operators);
    for (const st of made) await st.start();
    return made;
  };
  let standIns = await playing();

  // The leak sweeper off: it would remove what a deletion left behind, and hide it.
  const { world, replica } = await env.scenario('s9', ['--waiting-after', `${WAITING_AFTER_S}s`, '--leak-interval', '1h']);
  const { admin } = env;
  // A class of each backend that makes a claim's own store through those operators (the environment's own has class a).
  const added = ownStoreBackends.filter((b) => operators.includes(b.name));
  const classes: [string, ResourceType, Record<string, unknown>][] = added.map((b) => [`${b.name}-a`, b.class, b.classSpec('a')]);
  for (const [name, type, spec] of classes) {
    await admin.apply(type, { apiVersion: type.apiVersion, kind: type.kind, metadata: { name, namespace: world.platform }, spec });
    await admin.apply(BucketClasses, bucketClass({ name, namespace: world.app }, type, { name, namespace: world.platform }));
  }

  // One shared store, made by the platform team for no claim; a class of buckets in it; a namespace its buckets are shared with.
  const grantee = `${world.app}-grantee`;
  await admin.apply(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: grantee } });
  await admin.apply(kinds.ObjectStore, {
    apiVersion: kinds.ObjectStore.apiVersion,
    kind: 'ObjectStore',
    metadata: { name: 'shared-store', namespace: world.platform },
    spec: { forProvider: { scope: { nodeCount: 4 } }, targetNamespace: `${world.platform}-shared`, providerRef: { name: 'a' } },
  } as KubeObjectLike);
  const sharedClass = kinds.MinioBucketClass;
  await admin.apply(sharedClass, {
    apiVersion: sharedClass.apiVersion,
    kind: sharedClass.kind,
    metadata: { name: 'shared', namespace: world.platform },
    spec: { store: { kind: 'ObjectStore', name: 'shared-store' } },
  } as KubeObjectLike);
  await admin.apply(
    BucketClasses,
    bucketClass({ name: 'shared', namespace: world.app }, sharedClass, { name: 'shared', namespace: world.platform }),
  );

  const violations: string[] = [];
  const names = (prefix: string): string[] => Array.from({ length: size.claims }, (_, i) => `${prefix}-${i}`);
  const sharedClaims = names('shared');
  const sharing = Promise.all(
    sharedClaims.map((name) =>
      admin.create(Buckets, {
        apiVersion: Buckets.apiVersion,
        kind: 'Bucket',
        metadata: { name, namespace: world.app },
        spec: {
          classRef: { name: 'shared' },
          writeConnectionSecretToRef: { name: `${name}-conn` },
          shareWith: [{ namespace: grantee, modes: ['ReadOnly'] }],
        },
      } as KubeObjectLike),
    ),
  );
  const byClass: [string, string[]][] = [['a', names('store')], ...added.map((b): [string, string[]] => [`${b.name}-a`, names(b.name)])];
  const all = [...byClass.flatMap(([, n]) => n), ...sharedClaims];
  const t0 = performance.now();
  const creating = Promise.all(byClass.map(([cls, n]) => world.claims(n, cls)));
  for (let k = 0; k < size.kills; k++) {
    await sleep(1_000 + Math.random() * 3_000);
    await replica.kill();
    await replica.start();
  }
  await Promise.all([creating, sharing]);
  await world.bound(all, 300_000).catch((err: Error) => violations.push(err.message));
  const allBound = performance.now() - t0;

  // Each shared bucket granted to the other namespace, one more kill while the grants are made.
  const grants = sharedClaims.map((c) => `grant-${c}`);
  const granting = Promise.all(
    sharedClaims.map((c) =>
      admin.create(BucketAccesses, {
        apiVersion: BucketAccesses.apiVersion,
        kind: 'BucketAccess',
        metadata: { name: `grant-${c}`, namespace: grantee },
        spec: { bucketRef: { namespace: world.app, name: c }, mode: 'ReadOnly', writeConnectionSecretToRef: { name: `grant-${c}-conn` } },
      } as KubeObjectLike),
    ),
  );
  await sleep(500 + Math.random() * 1_000);
  await replica.kill();
  await replica.start();
  await granting;
  const accesses = async (): Promise<Obj[]> => (await admin.list<Obj>(BucketAccesses, { namespace: grantee })).items;
  await eventually(
    async () => (await accesses()).filter(isBound).length === grants.length,
    `${grants.length} grants to be Bound`,
    within(120_000),
  ).catch((err: Error) => violations.push(err.message));

  const managed = async (): Promise<Obj[]> =>
    (await Promise.all(MANAGED.map((type) => admin.list<Obj>(type, { namespace: world.platform })))).flatMap((l) => l.items);
  const owners = new Set<string>();
  const ours = async (): Promise<{ type: ResourceType; obj: Obj }[]> => {
    const found = await Promise.all(
      TARGET_TYPES.map(async (type) =>
        (
          await a.admin.list<Obj>(type, { labelSelector: LABEL_OWNER_UID }).catch((err: unknown) => {
            // A kind whose CRD target A lacks (a Gateway API route, say) holds nothing.
            if (isNotFound(err)) return { items: [] };
            throw err;
          })
        ).items.map((obj) => ({ type, obj })),
      ),
    );
    return found.flat().filter(({ obj }) => owners.has(obj.metadata.labels?.[LABEL_OWNER_UID] ?? ''));
  };

  // One managed resource per claim, one target object (of its kind) per managed resource.
  const claims = (await world.listClaims()).filter((c) => all.includes(c.metadata.name));
  const mrs = await managed();
  for (const mr of mrs) owners.add(mr.metadata.uid!);
  for (const c of claims) {
    const n = mrs.filter((m) => (m.spec?.claimRef as { uid?: string } | undefined)?.uid === c.metadata.uid).length;
    if (n !== 1) violations.push(`claim ${c.metadata.name} has ${n} managed resources`);
  }
  const granted = await accesses();
  for (const g of granted) {
    const n = mrs.filter((m) => (m.spec?.claimRef as { uid?: string } | undefined)?.uid === g.metadata.uid).length;
    if (n !== 1) violations.push(`BucketAccess ${g.metadata.name} has ${n} managed resources`);
  }
  const held = await ours();
  // A store's, a Tenant's, an OBC's target object is of its own kind; a MinIO bucket's is its user's Secret (its keys).
  for (const mr of mrs) {
    const mine = held.filter(({ obj }) => obj.metadata.labels?.[LABEL_OWNER_UID] === mr.metadata.uid);
    const target = TARGET_OF.get(mr.kind!);
    const n = mine.filter(({ type, obj }) => type.kind === target && (type.kind !== 'Secret' || obj.data?.secretKey)).length;
    if (n !== 1) violations.push(`${mr.kind} ${mr.metadata.name} has ${n} target objects (a MinIO bucket: user Secrets) in target a`);
  }
  const users = mrs.filter((m) => m.kind === kinds.MinioBucket.kind).length;

  // Each user's policy reaches exactly the bucket its own claim or grant names; every endpoint a Secret
  // names is a Service provider-rook can prove (the uid its store recorded, or the Tenant operator's own).
  const secrets = (await admin.list<Obj>(Secrets)).items;
  const reach = reachViolations(held, mrs, { Bucket: claims, BucketAccess: granted }, secrets);
  violations.push(...reach.violations);
  const endpoints = await endpointViolations(a.admin, mrs, secrets, held);
  violations.push(...endpoints.violations);

  // No store's root credentials anywhere in the control cluster (Secrets, status, Events).
  const roots = rootCredentials(held.map((h) => h.obj));
  for (const r of roots) env.secrets.add(r);
  const control = JSON.stringify([
    (await admin.list<Obj>(Secrets)).items.map((x) => Object.values(x.data ?? {}).map((v) => Buffer.from(v, 'base64').toString())),
    mrs.map((m) => m.status),
    claims.map((c) => c.status),
  ]);
  const leaked = [...roots].filter((r) => control.includes(r));
  if (roots.size === 0) violations.push('no root credentials found in target a: nothing was looked for');
  // The check must see what is there: the bucket users' keys are meant to be in the claims' Secrets.
  const userKeys = held
    .filter(({ obj }) => obj.kind === 'Secret' && obj.data?.secretKey)
    .map(({ obj }) => Buffer.from(obj.data!.secretKey!, 'base64').toString());
  const seen = userKeys.filter((k) => control.includes(k)).length;
  if (userKeys.length === 0 || seen === 0)
    violations.push(`the credentials check is blind: ${seen} of ${userKeys.length} bucket users' keys found`);
  if (leaked.length) violations.push(`${leaked.length} root credential values appear in the control cluster`);

  // Stuck 1: deletions while A does not answer say so, are counted, and end once A is back.
  const gauge = async (reason: string): Promise<number> => {
    const text = await replica.metricsText().catch(() => '');
    return text
      .split('\n')
      .filter((l) => l.startsWith('provider_rook_managed_resource_waiting{') && l.includes(`reason="${reason}"`))
      .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
  };
  const goneDuringOutage = byClass.map(([, n]) => n[0]!);
  const mrOf = (claim: string): Obj | undefined =>
    mrs.find((m) => (m.spec?.claimRef as { name?: string } | undefined)?.name === claim && m.metadata.namespace === world.platform);
  for (const st of standIns) await st.stop();
  const down0 = performance.now();
  await env.stopTarget(a);
  for (const c of goneDuringOutage) await admin.delete(Buckets, { namespace: world.app, name: c });
  const stuck = goneDuringOutage.map(mrOf).filter((m): m is Obj => m !== undefined);
  let unreachableSaid = NaN;
  let unreachableCounted = 0;
  try {
    await eventually(
      async () => {
        const now = await managed();
        return stuck.every((m) => {
          const live = now.find((x) => x.metadata.uid === m.metadata.uid);
          return live?.metadata.deletionTimestamp && cond(live, 'Synced')?.reason === 'Unreachable';
        });
      },
      'deletions on the stopped target to say Synced=False/Unreachable',
      within(size.outageS * 1000),
    );
    unreachableSaid = performance.now() - down0;
    await eventually(
      async () => (unreachableCounted = await gauge('Unreachable')) >= stuck.length,
      'the waiting gauge to count them',
      within(30_000),
    );
  } catch (err) {
    violations.push((err as Error).message);
  }
  await sleep(Math.max(0, size.outageS * 1000 - (performance.now() - down0)));
  await env.startTarget(a);
  standIns = await playing();
  const back = performance.now();
  const gone = async (uids: string[]): Promise<boolean> => {
    const now = new Set((await managed()).map((m) => m.metadata.uid));
    return uids.every((u) => !now.has(u));
  };
  await eventually(() => gone(stuck.map((m) => m.metadata.uid!)), 'the deletions held by the outage to end', within(120_000)).catch(
    (err: Error) => violations.push(err.message),
  );
  const resumed = performance.now() - back;

  // Stuck 2: a finalizer someone else added holds a deletion, said and counted; it ends when that goes.
  const heldMr = mrOf(byClass[0]![1][1]!)!;
  const heldType = MANAGED.find((t) => t.kind === heldMr.kind)!;
  await admin.mergePatch(
    heldType,
    { namespace: world.platform, name: heldMr.metadata.name },
    {
      metadata: { finalizers: [...(heldMr.metadata.finalizers ?? []), HOLD] },
    },
  );
  await admin.delete(Buckets, { namespace: world.app, name: byClass[0]![1][1]! });
  let holdCounted = 0;
  try {
    await eventually(
      async () => {
        const live = (await managed()).find((m) => m.metadata.uid === heldMr.metadata.uid);
        return cond(live, 'Synced')?.reason === 'WaitingForFinalizers' && (cond(live, 'Synced')?.message ?? '').includes(HOLD);
      },
      'a deletion held by a foreign finalizer to say WaitingForFinalizers',
      within(60_000),
    );
    await eventually(async () => (holdCounted = await gauge('WaitingForFinalizers')) >= 1, 'the waiting gauge to count it', within(30_000));
  } catch (err) {
    violations.push((err as Error).message);
  }
  const live = (await managed()).find((m) => m.metadata.uid === heldMr.metadata.uid);
  const at = live?.metadata.finalizers?.indexOf(HOLD) ?? -1;
  if (at >= 0)
    await admin.jsonPatch(heldType, { namespace: world.platform, name: heldMr.metadata.name }, [
      { op: 'test', path: `/metadata/finalizers/${at}`, value: HOLD },
      { op: 'remove', path: `/metadata/finalizers/${at}` },
    ]);
  await eventually(() => gone([heldMr.metadata.uid!]), 'the held deletion to end once the finalizer went', within(60_000)).catch(
    (err: Error) => violations.push(err.message),
  );

  // Stuck 3: an operator that never makes its store ready (the first added one's stand-in stopped):
  // the claim says what it waits for, its resource is counted, and it binds once the operator works again.
  const starved = added[0]!;
  const which = operators.indexOf(starved.name);
  await standIns[which]!.stop();
  await world.claims(['late'], `${starved.name}-a`);
  all.push('late');
  let notReady: { reason: string; message: string } | undefined;
  let notReadyCounted = 0;
  try {
    await eventually(
      async () => {
        const mr = (await managed()).find((m) => (m.spec?.claimRef as { name?: string } | undefined)?.name === 'late');
        if (mr) owners.add(mr.metadata.uid!);
        const ready = cond(mr, 'Ready');
        // Past Creating (the moment between its create and its first look at the target object): what it waits on.
        return ready?.status === 'False' && ready.reason !== 'Creating' && cond(mr, 'Synced')?.status === 'True'
          ? (notReady = { reason: ready.reason, message: ready.message ?? '' })
          : undefined;
      },
      `a ${starved.managed.kind} its operator never makes ready to say so`,
      within(60_000),
    );
    await eventually(async () => (notReadyCounted = await gauge(notReady!.reason)) >= 1, 'the waiting gauge to count it', within(30_000));
    const claim = (await world.listClaims()).find((c) => c.metadata.name === 'late');
    if (!cond(claim, 'Ready')?.message?.includes('waiting for')) violations.push(`claim late does not say what it waits for`);
  } catch (err) {
    violations.push((err as Error).message);
  }
  standIns[which] = operatorStandIns[starved.name]!.make(a.admin);
  await standIns[which].start();
  const late0 = performance.now();
  await world.bound(['late'], 60_000).catch((err: Error) => violations.push(err.message));
  const lateBound = performance.now() - late0;

  // The rest: all Bound still; then everything deleted, and nothing of any kind left.
  const rest = (await world.listClaims()).filter((c) => all.includes(c.metadata.name));
  for (const c of rest) if (!isBound(c)) violations.push(`claim ${c.metadata.name} is not Bound at the end`);
  await world.harvest();
  const t1 = performance.now();
  for (const g of await accesses()) await admin.delete(BucketAccesses, { namespace: grantee, name: g.metadata.name });
  for (const c of rest) await admin.delete(Buckets, { namespace: world.app, name: c.metadata.name });
  // SIGKILLs while they are being deleted, each a moment after the process serves again.
  const leftAtKill: number[] = [];
  for (let k = 0; k < size.kills; k++) {
    await sleep(100 + Math.random() * 600);
    leftAtKill.push((await managed()).length);
    await replica.kill();
    await replica.start();
    await eventually(() => replica.healthy(), 'provider-rook serving again', within(60_000, 100));
  }
  await eventually(
    async () => (await managed()).filter((m) => m.kind === kinds.MinioBucket.kind).length === 0,
    'the shared store emptied of buckets and users',
    within(120_000),
  ).catch((err: Error) => violations.push(err.message));
  await admin.delete(kinds.ObjectStore, { namespace: world.platform, name: 'shared-store' });
  const leftovers = async (): Promise<string[]> => [
    ...(await accesses()).map((g) => `BucketAccess ${g.metadata.name}`),
    ...(await world.listClaims()).filter((c) => all.includes(c.metadata.name)).map((c) => `claim ${c.metadata.name}`),
    ...(await managed()).map((m) => `${m.kind} ${m.metadata.name}`),
    ...(await ours()).map(({ type, obj }) => `target a: ${type.kind} ${obj.metadata.namespace}/${obj.metadata.name}`),
  ];
  await eventually(async () => (await leftovers()).length === 0, 'nothing left of scenario 9', within(180_000)).catch(async () =>
    violations.push(...(await leftovers()).slice(0, 10).map((l) => `left after deleting all claims: ${l}`)),
  );
  const deleted = performance.now() - t1;
  for (const st of standIns) await st.stop();
  await replica.kill();
  return {
    figures: [
      `${size.claims} claims per backend (${[kinds.ObjectStore.kind, ...added.map((b) => b.managed.kind)].join(', ')}, a bucket in a shared store) on target a, ${size.kills} SIGKILLs while binding: all Bound ${s(allBound)} after the first create`,
      `${granted.filter(isBound).length} grants to another namespace Bound through one more kill; ${users} MinIO bucket users (buckets and grants), one Secret each; ${roots.size} root credential values, none in the control cluster (where ${seen} of ${userKeys.length} bucket users' keys were found, as meant)`,
      `${reach.checked} users' policies each reach exactly the bucket their claim or grant names; ${endpoints.checked} endpoints in connection Secrets, each a Service provider-rook proves`,
      `a stopped for ${size.outageS} s with one deletion per backend: all said Unreachable ${s(unreachableSaid)} after it stopped, ${unreachableCounted} counted waiting; ended ${s(resumed)} after it returned`,
      `a foreign finalizer held a deletion: said WaitingForFinalizers, ${holdCounted} counted; ended once it was removed`,
      `a ${starved.managed.kind} its operator did not make ready: said ${notReady ? `Ready=False/${notReady.reason} (${notReady.message.slice(0, 60)})` : 'nothing'}, ${notReadyCounted} counted; Bound ${s(lateBound)} after the operator was back`,
      `the rest deleted under ${size.kills} more SIGKILLs (${leftAtKill.join(', ')} managed resources left at them), nothing of any kind left, in ${s(deleted)}`,
    ],
    violations,
  };
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
function reachViolations(
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
async function endpointViolations(
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
      ),
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
