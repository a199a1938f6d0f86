// npm run bench:provider [-- --stores N]: provider-rook as its own process against two local control
// planes (the MinIO operator played by the e2e stand-in). Prints, for N managed ObjectStores:
// time until all are Ready, provider-rook's requests per store, steady-state writes (at the API
// servers) and reads per poll, drift-repair latency, time to Ready for one more store under that load, bulk-delete
// time and the provider's memory.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { FakeMinioOperator } from '../e2e/support/fake-minio-operator.ts';
import { ManagedObjectStores } from '../src/app.ts';
import type { ObjectStore } from '../src/apis/objectstore.ts';
import { RookObjectStores } from '../src/rook-minio/objectstore.ts';
import { Informer } from '../src/runtime/informer.ts';
import { diffFields } from '../src/runtime/native/external.ts';
import { KubeClient, type KubeObjectLike } from '../src/runtime/kube/client.ts';
import { kubeconfigFileAccess } from '../src/runtime/kube/config.ts';
import { Namespaces, Secrets } from '../src/runtime/kube/resources.ts';
import { silentLogger } from '../src/runtime/logger.ts';
import { Providers } from '../src/runtime/native/provider-status.ts';
import { difference, samples, writeCounts } from './lib/apiserver-metrics.ts';
import { down, freePort, repoRoot, up, type LocalCluster } from './lib/cluster.ts';
import { installCrds, installOperatorBundle, manifestFiles } from './lib/manifests.ts';

const { values } = parseArgs({ options: { stores: { type: 'string', default: '200' }, poll: { type: 'string', default: '10' } } });
const N = Number(values.stores);
const POLL_S = Number(values.poll);
const NS = 'bench';

const client = (c: LocalCluster): KubeClient => {
  return new KubeClient(kubeconfigFileAccess(c.kubeconfig), { fieldManager: 'bench' });
};
const ready = (o: ObjectStore | undefined): boolean => o?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const percentile = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const rssMiB = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** What provider-rook itself sent (its rest_client_requests_total), by "control|target METHOD". */
async function providerRequests(port: number, hosts: Record<string, string>): Promise<Map<string, number>> {
  const body = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const counts = new Map<string, number>();
  for (const { labels, value } of samples(body, 'rest_client_requests_total')) {
    const key = `${hosts[labels.host!] ?? labels.host} ${labels.method}${labels.code?.startsWith('2') ? '' : ` ${labels.code}`}`;
    counts.set(key, (counts.get(key) ?? 0) + value);
  }
  return counts;
}

const WRITES = ['POST', 'PUT', 'PATCH', 'DELETE'];
const count = (d: Record<string, number>, cluster: string, methods: string[]): number => methods.reduce((n, m) => n + (d[`${cluster} ${m}`] ?? 0), 0);

const [control, target] = (await up(['bench-control', 'bench-target'], (m) => console.error(m))) as [LocalCluster, LocalCluster];
const admin = client(control);
const targetAdmin = client(target);
await installCrds(admin, manifestFiles(path.join(repoRoot, 'crds')));
await installOperatorBundle(targetAdmin);
await admin.apply(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
// The Provider Secret holds the target's admin credentials (the kubeconfig's base64 is the Secret's).
const tkc = kubeconfigFileAccess(target.kubeconfig);
await admin.apply(Secrets, {
  apiVersion: 'v1', kind: 'Secret', metadata: { name: 'target', namespace: NS }, type: 'Opaque',
  data: {
    endpoint: Buffer.from(target.server).toString('base64'), clusterCA: tkc.caData!,
    clientCert: tkc.certData!, clientKey: tkc.keyData!,
  },
});
await admin.apply(Providers, { apiVersion: Providers.apiVersion, kind: 'Provider', metadata: { name: 'target', namespace: NS }, spec: { credentialsSecretRef: { name: 'target' } } });

const operator = new FakeMinioOperator(targetAdmin);
await operator.start();
const stores = new Informer<ObjectStore>(admin, ManagedObjectStores, { namespaces: [NS], log: silentLogger });
const readyAt = new Map<string, number>();
const markReady = (o: ObjectStore): void => { if (ready(o) && !readyAt.has(o.metadata.name)) readyAt.set(o.metadata.name, performance.now()); };
// Which fields changed in steady state, if anything did: churn should have a name.
let churn: Map<string, number> | undefined;
const noteChurn = (old: ObjectStore, o: ObjectStore): void => {
  if (!churn) return;
  for (const field of [...diffFields(o, old), ...diffFields(old, o)]) if (!field.startsWith('.metadata')) churn.set(field, (churn.get(field) ?? 0) + 1);
};
stores.on({ added: markReady, updated: (old, o) => { markReady(o); noteChurn(old, o); } });
await stores.start();

const metricsPort = await freePort();
const provider = spawn(process.execPath, [
  path.join(repoRoot, 'src', 'main.ts'), '--kubeconfig', control.kubeconfig, '--namespace', NS, '--poll', `${POLL_S}s`,
  '--metrics-addr', `127.0.0.1:${metricsPort}`, '--log-level', 'warn',
], { cwd: repoRoot, stdio: ['ignore', 'inherit', 'inherit'] });
await until('provider-rook to serve /healthz', () => fetch(`http://127.0.0.1:${metricsPort}/healthz`).then((r) => r.ok, () => false), 60_000);
await new Promise((r) => setTimeout(r, 2_000)); // its informers' first lists
const heapMiB = async (): Promise<number> => {
  const body = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  return Number(/^nodejs_heap_size_used_bytes (\S+)/m.exec(body)?.[1] ?? 0) / 1048576;
};
const idleRss = rssMiB(provider.pid!);
const idleHeap = await heapMiB();

const store = (name: string): KubeObjectLike & Record<string, unknown> => ({
  apiVersion: ManagedObjectStores.apiVersion, kind: 'ObjectStore', metadata: { name, namespace: NS },
  spec: { forProvider: { scope: { nodeCount: 4 } }, targetNamespace: 'rook-minio', providerRef: { name: 'target' } },
});
const names = Array.from({ length: N }, (_, i) => `store-${i}`);

// 1. N stores at once.
const hosts = { [new URL(control.server).host]: 'control', [new URL(target.server).host]: 'target' };
const requests = (): Promise<Map<string, number>> => providerRequests(metricsPort, hosts);
let before = await requests();
const created = new Map<string, number>();
const t0 = performance.now();
for (let i = 0; i < names.length; i += 20) {
  await Promise.all(names.slice(i, i + 20).map(async (n) => { await admin.create(ManagedObjectStores, store(n)); created.set(n, performance.now()); }));
}
await until(`${N} stores Ready`, () => names.every((n) => readyAt.has(n)));
const allReady = performance.now() - t0;
const toReady = names.map((n) => readyAt.get(n)! - created.get(n)!);
const createDelta = difference(await requests(), before);

// 2. Steady state: everything Ready, two full polls.
await new Promise((r) => setTimeout(r, POLL_S * 1000)); // let the last status writes and first polls settle
before = await requests();
const serverWrites = await Promise.all([control, target].map((c) => writeCounts(c)));
churn = new Map();
await new Promise((r) => setTimeout(r, 2 * POLL_S * 1000));
const steady = difference(await requests(), before);
const churned = Object.fromEntries(churn);
churn = undefined;
const steadyServerWrites = await Promise.all([control, target].map(async (c, i) => difference(await writeCounts(c), serverWrites[i]!)));
const busyRss = rssMiB(provider.pid!);
const busyHeap = await heapMiB();

// 3. Drift: someone edits a target store; the watch brings it back.
const drift: number[] = [];
for (let i = 0; i < 5; i++) {
  const name = names[i]!;
  const obj = await targetAdmin.get<KubeObjectLike & { spec: { scope: { nodeCount: number } } }>(RookObjectStores, name, 'rook-minio');
  const t = performance.now();
  await targetAdmin.update(RookObjectStores, { ...obj!, spec: { ...obj!.spec, scope: { ...obj!.spec.scope, nodeCount: 6 } } });
  await until('drift repaired', async () => (await targetAdmin.get<typeof obj & object>(RookObjectStores, name, 'rook-minio'))?.spec.scope.nodeCount === 4, 60_000);
  drift.push(performance.now() - t);
}

// 4. One more store while N exist.
const t1 = performance.now();
await admin.create(ManagedObjectStores, store('one-more'));
await until('one more store Ready', () => readyAt.has('one-more'));
const oneMore = performance.now() - t1;

// 5. Delete them all.
const t2 = performance.now();
const all = [...names, 'one-more'];
for (let i = 0; i < all.length; i += 20) await Promise.all(all.slice(i, i + 20).map((n) => admin.delete(ManagedObjectStores, n, NS)));
await until('all stores deleted', () => stores.list().length === 0);
const deleted = performance.now() - t2;
const leftInTarget = (await targetAdmin.list(RookObjectStores, { namespace: 'rook-minio' })).items.length;

provider.kill('SIGTERM');
await new Promise((r) => provider.once('exit', r));
await stores.stop();
await operator.stop();
await admin.close();
await targetAdmin.close();
if (!process.env.KEEP_CLUSTERS) await down(['bench-control', 'bench-target']);

const perStore = (n: number): string => (n / N).toFixed(1);
const show = (counts: Record<string, number>): string => JSON.stringify(counts);
console.log(`provider-rook bench: ${N} managed ObjectStores, one target, poll ${POLL_S} s (local control planes, operator stand-in)`);
console.log(`  create ${N} at once:          all Ready in ${seconds(allReady)} (${(N / (allReady / 1000)).toFixed(1)} stores/s); per store p50 ${seconds(percentile(toReady, 50))}, p95 ${seconds(percentile(toReady, 95))}`);
console.log(`  provider requests per store:  control ${perStore(count(createDelta, 'control', WRITES))} writes + ${perStore(count(createDelta, 'control', ['GET']))} reads; target ${perStore(count(createDelta, 'target', WRITES))} writes + ${perStore(count(createDelta, 'target', ['GET']))} reads`);
console.log(`  steady state, 2 polls:        writes at the API servers (all clients): control ${show(steadyServerWrites[0]!)}, target ${show(steadyServerWrites[1]!)}`);
console.log(`                                provider requests: ${show(steady)}`);
if (Object.keys(churned).length) console.log(`                                fields that changed: ${show(churned)}`);
console.log(`                                per store per poll interval: control ${(count(steady, 'control', ['GET']) / 2 / N).toFixed(2)} reads, target ${(count(steady, 'target', ['GET']) / 2 / N).toFixed(2)} reads, ${count(steady, 'control', WRITES) + count(steady, 'target', WRITES)} writes`);
console.log(`  drift repair (5 edits):       p50 ${seconds(percentile(drift, 50))}, max ${seconds(Math.max(...drift))}`);
console.log(`  one more store under load:    Ready in ${seconds(oneMore)}`);
console.log(`  delete ${N + 1} at once:          all gone in ${seconds(deleted)}; left in the target: ${leftInTarget}`);
console.log(`  provider memory:              RSS ${idleRss.toFixed(0)} MiB idle, ${busyRss.toFixed(0)} MiB holding ${N} stores; V8 heap in use ${idleHeap.toFixed(0)} MiB, then ${busyHeap.toFixed(0)} MiB`);
