// make chaos [SIZE=small] [SCENARIOS=1,2,6]: provider-rook under repeated faults, on three local
// control planes (control, targets A and B), as its own process, with the operator stand-in. Each
// scenario is bounded in time, asserts its invariants and prints its figures; the run ends with a
// table and exits non-zero if any invariant was violated.
//   1 kill during binding   2 target outage   3 control-plane restart   4 leader failover
//   5 watch history lost (410 Gone)   6 secrets never shown   7 hostile input
//   8 placement under leader kills (capacity, reservations, no claim placed twice)
//   9 every backend (each managed kind src/backends/ lists) under kills, and stuck deletions
//     (an unreachable target, a foreign finalizer) said, counted and ended (hack/lib/chaos-backends.ts)
//   10 kill during deletions (nothing left in the target: the operator's objects, ours, the namespace)
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { BucketClasses, Buckets } from '../src/app.ts';
import { kinds } from '../src/apis/kinds.gen.ts';
import { Events, Jobs, Leases, Namespaces, Secrets, Services, StatefulSets } from '../src/kit/kube/resources.ts';
import type { KubeObjectLike } from '../src/kit/kube/client.ts';
import { Providers } from '../src/runtime/system/provider-status.ts';
import { RookObjectStores } from '../src/backends/rook-minio/objectstore.ts';
import { ChaosEnv, CLUSTERS, Replica, World, isBound, percentile, sleep, within, type Conditioned } from './lib/chaos.ts';
import { cond } from '../test/kit/conditions.ts';
import { eventually } from '../test/kit/eventually.ts';
import { down, get as clusterInfo, start, stop } from '../test/kit/cluster.ts';
import { hostileInputs } from './lib/hostile.ts';
import { everyBackend } from './lib/chaos-backends.ts';
import { bucketClass } from '../test/kit/claims.ts';

const SIZES = {
  default: {
    claims: 200,
    kills: 10,
    perTarget: 50,
    arriving: 10,
    outageS: 45,
    restartClaims: 50,
    failoverClaims: 100,
    goneClaims: 10,
    placed: { claims: 100, capacity: 40, kills: 5 },
    backends: { claims: 15, kills: 4, outageS: 30 },
    deletedClaims: 60,
  },
  small: {
    claims: 40,
    kills: 3,
    perTarget: 10,
    arriving: 3,
    outageS: 15,
    restartClaims: 10,
    failoverClaims: 20,
    goneClaims: 4,
    placed: { claims: 30, capacity: 12, kills: 3 },
    backends: { claims: 3, kills: 2, outageS: 15 },
    deletedClaims: 30,
  },
};
const { values } = parseArgs({
  options: {
    size: { type: 'string', default: process.env.SIZE || 'default' },
    scenarios: { type: 'string', default: process.env.SCENARIOS || '1,2,3,4,5,6,7,8,9,10' },
    claims: { type: 'string' },
    kills: { type: 'string' },
    'per-target': { type: 'string' },
    outage: { type: 'string' },
  },
});
if (!(values.size! in SIZES)) throw new Error(`--size must be one of ${Object.keys(SIZES).join(', ')}`);
const size = { ...SIZES[values.size as keyof typeof SIZES] };
if (values.claims) size.claims = Number(values.claims);
if (values.kills) size.kills = Number(values.kills);
if (values['per-target']) size.perTarget = Number(values['per-target']);
if (values.outage) size.outageS = Number(values.outage);
const chosen = new Set(values.scenarios!.split(',').map(Number));

interface Outcome {
  scenario: string;
  figures: string[];
  violations: string[];
  seconds: number;
}

const say = (line: string): void => console.log(`[chaos] ${line}`);
const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const names = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

/** Deletes every claim of the world and waits until nothing of it is left; returns how long that took. */
async function emptied(world: World, env: ChaosEnv, violations: string[], boundMs = 180_000): Promise<number> {
  await world.harvest();
  const t = performance.now();
  for (const c of await world.listClaims()) await env.admin.delete(Buckets, { namespace: world.app, name: c.metadata.name });
  try {
    await eventually(async () => (await world.leftovers()).length === 0, 'nothing left of the scenario', within(boundMs));
  } catch {
    violations.push(...(await world.leftovers()).slice(0, 10).map((l) => `left after deleting all claims (${s(boundMs)} bound): ${l}`));
  }
  return performance.now() - t;
}

async function scenario1(env: ChaosEnv): Promise<Omit<Outcome, 'scenario' | 'seconds'>> {
  const { world, replica } = await env.scenario('s1');
  const claims = names('claim', size.claims);
  const t0 = performance.now();
  const creating = Promise.all([
    world.claims(
      claims.filter((_, i) => i % 2 === 0),
      'a',
    ),
    world.claims(
      claims.filter((_, i) => i % 2 === 1),
      'b',
    ),
  ]);
  const gaps: number[] = [];
  for (let k = 0; k < size.kills; k++) {
    const gap = 1_000 + Math.random() * 5_000;
    gaps.push(gap);
    await sleep(gap);
    await replica.kill();
    await replica.start();
  }
  await creating;
  const violations: string[] = [];
  await world.bound(claims, 300_000).catch((err: Error) => violations.push(err.message));
  const allBound = performance.now() - t0;
  violations.push(...(await world.violations()));
  const deleted = await emptied(world, env, violations);
  await replica.kill();
  return {
    figures: [
      `${size.claims} claims, ${size.kills} SIGKILLs ${s(Math.min(...gaps))}-${s(Math.max(...gaps))} apart: all Bound ${s(allBound)} after the first create`,
      `all deleted, nothing left anywhere, in ${s(deleted)}`,
    ],
    violations,
  };
}

async function scenario2(env: ChaosEnv): Promise<Omit<Outcome, 'scenario' | 'seconds'>> {
  const { world, replica } = await env.scenario('s2');
  const violations: string[] = [];
  const onA = names('a', size.perTarget);
  const onB = names('b', size.perTarget);
  await Promise.all([world.claims(onA, 'a'), world.claims(onB, 'b')]);
  await world.bound([...onA, ...onB], 300_000);

  const latency = async (batch: string[]): Promise<number[]> => {
    const created = await world.claims(batch, 'b');
    const bound = await world.bound(batch, 120_000);
    return batch.map((n) => bound.get(n)! - created.get(n)!);
  };
  const before = await latency(names('b-before', size.arriving));

  const a = env.targets.a;
  const down0 = performance.now();
  await env.stopTarget(a);
  const arrivingA = names('a-during', size.arriving);
  const [during] = await Promise.all([latency(names('b-during', size.arriving)), world.claims(arrivingA, 'a')]);
  // Every resource on A (old and new) says Unreachable while A is down.
  const unreachable = async (): Promise<boolean> =>
    (await world.listManaged())
      .filter((m) => m.spec.providerRef?.name === 'a')
      .every((m) => cond(m, 'Synced')?.status === 'False' && cond(m, 'Synced')?.reason === 'Unreachable');
  let reportedIn = NaN;
  try {
    await eventually(
      async () => (await world.listManaged()).length === onA.length + onB.length + 3 * size.arriving && unreachable(),
      'every resource on A to report Synced=False/Unreachable',
      within(size.outageS * 1000 - (performance.now() - down0)),
    );
    reportedIn = performance.now() - down0;
  } catch (err) {
    violations.push((err as Error).message);
  }
  const claimsShowIt = (await world.listClaims())
    .filter((c) => onA.includes(c.metadata.name))
    .every((c) => cond(c, 'Synced')?.reason === 'Unreachable');
  if (!claimsShowIt) violations.push('claims on A do not all mirror Synced=False/Unreachable during the outage');
  await sleep(Math.max(0, size.outageS * 1000 - (performance.now() - down0)));
  await env.startTarget(a);
  const back = performance.now();
  await eventually(
    async () => {
      const managed = await world.listManaged();
      return (
        (await world.listClaims()).every(isBound) &&
        managed.every((m) => cond(m, 'Synced')?.status === 'True' && cond(m, 'Ready')?.status === 'True')
      );
    },
    'full recovery after A is back',
    within(180_000),
  ).catch((err: Error) => violations.push(err.message));
  const recovery = performance.now() - back;
  violations.push(...(await world.violations()));
  const deleted = await emptied(world, env, violations);
  await replica.kill();
  const p = (xs: number[]): string => `p50 ${s(percentile(xs, 50))}, max ${s(Math.max(...xs))}`;
  return {
    figures: [
      `${size.perTarget} claims per target; A's API server stopped ${size.outageS} s while ${size.arriving} claims per target arrived`,
      `B's bind latency: A up ${p(before)}; A down ${p(during)}`,
      `A's resources all Synced=False/Unreachable ${s(reportedIn)} after it stopped; full recovery ${s(recovery)} after it returned`,
      `all deleted in ${s(deleted)}`,
    ],
    violations,
  };
}

async function scenario3(env: ChaosEnv): Promise<Omit<Outcome, 'scenario' | 'seconds'>> {
  const { world, replica } = await env.scenario('s3');
  const violations: string[] = [];
  const first = names('c', size.restartClaims);
  await world.claims(first, 'a');
  await world.bound(first, 300_000);
  const t = performance.now();
  await stop(CLUSTERS[0]);
  await start(CLUSTERS[0]);
  const restarted = performance.now() - t;
  const after = names('after', 5);
  const t1 = performance.now();
  await world.claims(after, 'b');
  await world.bound(after, 120_000).catch((err: Error) => violations.push(err.message));
  const newBound = performance.now() - t1;
  violations.push(...(await world.violations()));
  if (!replica.running) violations.push('provider-rook exited while the control plane restarted');
  const deleted = await emptied(world, env, violations);
  await replica.kill();
  return {
    figures: [
      `control plane restarted (${s(restarted)}) under ${size.restartClaims} bound claims; 5 new claims Bound ${s(newBound)} after it was back; deleted in ${s(deleted)}`,
    ],
    violations,
  };
}

async function scenario4(env: ChaosEnv): Promise<Omit<Outcome, 'scenario' | 'seconds'>> {
  const world = await new World(env, 's4').create();
  await env.admin.apply(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'chaos-system' } });
  const election = ['--leader-elect', 'true', '--leader-election-namespace', 'chaos-system', '--leader-election-id', 'chaos-s4'];
  const replicas = [new Replica('s4-0', env.control, election), new Replica('s4-1', env.control, election)];
  for (const r of replicas) {
    env.logs.add(r.log);
    await r.start();
  }
  const violations: string[] = [];
  const leaderOf = async (): Promise<Replica | undefined> => {
    for (const r of replicas) if (r.running && (await r.metric('leader_election_master_status').catch(() => 0)) === 1) return r;
    return undefined;
  };
  const leader = await eventually(leaderOf, 'a leader', within(60_000));
  const claims = names('c', size.failoverClaims);
  const t0 = performance.now();
  const creating = world.claims(claims, 'a');
  await eventually(
    async () => (await world.listManaged()).length >= Math.ceil(size.failoverClaims / 5),
    'the fill to be under way',
    within(60_000),
  );
  await leader.kill();
  const killed = performance.now();
  const standby = await eventually(leaderOf, 'the standby to lead', within(90_000)).catch((err: Error) => {
    violations.push(err.message);
    return undefined;
  });
  const takeover = performance.now() - killed;
  await creating;
  await world.bound(claims, 300_000).catch((err: Error) => violations.push(err.message));
  const filled = performance.now() - t0;
  violations.push(...(await world.violations()));
  const lease = await env.admin.get<Conditioned & { spec?: { holderIdentity?: string } }>(Leases, {
    namespace: 'chaos-system',
    name: 'chaos-s4',
  });
  const deleted = await emptied(world, env, violations);
  for (const r of replicas) await r.kill();
  return {
    figures: [
      `${size.failoverClaims} claims, two replicas; the leader SIGKILLed mid-fill: standby ${standby ? 'took over' : 'did not take over'} in ${s(takeover)} (lease ${lease?.spec?.holderIdentity ? 'held' : 'free'}), all Bound ${s(filled)} after the first create`,
      `deleted in ${s(deleted)}`,
    ],
    violations,
  };
}

/**
 * Placement under leader kills: claims of a class that places by labels onto two Providers with a
 * capacity, while the leader of two replicas is SIGKILLed several times. Checked at every observation
 * (every 200 ms), not only at the end: no Provider holds more than its capacity, no claim has two
 * managed resources, no providerRef ever changes once set; at the end, exactly the capacity is placed
 * and Bound, and after every claim is deleted no reservation is left on either Provider.
 */
async function scenario8(env: ChaosEnv): Promise<Omit<Outcome, 'scenario' | 'seconds'>> {
  const { claims: n, capacity, kills } = size.placed;
  const world = await new World(env, 's8').create();
  const violations: string[] = [];
  for (const name of ['a', 'b']) {
    const p = (await env.admin.get<Conditioned & { spec: Record<string, unknown> }>(Providers, { namespace: world.platform, name }))!;
    await env.admin.update(Providers, {
      ...p,
      metadata: { ...p.metadata, labels: { ...p.metadata.labels, tier: 'chaos' } },
      spec: { ...p.spec, capacity: { maxResources: capacity } },
    });
  }
  await env.admin.apply(kinds.ObjectStoreClass, {
    apiVersion: kinds.ObjectStoreClass.apiVersion,
    kind: 'ObjectStoreClass',
    metadata: { name: 'placed', namespace: world.platform },
    spec: { scope: { nodeCount: 4 }, targetNamespace: `${world.platform}-store`, providerSelector: { matchLabels: { tier: 'chaos' } } },
  });
  await env.admin.apply(
    BucketClasses,
    bucketClass({ name: 'placed', namespace: world.app }, kinds.ObjectStoreClass, { name: 'placed', namespace: world.platform }),
  );
  await env.admin.apply(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'chaos-system' } });
  // A short lease: what this scenario judges is placement across takeovers, not how long one takes
  // (scenario 4 measures that, at the default lease).
  const election = [
    ...['--leader-elect', 'true', '--leader-election-namespace', 'chaos-system', '--leader-election-id', 'chaos-s8'],
    ...['--leader-election-lease-duration', '4s', '--leader-election-renew-deadline', '3s', '--leader-election-retry-period', '500ms'],
  ];
  const replicas = [new Replica('s8-0', env.control, election), new Replica('s8-1', env.control, election)];
  for (const r of replicas) {
    env.logs.add(r.log);
    await r.start();
  }
  const leaderOf = async (): Promise<Replica | undefined> => {
    for (const r of replicas) if (r.running && (await r.metric('leader_election_master_status').catch(() => 0)) === 1) return r;
    return undefined;
  };
  // The watcher: every 200 ms, what the API server holds, against the invariants.
  const refs = new Map<string, string>();
  const placedAt = new Map<string, number>();
  let observations = 0;
  let watching = true;
  const seen = new Set<string>();
  const note = (v: string) => {
    if (!seen.has(v) && seen.size < 20) violations.push(v);
    seen.add(v);
  };
  const watcher = (async () => {
    while (watching) {
      const managed = await world.listManaged().catch(() => undefined);
      if (managed) {
        observations++;
        const perProvider = new Map<string, number>();
        const perClaim = new Map<string, number>();
        for (const mr of managed) {
          const ref = mr.spec.providerRef?.name;
          if (ref) perProvider.set(ref, (perProvider.get(ref) ?? 0) + 1);
          const was = refs.get(mr.metadata.uid!);
          if (was && ref !== was) note(`managed resource ${mr.metadata.name} moved from Provider ${was} to ${ref ?? 'none'}`);
          if (ref && !refs.has(mr.metadata.uid!)) placedAt.set(mr.metadata.uid!, performance.now());
          if (ref) refs.set(mr.metadata.uid!, ref);
          const claim = (mr.spec as { claimRef?: { uid?: string } }).claimRef?.uid ?? '';
          perClaim.set(claim, (perClaim.get(claim) ?? 0) + 1);
        }
        for (const [p, count] of perProvider)
          if (count > capacity) note(`Provider ${p} holds ${count} managed resources, over its capacity ${capacity}`);
        for (const [c, count] of perClaim) if (count > 1) note(`claim ${c} has ${count} managed resources`);
      }
      await sleep(200);
    }
  })();
  const claims = names('p', n);
  const t0 = performance.now();
  // Claims arrive in a batch before each kill, and the leader dies 0-500 ms after, mid-placement.
  let killed = 0;
  let firstKill = Infinity;
  const batch = Math.ceil(n / (kills + 1));
  for (let k = 0; k <= kills; k++) {
    await world.claims(claims.slice(k * batch, (k + 1) * batch), 'placed');
    if (k === kills) break;
    const leader = await eventually(leaderOf, 'a leader', within(90_000)).catch(() => undefined);
    if (!leader) {
      violations.push(`no leader before kill ${k + 1}`);
      break;
    }
    await sleep(Math.random() * 500);
    await leader.kill();
    firstKill = Math.min(firstKill, performance.now());
    killed++;
    await leader.start(); // it comes back as a standby
  }
  // Settled: exactly the capacity placed and Bound, the rest waiting without a Provider.
  const placedBound = async () => (await world.listClaims()).filter(isBound).length;
  await eventually(async () => (await placedBound()) === Math.min(n, 2 * capacity), 'the placeable claims Bound', within(300_000)).catch(
    async (err: Error) => violations.push(`${err.message} (${await placedBound()} Bound)`),
  );
  const settled = performance.now() - t0;
  const unplaced = (await world.listManaged()).filter((m) => !m.spec.providerRef).length;
  // The kills must have come while placing, or the invariants were only checked at rest.
  const afterKill = [...placedAt.values()].filter((t) => t > firstKill).length;
  if (killed && afterKill === 0) violations.push('no claim was placed after the first kill: the faults missed the placements');
  const deleted = await emptied(world, env, violations);
  watching = false;
  await watcher;
  const reservations = await eventually(
    async () => {
      const held = (
        await env.admin.list<Conditioned & { status?: { reservations?: unknown[] } }>(Providers, { namespace: world.platform })
      ).items.map((p) => p.status?.reservations?.length ?? 0);
      return held.every((h) => h === 0) ? held : undefined;
    },
    'every reservation released',
    within(60_000),
  ).catch(() => {
    violations.push('reservations left on a Provider after every claim was deleted');
    return undefined;
  });
  for (const r of replicas) await r.kill();
  return {
    figures: [
      `${n} claims onto two Providers of capacity ${capacity}, ${killed} leader SIGKILLs mid-placement (${afterKill} placed after the first): ${Math.min(n, 2 * capacity)} placed and Bound ${s(settled)} after the first create, ${unplaced} waiting`,
      `${observations} observations: never over capacity, never placed twice, never moved; deleted in ${s(deleted)}, reservations ${reservations ? 'all released' : 'LEFT'}`,
    ],
    violations,
  };
}

/** etcd's current revision, and a compaction up to it (over etcd's HTTP gateway on its client port). */
async function compact(cluster: string): Promise<number> {
  const etcd = `http://127.0.0.1:${clusterInfo(cluster).ports.etcdClient}`;
  const post = async (p: string, body: unknown): Promise<{ header?: { revision?: string } }> =>
    (await fetch(etcd + p, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) })).json() as Promise<{
      header?: { revision?: string };
    }>;
  const revision = Number((await post('/v3/kv/range', { key: Buffer.from('/').toString('base64') })).header?.revision);
  await post('/v3/kv/compaction', { revision, physical: true });
  return revision;
}

async function scenario5(env: ChaosEnv): Promise<Omit<Outcome, 'scenario' | 'seconds'>> {
  const { world, replica } = await env.scenario('s5');
  const violations: string[] = [];
  const claims = names('c', size.goneClaims);
  await world.claims(claims, 'b');
  await world.bound(claims, 120_000);
  const b = env.targets.b;
  const relistsBefore = countLines(replica.log, /watch history lost \(410 Gone\); relisting/);
  // The gap: provider-rook frozen while B restarts, changes happen, and B's history is compacted away.
  replica.pause();
  await env.stopTarget(b);
  await env.startTarget(b);
  const [drifted, removed] = (await world.targetObjects(b)).slice(0, 2) as [
    Conditioned & { spec: { scope: { nodeCount: number } } },
    Conditioned,
  ];
  await b.admin.update(RookObjectStores, { ...drifted, spec: { ...drifted.spec, scope: { ...drifted.spec.scope, nodeCount: 6 } } });
  await b.admin.delete(RookObjectStores, { namespace: removed.metadata.namespace, name: removed.metadata.name });
  await eventually(
    async () => !(await b.admin.get(RookObjectStores, { namespace: removed.metadata.namespace, name: removed.metadata.name })),
    'the removed store to be gone',
    within(30_000),
  );
  const revision = await compact(b.cluster.name);
  const t = performance.now();
  replica.resume();
  await eventually(
    async () => {
      const d = await b.admin.get<typeof drifted>(RookObjectStores, { namespace: drifted.metadata.namespace, name: drifted.metadata.name });
      const r = await b.admin.get<Conditioned>(RookObjectStores, { namespace: removed.metadata.namespace, name: removed.metadata.name });
      return d?.spec.scope.nodeCount === 4 && r !== undefined && r.metadata.uid !== removed.metadata.uid;
    },
    'the change made during the gap to be reconciled',
    within(120_000),
  ).catch((err: Error) => violations.push(err.message));
  const repaired = performance.now() - t;
  await world.bound(claims, 120_000).catch((err: Error) => violations.push(err.message));
  violations.push(...(await world.violations()));
  const relisted = (): number => countLines(replica.log, /watch history lost \(410 Gone\); relisting/) - relistsBefore;
  await eventually(() => relisted() > 0, 'an informer to relist after 410 Gone', within(60_000)).catch(() =>
    violations.push('no informer reported 410 Gone: the gap did not lose watch history'),
  );
  const relists = relisted();
  const deleted = await emptied(world, env, violations);
  await replica.kill();
  return {
    figures: [
      `B restarted and compacted at revision ${revision} while provider-rook was frozen: ${relists} informers relisted after 410 Gone; drift and a deletion made in the gap repaired ${s(repaired)} after it resumed; deleted in ${s(deleted)}`,
    ],
    violations,
  };
}

function countLines(file: string, pattern: RegExp): number {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => pattern.test(l)).length;
  } catch {
    return 0;
  }
}

/** No secret value (nor its base64) in any log line, Event, or status collected in scenarios 1-5 and now. */
async function scenario6(env: ChaosEnv): Promise<Omit<Outcome, 'scenario' | 'seconds'>> {
  const clients = [env.admin, env.targets.a.admin, env.targets.b.admin];
  const events: string[] = [];
  for (const c of clients) {
    const { items } = await c.list<Conditioned & { reason?: string; message?: string; note?: string }>(Events);
    for (const e of items) events.push(`${e.reason ?? ''} ${e.message ?? ''} ${e.note ?? ''}`);
  }
  const logLines = [...env.logs].flatMap((f) => {
    try {
      return readFileSync(f, 'utf8').split('\n');
    } catch {
      return [];
    }
  });
  const texts = [...logLines, ...events, ...env.surfaces];
  // Each value as written, its base64, and for PEM blocks each 64-character body line.
  const needles = new Set<string>();
  for (const v of env.secrets) {
    needles.add(v);
    needles.add(Buffer.from(v).toString('base64'));
    for (const line of v.split('\n')) if (/^[A-Za-z0-9+/=]{40,}$/.test(line)) needles.add(line);
  }
  const violations: string[] = [];
  for (const needle of needles) {
    const hit = texts.find((t) => t.includes(needle));
    if (hit !== undefined)
      violations.push(`a secret value (${needle.length} characters) appears in: ${hit.slice(0, 80).replace(needle, '<secret>')}...`);
  }
  const debug = logLines.filter((l) => l.includes('"level":"debug"')).length;
  if (env.secrets.size === 0) violations.push('no secret values were collected: nothing was looked for');
  return {
    figures: [
      `looked for ${env.secrets.size} values (${needles.size} forms) in ${logLines.length} log lines (${debug} at debug), ${events.length} Events and ${env.surfaces.length} status blocks: ${violations.length} found`,
    ],
    violations,
  };
}

async function scenario7(env: ChaosEnv): Promise<Omit<Outcome, 'scenario' | 'seconds'>> {
  const { world, replica } = await env.scenario('s7');
  const { figures, violations } = await hostileInputs(env, world, replica);
  await world.harvest();
  await replica.kill();
  return { figures, violations };
}

/**
 * 10: SIGKILLs while every store is being deleted. A deletion is several requests (the store, then
 * what its operator made, found by the uid recorded at its create, then our companions and the
 * namespace): a kill between any two must leave nothing behind once the next process is done. Checked
 * deeper than the other scenarios: the target namespace itself, and anything still in it (the
 * operator's StatefulSets and Services, our Secrets, Services and Jobs).
 */
async function scenario10(env: ChaosEnv): Promise<Omit<Outcome, 'scenario' | 'seconds'>> {
  // The leak sweeper stays off here: it would remove what a deletion left behind, and hide it.
  const { world, replica } = await env.scenario('s10', ['--leak-interval', '1h']);
  const violations: string[] = [];
  const claims = names('gone', size.deletedClaims);
  await world.claims(claims, 'a');
  await world.bound(claims, 300_000).catch((err: Error) => violations.push(err.message));
  const target = env.targets.a;
  const storeNamespace = `${world.platform}-store`;
  const listed = async (): Promise<(KubeObjectLike & { kind?: string; data?: Record<string, string> })[]> =>
    (
      await Promise.all(
        [StatefulSets, Services, Secrets, Jobs].map(async (type) =>
          (await target.admin.list<KubeObjectLike & { data?: Record<string, string> }>(type, { namespace: storeNamespace })).items.map(
            (o) => ({ ...o, kind: type.kind }),
          ),
        ),
      )
    ).flat();
  const before = await listed();
  const statefulSets = before.filter((o) => o.kind === 'StatefulSet').length;
  if (statefulSets < claims.length) violations.push(`only ${statefulSets} StatefulSets for ${claims.length} stores before the deletions`);
  // Scenario 6 looks for these stores' root keys, and the claims' keys, in every log.
  for (const o of before.filter((x) => x.kind === 'Secret' && x.metadata.name.endsWith('-access-keys')))
    for (const k of ['username', 'password']) if (o.data?.[k]) env.secrets.add(Buffer.from(o.data[k], 'base64').toString());
  await world.harvest();
  const t = performance.now();
  for (const c of await world.listClaims()) await env.admin.delete(Buckets, { namespace: world.app, name: c.metadata.name });
  const gaps: number[] = [];
  const leftAtKill: string[] = [];
  for (let k = 0; k < size.kills; k++) {
    // Short gaps after the process serves again: each kill lands inside some store's deletion.
    const gap = 100 + Math.random() * 600;
    gaps.push(gap);
    await sleep(gap);
    const [managed, inTarget] = await Promise.all([world.listManaged(), listed()]);
    leftAtKill.push(`${managed.length}/${inTarget.filter((o) => o.kind === 'StatefulSet').length}`);
    await replica.kill();
    await replica.start();
    await eventually(() => replica.healthy(), 'provider-rook serving again', within(60_000, 100));
  }
  if (leftAtKill[0]?.startsWith('0/')) violations.push('every deletion was done before the first kill: nothing was tested');
  const left = async (): Promise<string[]> => {
    const namespace = await target.admin.get<KubeObjectLike & { status?: { phase?: string } }>(Namespaces, { name: storeNamespace });
    return [
      ...(await world.leftovers()),
      ...(namespace ? [`target a: namespace ${storeNamespace} (${namespace.status?.phase ?? 'Active'})`] : []),
      ...(await listed()).map((o) => `target a: ${o.kind} ${o.metadata.name} in ${storeNamespace}`),
    ];
  };
  try {
    await eventually(async () => (await left()).length === 0, 'nothing left after deletions under kills', within(180_000));
  } catch {
    violations.push(...(await left()).slice(0, 10).map((l) => `left after deleting under kills: ${l}`));
  }
  const deleted = performance.now() - t;
  await replica.kill();
  return {
    figures: [
      `${claims.length} claims Bound (${before.length} objects in their target namespace, ${statefulSets} of them the operator's StatefulSets), ` +
        `deleted at once under ${size.kills} SIGKILLs ${s(Math.min(...gaps))}-${s(Math.max(...gaps))} after serving again, ` +
        `with ${leftAtKill.join(', ')} managed resources / operator's StatefulSets left at the kills: the namespace and everything in it gone in ${s(deleted)}`,
    ],
    violations,
  };
}

const SCENARIOS: [number, string, (env: ChaosEnv) => Promise<Omit<Outcome, 'scenario' | 'seconds'>>][] = [
  [1, 'kill during binding', scenario1],
  [2, 'target outage', scenario2],
  [3, 'control-plane restart', scenario3],
  [4, 'leader failover', scenario4],
  [5, 'watch history lost', scenario5],
  // Before 6, which looks for their stores' root keys in every log too.
  [9, 'every backend, stuck deletions', (e) => everyBackend(e, size.backends)],
  [10, 'kill during deletions', scenario10],
  [6, 'secrets never shown', scenario6],
  [7, 'hostile input', scenario7],
  [8, 'placement under leader kills', scenario8],
];

const startedAt = performance.now();
say(`size ${values.size}, scenarios ${[...chosen].join(',')}; starting ${CLUSTERS.join(', ')}`);
const env = await ChaosEnv.up((m) => say(m));
const outcomes: Outcome[] = [];
for (const [n, name, run] of SCENARIOS) {
  if (!chosen.has(n)) continue;
  say(`scenario ${n}: ${name}`);
  const t = performance.now();
  let outcome: Omit<Outcome, 'scenario' | 'seconds'>;
  try {
    outcome = await run(env);
  } catch (err) {
    outcome = { figures: [], violations: [`aborted: ${(err as Error).message}`] };
  }
  outcomes.push({ scenario: `${n} ${name}`, seconds: (performance.now() - t) / 1000, ...outcome });
  for (const f of outcome.figures) say(`  ${f}`);
  for (const v of outcome.violations) say(`  VIOLATION: ${v}`);
}
await env.close();
if (!process.env.KEEP_CLUSTERS) await down([...CLUSTERS]);

const width = Math.max(...outcomes.map((o) => o.scenario.length));
console.log(
  `\nprovider-rook chaos, size ${values.size} (${JSON.stringify(size)}), ${s(performance.now() - startedAt)} in all; logs in .local/chaos/`,
);
console.log(`${'scenario'.padEnd(width)}  result  time     figures`);
for (const o of outcomes) {
  console.log(
    `${o.scenario.padEnd(width)}  ${o.violations.length ? 'FAIL  ' : 'pass  '}  ${`${o.seconds.toFixed(0)} s`.padEnd(7)}  ${o.figures[0] ?? ''}`,
  );
  for (const f of o.figures.slice(1)) console.log(`${''.padEnd(width + 18)}${f}`);
  for (const v of o.violations.slice(0, 5)) console.log(`${''.padEnd(width + 18)}VIOLATION: ${v}`);
}
process.exit(outcomes.some((o) => o.violations.length) ? 1 : 0);
