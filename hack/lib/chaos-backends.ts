// Chaos scenario 9: every backend at once on target A (a claim's own store through each operator the
// backends act through, each with its stand-in, from test/fakes/backends.ts; and buckets in one shared
// store, each with a user of its own, shared with another namespace by BucketAccess grants),
// provider-rook SIGKILLed while they bind, then two stuck deletions that must say what they wait for,
// be counted, and end by themselves once the cause goes: a target that does not answer (A stopped),
// and a finalizer someone else added; and a store its operator never makes ready. Invariants
// (chaos-invariants.ts): one managed resource per claim and one target object per managed resource,
// each user reaching its own bucket, each endpoint proven, no root credential of any store anywhere
// in the control cluster, nothing of any kind left at the end. Each phase is a method, and returns
// the lines it adds to the table; past 400 lines, as the seven phases read in order and share what
// the scenario made.
import { BucketAccesses, BucketClasses, Buckets } from '../../src/app.ts';
import { backends } from '../../src/backends/index.ts';
import { isNotFound } from '../../src/kit/kube/errors.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Namespaces, Secrets, type ResourceType } from '../../src/kit/kube/resources.ts';
import { LABEL_OWNER_UID } from '../../src/runtime/ownership/marks.ts';
import {
  installOperators,
  operatorStandIns,
  operatorsUnderTest,
  ownStoreBackends,
  standInsFor,
  type Running,
} from '../../test/fakes/backends.ts';
import { ENV_OPERATOR, isBound, sleep, within, type ChaosEnv, type Replica, type World } from './chaos.ts';
import { credentialViolations, endpointViolations, reachViolations, targetObjectViolations, type Obj } from './chaos-invariants.ts';
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
const HOLD = 'chaos.example.com/hold';
/** How long a resource waits before the waiting gauge counts it, in this scenario's replica. */
const WAITING_AFTER_S = 3;

const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const claimRefOf = (m: Obj): { uid?: string; name?: string } | undefined => m.spec?.claimRef as { uid?: string; name?: string } | undefined;

export async function everyBackend(env: ChaosEnv, size: BackendsSize): Promise<{ figures: string[]; violations: string[] }> {
  const run = await EveryBackend.setUp(env, size);
  const figures = [
    ...(await run.bindUnderKills()),
    ...(await run.grantUnderKill()),
    ...(await run.invariants()),
    ...(await run.outage()),
    ...(await run.foreignFinalizer()),
    ...(await run.operatorNotReady()),
    ...(await run.deleteAll()),
  ];
  return { figures, violations: run.violations };
}

class EveryBackend {
  readonly violations: string[] = [];
  /** The uids of every managed resource this scenario made: what of ours in the target it looks at. */
  private readonly owners = new Set<string>();
  /** The managed resources as the invariants found them, all Bound. */
  private mrs: Obj[] = [];
  /** Every claim of the scenario, by name. */
  private readonly all: string[];
  private readonly sharedClaims: string[];
  /** The claims of each class: the environment's own store class (a), then one per added backend. */
  private readonly byClass: [string, string[]][];
  private readonly grantee: string;

  private readonly env: ChaosEnv;
  private readonly size: BackendsSize;
  private readonly world: World;
  private readonly replica: Replica;
  /** The operators the backends act through, besides the one the environment plays on every target. */
  private readonly operators: string[];
  private standIns: Running[];

  private constructor(
    env: ChaosEnv,
    size: BackendsSize,
    scenario: { world: World; replica: Replica },
    operators: string[],
    standIns: Running[],
  ) {
    [this.env, this.size, this.world, this.replica] = [env, size, scenario.world, scenario.replica];
    [this.operators, this.standIns] = [operators, standIns];
    const names = (prefix: string): string[] => Array.from({ length: size.claims }, (_, i) => `${prefix}-${i}`);
    this.sharedClaims = names('shared');
    this.byClass = [['a', names('store')], ...this.added.map((b): [string, string[]] => [`${b.name}-a`, names(b.name)])];
    this.all = [...this.byClass.flatMap(([, n]) => n), ...this.sharedClaims];
    this.grantee = `${this.world.app}-grantee`;
  }

  static async setUp(env: ChaosEnv, size: BackendsSize): Promise<EveryBackend> {
    const operators = operatorsUnderTest.filter((o) => o !== ENV_OPERATOR);
    await installOperators(env.targets.a.admin, operators);
    const standIns = await playing(env, operators);
    // The leak sweeper off: it would remove what a deletion left behind, and hide it.
    const scenario = await env.scenario('s9', ['--waiting-after', `${WAITING_AFTER_S}s`, '--leak-interval', '1h']);
    const run = new EveryBackend(env, size, scenario, operators, standIns);
    await run.publishClasses();
    return run;
  }

  /** The backends that make a claim's own store through the operators added here. */
  private get added(): typeof ownStoreBackends {
    return ownStoreBackends.filter((b) => this.operators.includes(b.name));
  }

  private get admin(): ChaosEnv['admin'] {
    return this.env.admin;
  }

  /** A class of each added backend; one shared store, made by the platform team for no claim, and a class of buckets in it. */
  private async publishClasses(): Promise<void> {
    const { admin, world } = this;
    for (const b of this.added) {
      const [name, type] = [`${b.name}-a`, b.class];
      await admin.apply(type, {
        apiVersion: type.apiVersion,
        kind: type.kind,
        metadata: { name, namespace: world.platform },
        spec: b.classSpec('a'),
      });
      await admin.apply(BucketClasses, bucketClass({ name, namespace: world.app }, type, { name, namespace: world.platform }));
    }
    await admin.apply(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: this.grantee } });
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
  }

  /** Every claim made at once, provider-rook SIGKILLed while they bind. */
  async bindUnderKills(): Promise<string[]> {
    const { admin, world, replica, size } = this;
    const sharing = Promise.all(
      this.sharedClaims.map((name) =>
        admin.create(Buckets, {
          apiVersion: Buckets.apiVersion,
          kind: 'Bucket',
          metadata: { name, namespace: world.app },
          spec: {
            classRef: { name: 'shared' },
            writeConnectionSecretToRef: { name: `${name}-conn` },
            shareWith: [{ namespace: this.grantee, modes: ['ReadOnly'] }],
          },
        } as KubeObjectLike),
      ),
    );
    const t0 = performance.now();
    const creating = Promise.all(this.byClass.map(([cls, n]) => world.claims(n, cls)));
    for (let k = 0; k < size.kills; k++) {
      await sleep(1_000 + Math.random() * 3_000);
      await replica.kill();
      await replica.start();
    }
    await Promise.all([creating, sharing]);
    await world.bound(this.all, 300_000).catch((err: Error) => this.violations.push(err.message));
    const kindsClaimed = [kinds.ObjectStore.kind, ...this.added.map((b) => b.managed.kind)].join(', ');
    return [
      `${size.claims} claims per backend (${kindsClaimed}, a bucket in a shared store) on target a, ${size.kills} SIGKILLs while binding: all Bound ${s(performance.now() - t0)} after the first create`,
    ];
  }

  /** Each shared bucket granted to the other namespace, one more kill while the grants are made. */
  async grantUnderKill(): Promise<string[]> {
    const { admin, world, replica } = this;
    const granting = Promise.all(
      this.sharedClaims.map((c) =>
        admin.create(BucketAccesses, {
          apiVersion: BucketAccesses.apiVersion,
          kind: 'BucketAccess',
          metadata: { name: `grant-${c}`, namespace: this.grantee },
          spec: { bucketRef: { namespace: world.app, name: c }, mode: 'ReadOnly', writeConnectionSecretToRef: { name: `grant-${c}-conn` } },
        } as KubeObjectLike),
      ),
    );
    await sleep(500 + Math.random() * 1_000);
    await replica.kill();
    await replica.start();
    await granting;
    const grants = this.sharedClaims.length;
    await eventually(
      async () => (await this.accesses()).filter(isBound).length === grants,
      `${grants} grants to be Bound`,
      within(120_000),
    ).catch((err: Error) => this.violations.push(err.message));
    return [];
  }

  /**
   * One managed resource per claim and grant, one target object (of its kind) per managed resource;
   * each user's policy reaches exactly its bucket; every endpoint a Secret names is proven; no store's
   * root credentials anywhere in the control cluster (Secrets, status, Events).
   */
  async invariants(): Promise<string[]> {
    const { admin, violations } = this;
    const claims = (await this.world.listClaims()).filter((c) => this.all.includes(c.metadata.name));
    const mrs = (this.mrs = await this.managed());
    for (const mr of mrs) this.owners.add(mr.metadata.uid!);
    const granted = await this.accesses();
    for (const [kind, list] of [
      ['claim', claims],
      ['BucketAccess', granted],
    ] as const)
      for (const c of list) {
        const n = mrs.filter((m) => claimRefOf(m)?.uid === c.metadata.uid).length;
        if (n !== 1) violations.push(`${kind} ${c.metadata.name} has ${n} managed resources`);
      }
    const held = await this.ours();
    violations.push(...targetObjectViolations(mrs, held));
    const users = mrs.filter((m) => m.kind === kinds.MinioBucket.kind).length;

    // Each user's policy reaches exactly the bucket its own claim or grant names; every endpoint a Secret
    // names is a Service provider-rook can prove (the uid its store recorded, or the Tenant operator's own).
    const secrets = (await admin.list<Obj>(Secrets)).items;
    const reach = reachViolations(held, mrs, { Bucket: claims, BucketAccess: granted }, secrets);
    const endpoints = await endpointViolations(this.env.targets.a.admin, mrs, secrets, held);
    violations.push(...reach.violations, ...endpoints.violations);

    const control = JSON.stringify([
      (await admin.list<Obj>(Secrets)).items.map((x) => Object.values(x.data ?? {}).map((v) => Buffer.from(v, 'base64').toString())),
      mrs.map((m) => m.status),
      claims.map((c) => c.status),
    ]);
    const { roots, userKeys, seen, violations: leaks } = credentialViolations(held, control);
    for (const r of roots) this.env.secrets.add(r);
    violations.push(...leaks);
    return [
      `${granted.filter(isBound).length} grants to another namespace Bound through one more kill; ${users} MinIO bucket users (buckets and grants), one Secret each; ${roots.size} root credential values, none in the control cluster (where ${seen} of ${userKeys} bucket users' keys were found, as meant)`,
      `${reach.checked} users' policies each reach exactly the bucket their claim or grant names; ${endpoints.checked} endpoints in connection Secrets, each a Service provider-rook proves`,
    ];
  }

  /** Stuck 1: deletions while A does not answer say so, are counted, and end once A is back. */
  async outage(): Promise<string[]> {
    const { env, size, world } = this;
    const a = env.targets.a;
    const goneDuringOutage = this.byClass.map(([, n]) => n[0]!);
    for (const st of this.standIns) await st.stop();
    const down0 = performance.now();
    await env.stopTarget(a);
    for (const c of goneDuringOutage) await this.admin.delete(Buckets, { namespace: world.app, name: c });
    const stuck = goneDuringOutage.map((c) => this.mrOf(c)).filter((m): m is Obj => m !== undefined);
    let unreachableSaid = NaN;
    let unreachableCounted = 0;
    try {
      await eventually(
        async () => {
          const now = await this.managed();
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
        async () => (unreachableCounted = await this.waiting('Unreachable')) >= stuck.length,
        'the waiting gauge to count them',
        within(30_000),
      );
    } catch (err) {
      this.violations.push((err as Error).message);
    }
    await sleep(Math.max(0, size.outageS * 1000 - (performance.now() - down0)));
    await env.startTarget(a);
    this.standIns = await playing(env, this.operators);
    const back = performance.now();
    await eventually(() => this.gone(stuck.map((m) => m.metadata.uid!)), 'the deletions held by the outage to end', within(120_000)).catch(
      (err: Error) => this.violations.push(err.message),
    );
    return [
      `a stopped for ${size.outageS} s with one deletion per backend: all said Unreachable ${s(unreachableSaid)} after it stopped, ${unreachableCounted} counted waiting; ended ${s(performance.now() - back)} after it returned`,
    ];
  }

  /** Stuck 2: a finalizer someone else added holds a deletion, said and counted; it ends when that goes. */
  async foreignFinalizer(): Promise<string[]> {
    const { admin, world } = this;
    const claim = this.byClass[0]![1][1]!;
    const heldMr = this.mrOf(claim)!;
    const heldType = MANAGED.find((t) => t.kind === heldMr.kind)!;
    const key = { namespace: world.platform, name: heldMr.metadata.name };
    await admin.mergePatch(heldType, key, { metadata: { finalizers: [...(heldMr.metadata.finalizers ?? []), HOLD] } });
    await admin.delete(Buckets, { namespace: world.app, name: claim });
    let holdCounted = 0;
    try {
      await eventually(
        async () => {
          const live = (await this.managed()).find((m) => m.metadata.uid === heldMr.metadata.uid);
          return cond(live, 'Synced')?.reason === 'WaitingForFinalizers' && (cond(live, 'Synced')?.message ?? '').includes(HOLD);
        },
        'a deletion held by a foreign finalizer to say WaitingForFinalizers',
        within(60_000),
      );
      await eventually(
        async () => (holdCounted = await this.waiting('WaitingForFinalizers')) >= 1,
        'the waiting gauge to count it',
        within(30_000),
      );
    } catch (err) {
      this.violations.push((err as Error).message);
    }
    const live = (await this.managed()).find((m) => m.metadata.uid === heldMr.metadata.uid);
    const at = live?.metadata.finalizers?.indexOf(HOLD) ?? -1;
    if (at >= 0)
      await admin.jsonPatch(heldType, key, [
        { op: 'test', path: `/metadata/finalizers/${at}`, value: HOLD },
        { op: 'remove', path: `/metadata/finalizers/${at}` },
      ]);
    await eventually(() => this.gone([heldMr.metadata.uid!]), 'the held deletion to end once the finalizer went', within(60_000)).catch(
      (err: Error) => this.violations.push(err.message),
    );
    return [`a foreign finalizer held a deletion: said WaitingForFinalizers, ${holdCounted} counted; ended once it was removed`];
  }

  /**
   * Stuck 3: an operator that never makes its store ready (the first added one's stand-in stopped):
   * the claim says what it waits for, its resource is counted, and it binds once the operator works again.
   */
  async operatorNotReady(): Promise<string[]> {
    const { world, violations } = this;
    const starved = this.added[0]!;
    const which = this.operators.indexOf(starved.name);
    await this.standIns[which]!.stop();
    await world.claims(['late'], `${starved.name}-a`);
    this.all.push('late');
    let notReady: { reason: string; message: string } | undefined;
    let notReadyCounted = 0;
    try {
      await eventually(
        async () => {
          const mr = (await this.managed()).find((m) => claimRefOf(m)?.name === 'late');
          if (mr) this.owners.add(mr.metadata.uid!);
          const ready = cond(mr, 'Ready');
          // Past Creating (the moment between its create and its first look at the target object): what it waits on.
          return ready?.status === 'False' && ready.reason !== 'Creating' && cond(mr, 'Synced')?.status === 'True'
            ? (notReady = { reason: ready.reason, message: ready.message ?? '' })
            : undefined;
        },
        `a ${starved.managed.kind} its operator never makes ready to say so`,
        within(60_000),
      );
      await eventually(
        async () => (notReadyCounted = await this.waiting(notReady!.reason)) >= 1,
        'the waiting gauge to count it',
        within(30_000),
      );
      const claim = (await world.listClaims()).find((c) => c.metadata.name === 'late');
      if (!cond(claim, 'Ready')?.message?.includes('waiting for')) violations.push(`claim late does not say what it waits for`);
    } catch (err) {
      violations.push((err as Error).message);
    }
    this.standIns[which] = operatorStandIns[starved.name]!.make(this.env.targets.a.admin);
    await this.standIns[which].start();
    const late0 = performance.now();
    await world.bound(['late'], 60_000).catch((err: Error) => violations.push(err.message));
    const said = notReady ? `Ready=False/${notReady.reason} (${notReady.message.slice(0, 60)})` : 'nothing';
    return [
      `a ${starved.managed.kind} its operator did not make ready: said ${said}, ${notReadyCounted} counted; Bound ${s(performance.now() - late0)} after the operator was back`,
    ];
  }

  /** The rest: all Bound still; then everything deleted under SIGKILLs, and nothing of any kind left. */
  async deleteAll(): Promise<string[]> {
    const { admin, world, replica, size, violations } = this;
    const rest = (await world.listClaims()).filter((c) => this.all.includes(c.metadata.name));
    for (const c of rest) if (!isBound(c)) violations.push(`claim ${c.metadata.name} is not Bound at the end`);
    await world.harvest();
    const t1 = performance.now();
    for (const g of await this.accesses()) await admin.delete(BucketAccesses, { namespace: this.grantee, name: g.metadata.name });
    for (const c of rest) await admin.delete(Buckets, { namespace: world.app, name: c.metadata.name });
    // SIGKILLs while they are being deleted, each a moment after the process serves again.
    const leftAtKill: number[] = [];
    for (let k = 0; k < size.kills; k++) {
      await sleep(100 + Math.random() * 600);
      leftAtKill.push((await this.managed()).length);
      await replica.kill();
      await replica.start();
      await eventually(() => replica.healthy(), 'provider-rook serving again', within(60_000, 100));
    }
    await eventually(
      async () => (await this.managed()).filter((m) => m.kind === kinds.MinioBucket.kind).length === 0,
      'the shared store emptied of buckets and users',
      within(120_000),
    ).catch((err: Error) => violations.push(err.message));
    await admin.delete(kinds.ObjectStore, { namespace: world.platform, name: 'shared-store' });
    const leftovers = async (): Promise<string[]> => [
      ...(await this.accesses()).map((g) => `BucketAccess ${g.metadata.name}`),
      ...(await world.listClaims()).filter((c) => this.all.includes(c.metadata.name)).map((c) => `claim ${c.metadata.name}`),
      ...(await this.managed()).map((m) => `${m.kind} ${m.metadata.name}`),
      ...(await this.ours()).map(({ type, obj }) => `target a: ${type.kind} ${obj.metadata.namespace}/${obj.metadata.name}`),
    ];
    await eventually(async () => (await leftovers()).length === 0, 'nothing left of scenario 9', within(180_000)).catch(async () =>
      violations.push(...(await leftovers()).slice(0, 10).map((l) => `left after deleting all claims: ${l}`)),
    );
    const deleted = performance.now() - t1;
    for (const st of this.standIns) await st.stop();
    await replica.kill();
    return [
      `the rest deleted under ${size.kills} more SIGKILLs (${leftAtKill.join(', ')} managed resources left at them), nothing of any kind left, in ${s(deleted)}`,
    ];
  }

  private async managed(): Promise<Obj[]> {
    return (await Promise.all(MANAGED.map((type) => this.admin.list<Obj>(type, { namespace: this.world.platform })))).flatMap(
      (l) => l.items,
    );
  }

  private async accesses(): Promise<Obj[]> {
    return (await this.admin.list<Obj>(BucketAccesses, { namespace: this.grantee })).items;
  }

  /** What of ours target A holds for this scenario's managed resources. */
  private async ours(): Promise<{ type: ResourceType; obj: Obj }[]> {
    const found = await Promise.all(
      TARGET_TYPES.map(async (type) =>
        (
          await this.env.targets.a.admin.list<Obj>(type, { labelSelector: LABEL_OWNER_UID }).catch((err: unknown) => {
            // A kind whose CRD target A lacks (a Gateway API route, say) holds nothing.
            if (isNotFound(err)) return { items: [] };
            throw err;
          })
        ).items.map((obj) => ({ type, obj })),
      ),
    );
    return found.flat().filter(({ obj }) => this.owners.has(obj.metadata.labels?.[LABEL_OWNER_UID] ?? ''));
  }

  /** The managed resource of a claim, as the invariants found it. */
  private mrOf(claim: string): Obj | undefined {
    return this.mrs.find((m) => claimRefOf(m)?.name === claim && m.metadata.namespace === this.world.platform);
  }

  private async gone(uids: string[]): Promise<boolean> {
    const now = new Set((await this.managed()).map((m) => m.metadata.uid));
    return uids.every((u) => !now.has(u));
  }

  /** How many resources the replica's waiting gauge counts for a reason. */
  private async waiting(reason: string): Promise<number> {
    const text = await this.replica.metricsText().catch(() => '');
    return text
      .split('\n')
      .filter((l) => l.startsWith('provider_rook_managed_resource_waiting{') && l.includes(`reason="${reason}"`))
      .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
  }
}

/** The stand-ins of these operators on target A, started. */
async function playing(env: ChaosEnv, operators: string[]): Promise<Running[]> {
  const made = await standInsFor(env.targets.a.admin, operators);
  for (const st of made) await st.start();
  return made;
}
