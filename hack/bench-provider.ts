// npm run bench:provider [-- --stores N --targets T --claims M]: provider-rook as its own process
// (the compiled dist/main.js, as the image runs it) against local control planes, the MinIO operator
// played by the e2e stand-in. One run, one size; hack/bench.ts runs the scale curve. Prints what it
// measured and, with --json FILE, writes it there:
// - N managed ObjectStores at once, spread over T targets: time until all are in their target, all
//   Ready; provider-rook's requests per store; a window at rest (requests, writes at the servers);
//   drift repair; the time to delete them all; peak RSS and heap;
// - with --claims M: M Bucket claims at once, until all Bound, against the time a plain client takes
//   for as many writes as provider-rook made for them (the API servers' own throughput);
// - with --collected C: C MinIO Operator Tenants (each in a namespace of its own) and C Rook Ceph
//   ObjectBucketClaims (in one namespace), played by their stand-ins: the time to delete them and the
//   requests a deletion takes, where the operators' objects are the garbage collector's;
// - with --shared-claims S: S Bucket claims on one shared store (a MinioBucketClass), in a target of
//   their own whose stand-in runs the store as one real S3 server: the time until all are Bound, then
//   an S3 round trip with each claim's Secret; the server's memory apart from provider-rook's;
// - with --delivered D (and --shared-claims): D more claims on that store, each delivering its Secret
//   to a cluster that holds no store (bench-consumer), through the class's exposure (an ingress
//   stand-in in this process): the time until all are Bound and Delivered, the writes per claim in each
//   cluster, provider-rook's memory for watching one consumer cluster and per delivered claim, and a
//   round trip with each Secret as read in the consumer cluster.
import { type ReadonlyDeep } from '../src/kit/controller/informer.ts';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BucketClasses, Buckets } from '../src/app.ts';
import type { ObjectStore } from '../src/backends/rook-minio/api.ts';
import type { Bucket } from '../src/apis/storage.ts';
import { RookObjectStores } from '../src/backends/rook-minio/objectstore.ts';
import { Informer } from '../src/kit/controller/informer.ts';
import { KubeClient, type KubeObjectLike } from '../src/kit/kube/client.ts';
import { kubeconfigFileAccess } from '../src/kit/kube/config.ts';
import { Namespaces, Secrets, type ResourceType } from '../src/kit/kube/resources.ts';
import { silentLogger } from '../src/kit/logger.ts';
import { Providers } from '../src/runtime/system/provider-status.ts';
import { FakeMinioOperator } from '../test/fakes/fake-minio-operator.ts';
import { installOperators, standInsFor } from '../test/fakes/backends.ts';
import { SMALL_POOL } from '../test/fakes/fake-tenant-operator.ts';
import { resolveS3Endpoint } from '../test/fakes/s3-stores.ts';
import { LoopbackIngress } from '../test/fakes/loopback-ingress.ts';
import { roundTrip } from '../test/kit/s3.ts';
import { kinds } from '../src/apis/kinds.gen.ts';
import { secretText } from '../src/runtime/providers/credentials.ts';
import { difference, loadBetween, samples, serverLoad, writeCounts } from '../test/kit/apiserver-metrics.ts';
import { clusterPids, down, freePort, repoRoot, up, type LocalCluster } from '../test/kit/cluster.ts';
import { eventually, type EventuallyOptions } from '../test/kit/eventually.ts';
import { PROVIDER_NODE_FLAGS } from './lib/node-flags.ts';
import { installCrds, installOperatorBundle, manifestFiles } from '../test/kit/manifests.ts';
import { cond } from '../test/kit/conditions.ts';
import { bucketClass } from '../test/kit/claims.ts';

const { values } = parseArgs({
  options: {
    stores: { type: 'string', default: '200' },
    targets: { type: 'string', default: '1' },
    claims: { type: 'string', default: '0' },
    'shared-claims': { type: 'string', default: '0' },
    delivered: { type: 'string', default: '0' },
    // N MinIO Operator Tenants and N Rook Ceph ObjectBucketClaims on the first target, made Ready, then deleted: a deletion's cost where the garbage collector works.
    collected: { type: 'string', default: '0' },
    // The bench raises provider-rook's limits by flag (its defaults stay on for users): the figure is our own cost, not the limiter's.
    'provider-flags': { type: 'string', default: '--max-reconcile-rate 1000 --workers 16' },
    rest: { type: 'string', default: '30' },
    // Seconds between a resource's polls (provider-rook's --poll), or "default" for provider-rook's own (10m).
    poll: { type: 'string', default: '10' },
    json: { type: 'string' },
    // Node's flags for provider-rook: the image's by default (hack/lib/node-flags.ts); "none" for Node's defaults.
    'node-flags': { type: 'string', default: PROVIDER_NODE_FLAGS.join(' ') },
    // Writes a heap snapshot of provider-rook holding N stores at rest (Heap.*.heapsnapshot under .local/bench/).
    'heap-snapshot': { type: 'boolean', default: false },
    // Writes a CPU profile of the window at rest (.local/bench/rest.cpuprofile, for Chrome's DevTools or hack/cpu-summary.ts).
    'profile-rest': { type: 'boolean', default: false },
  },
});
const N = Number(values.stores);
const T = Number(values.targets);
const CLAIMS = Number(values.claims);
const SHARED = Number(values['shared-claims']);
const DELIVERED = Number(values.delivered);
const COLLECTED = Number(values.collected);
const REST_S = Number(values.rest);
const DEFAULT_POLL = values.poll === 'default';
const POLL_S = DEFAULT_POLL ? 600 : Number(values.poll);
const NS = 'bench';
const BATCH = 50;

const client = (c: LocalCluster): KubeClient =>
  new KubeClient(kubeconfigFileAccess(c.kubeconfig), { fieldManager: 'bench', timeoutMs: 120_000 });
const ready = (o: { readonly status?: { readonly conditions?: readonly { type: string; status: string }[] } } | undefined): boolean =>
  cond(o, 'Ready')?.status === 'True';
const round = (x: number, digits = 2): number => Number(x.toFixed(digits));
const percentile = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const procMiB = (pid: number, field: string): number =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
/** CPU time (user + system) a process has used so far, from /proc/PID/stat (in clock ticks of 1/100 s). */
const cpuSeconds = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ');
  return round((Number(fields[11]) + Number(fields[12])) / 100, 1);
};
const withoutExtraCas = ({ NODE_EXTRA_CA_CERTS: _, ...env }: NodeJS.ProcessEnv): NodeJS.ProcessEnv => env;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** How the bench waits (with eventually): a try every 50 ms, so what it times ends within 50 ms of happening. */
const often = (timeoutMs = 900_000): EventuallyOptions => ({ timeoutMs, delayMs: 50, maxDelayMs: 50 });

/** The provider's inspector (it runs with --inspect): a DevTools protocol session over its WebSocket. */
async function inspector(port: number): Promise<{ send(method: string, params?: object): Promise<unknown>; close(): void }> {
  const [target] = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { webSocketDebuggerUrl: string }[];
  const ws = new WebSocket(target!.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  let id = 0;
  const waiting = new Map<number, (result: unknown) => void>();
  ws.onmessage = (e) => {
    const msg = JSON.parse(String(e.data)) as { id?: number; result?: unknown };
    if (msg.id !== undefined) waiting.get(msg.id)?.(msg.result);
  };
  return {
    send: (method, params = {}) =>
      new Promise((resolve) => {
        waiting.set(++id, resolve);
        ws.send(JSON.stringify({ id, method, params }));
      }),
    close: () => ws.close(),
  };
}

/** Runs `work` over items, `width` at a time. */
async function inParallel<T>(items: T[], width: number, work: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

const names = Array.from({ length: T }, (_, i) => `bench-target-${i}`);
const clusters = (await up(['bench-control', ...names], (m) => console.error(m))) as LocalCluster[];
const [control, ...targets] = clusters as [LocalCluster, ...LocalCluster[]];
const admin = client(control);
const targetAdmins = targets.map(client);
await installCrds(admin, manifestFiles(path.join(repoRoot, 'crds')));
await admin.apply(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
const providerName = (i: number): string => `target-${i}`;
for (const [i, target] of targets.entries()) {
  await installOperatorBundle(targetAdmins[i]!);
  const access = kubeconfigFileAccess(target.kubeconfig);
  await admin.apply(Secrets, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: providerName(i), namespace: NS },
    type: 'Opaque',
    data: {
      endpoint: Buffer.from(target.server).toString('base64'),
      clusterCA: access.caData!,
      clientCert: access.certData!,
      clientKey: access.keyData!,
    },
  });
  await admin.apply(Providers, {
    apiVersion: Providers.apiVersion,
    kind: 'Provider',
    metadata: { name: providerName(i), namespace: NS },
    spec: { credentialsSecretRef: { name: providerName(i) } },
  });
}
// No S3 servers (s3 off): the bench measures provider-rook, and a server per store would cost ~125 MiB each.
const operators = targetAdmins.map((c) => new FakeMinioOperator(c));
for (const o of operators) await o.start();

// What the bench watches: managed stores (control) and the stores in every target.
const stores = new Informer<ObjectStore>(admin, kinds.ObjectStore, { namespaces: [NS], log: silentLogger });
const readyAt = new Map<string, number>();
const markReady = (o: ReadonlyDeep<ObjectStore>): void => {
  if (ready(o) && !readyAt.has(o.metadata.name)) readyAt.set(o.metadata.name, performance.now());
};
stores.on({ added: markReady, updated: (_old, o) => markReady(o) });
await stores.start();
const inTarget = targetAdmins.map((c) => new Informer<KubeObjectLike>(c, RookObjectStores, { log: silentLogger }));
await Promise.all(inTarget.map((i) => i.start()));
const targetCount = (): number => inTarget.reduce((n, i) => n + i.list().length, 0);

execBuild();
const metricsPort = await freePort();
const inspectPort = await freePort();
const snapshotDir = path.join(repoRoot, '.local', 'bench');
mkdirSync(snapshotDir, { recursive: true });
const provider = spawn(
  process.execPath,
  [
    ...values['node-flags'].split(' ').filter((f) => f && f !== 'none'),
    ...(values['heap-snapshot'] ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapshotDir}`] : []),
    ...(values['profile-rest'] ? [`--inspect=127.0.0.1:${inspectPort}`] : []),
    path.join(repoRoot, 'dist', 'main.js'),
    '--kubeconfig',
    control.kubeconfig,
    '--namespace',
    NS,
    ...(DEFAULT_POLL ? [] : ['--poll', `${POLL_S}s`]),
    '--metrics-addr',
    `127.0.0.1:${metricsPort}`,
    '--log-level',
    'warn',
    ...values['provider-flags'].split(' ').filter(Boolean),
  ],
  // The image's environment: NODE_ENV=production and none of this machine's NODE_EXTRA_CA_CERTS
  // (Node reads that bundle at start, 0.8 MiB; provider-rook trusts only its kubeconfigs' CAs).
  { cwd: repoRoot, stdio: ['ignore', 'inherit', 'inherit'], env: { ...withoutExtraCas(process.env), NODE_ENV: 'production' } },
);
const metrics = async (): Promise<string> => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
await eventually(
  () =>
    fetch(`http://127.0.0.1:${metricsPort}/healthz`).then(
      (r) => r.ok,
      () => false,
    ),
  'provider-rook to serve /healthz',
  often(60_000),
);
await sleep(2_000); // its informers' first lists
const gauge = (text: string, name: string): number => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? 0) / 1048576;
const heapMiB = async (): Promise<number> => gauge(await metrics(), 'nodejs_heap_size_used_bytes');
let peakHeap = 0;
// Where the memory is when RSS peaks: V8's heap (used, reserved, new space), buffers outside it, the rest (code, malloc, TLS).
let atPeak = { rss: 0, heapUsed: 0, heapTotal: 0, newSpace: 0, external: 0 };
// Paused in the window at rest: a scrape costs provider-rook CPU, and that window measures its own.
let sampling = true;
const heapSampler = setInterval(
  () =>
    sampling &&
    void metrics().then(
      (text) => {
        const heapUsed = gauge(text, 'nodejs_heap_size_used_bytes');
        peakHeap = Math.max(peakHeap, heapUsed);
        const rss = procMiB(provider.pid!, 'VmRSS');
        if (rss > atPeak.rss) {
          const newSpace = Number(/^nodejs_heap_space_size_total_bytes\{space="new"\} (\S+)/m.exec(text)?.[1] ?? 0) / 1048576;
          atPeak = {
            rss,
            heapUsed,
            heapTotal: gauge(text, 'nodejs_heap_size_total_bytes'),
            newSpace,
            external: gauge(text, 'nodejs_external_memory_bytes'),
          };
        }
      },
      () => undefined,
    ),
  500,
);
const idle = { rssMiB: round(procMiB(provider.pid!, 'VmRSS'), 0), heapMiB: round(await heapMiB(), 0) };

/**
 * The floor under the idle figure, measured in this run: Node with the same flags and environment,
 * holding the built-ins provider-rook loads (TLS, HTTP, crypto, DNS) and none of its code.
 */
function nodeWithBuiltinsMiB(): number {
  const script =
    "for (const m of ['https', 'http', 'crypto', 'net', 'dns', 'child_process', 'os', 'url', 'path', 'fs', 'util']) process.getBuiltinModule('node:' + m);" +
    "setTimeout(() => console.log(/VmRSS:\\s+(\\d+)/.exec(require('node:fs').readFileSync('/proc/self/status', 'utf8'))[1]), 1000);";
  const run = spawnSync(process.execPath, [...values['node-flags'].split(' ').filter((f) => f && f !== 'none'), '-e', script], {
    encoding: 'utf8',
    env: { ...withoutExtraCas(process.env), NODE_ENV: 'production' },
  });
  return round(Number(run.stdout.trim()) / 1024, 0);
}
const nodeFloor = nodeWithBuiltinsMiB();

/** provider-rook's own requests (rest_client_requests_total), "control|target reads|writes". */
const hostRole = new Map([
  [new URL(control.server).host, 'control'],
  ...targets.map((t) => [new URL(t.server).host, 'target'] as [string, string]),
]);
async function requests(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const { labels, value } of samples(await metrics(), 'rest_client_requests_total')) {
    if (labels.method === 'WATCH') continue;
    const answer = labels.code === '409' ? ' (conflicts)' : labels.code?.startsWith('2') ? '' : ` (${labels.code})`;
    const key = `${hostRole.get(labels.host!) ?? 'other'} ${labels.method === 'GET' ? 'reads' : 'writes'}${answer}`;
    out[key] = (out[key] ?? 0) + value;
  }
  return out;
}
/** Reconciles so far, "controller result" (controller_runtime_reconcile_total). */
async function reconciles(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const { labels, value } of samples(await metrics(), 'controller_runtime_reconcile_total'))
    out[`${labels.controller} ${labels.result}`] = value;
  return out;
}
const delta = (after: Record<string, number>, before: Record<string, number>): Record<string, number> =>
  Object.fromEntries(
    Object.entries(after)
      .map(([k, v]) => [k, v - (before[k] ?? 0)])
      .filter(([, v]) => (v as number) > 0),
  );
const perStore = (d: Record<string, number>, n: number): Record<string, number> =>
  Object.fromEntries(Object.entries(d).map(([k, v]) => [k, round(v / n)]));

const store = (name: string, i: number): KubeObjectLike & Record<string, unknown> => ({
  apiVersion: kinds.ObjectStore.apiVersion,
  kind: 'ObjectStore',
  metadata: { name, namespace: NS },
  spec: { forProvider: { scope: { nodeCount: 4 } }, targetNamespace: 'rook-minio', providerRef: { name: providerName(i % T) } },
});
const storeNames = Array.from({ length: N }, (_, i) => `store-${i}`);

// 1. N stores at once. The API servers' view: their CPU, their requests' mean latency, any 429 (APF).
const serverPids = clusters.flatMap(clusterPids);
const serversCpu = (): number => serverPids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
const loads = () => Promise.all(clusters.map(serverLoad));
let before = await requests();
const [fillCpu, fillLoad] = [serversCpu(), await loads()];
const t0 = performance.now();
let presentAt = 0;
const presence = setInterval(() => {
  if (!presentAt && targetCount() >= N) presentAt = performance.now();
}, 10);
await inParallel(
  storeNames.map((n, i) => [n, i] as const),
  BATCH,
  ([n, i]) => admin.create(kinds.ObjectStore, store(n, i)),
);
await eventually(() => readyAt.size >= N, `${N} stores Ready`, often());
const allReady = performance.now() - t0;
await eventually(() => presentAt > 0, `${N} stores in the targets`, often());
clearInterval(presence);
const atCreate = perStore(delta(await requests(), before), N);
const fillServers = { cores: round((serversCpu() - fillCpu) / (allReady / 1000)), ...loadBetween(await loads(), fillLoad) };

// 2. At rest: everything Ready; a window of several polls.
await sleep(Math.min(POLL_S, 60) * 1000); // the last follow-ups settle
before = await requests();
const reconcilesAtRest = await reconciles();
const serverWrites = await Promise.all(clusters.map((c) => writeCounts(c)));
sampling = false;
const profiler = values['profile-rest'] ? await inspector(inspectPort) : undefined;
await profiler?.send('Profiler.enable');
await profiler?.send('Profiler.start');
const restCpuBefore = cpuSeconds(provider.pid!);
await sleep(REST_S * 1000);
const restCpuS = round(cpuSeconds(provider.pid!) - restCpuBefore, 2);
if (profiler) {
  const { profile } = (await profiler.send('Profiler.stop')) as { profile: unknown };
  writeFileSync(path.join(snapshotDir, 'rest.cpuprofile'), JSON.stringify(profile));
  profiler.close();
}
sampling = true;
const atRest = delta(await requests(), before);
// Each managed resource's reconcile in the window is a poll (nothing else changed).
const pollsAtRest = Object.entries(delta(await reconciles(), reconcilesAtRest))
  .filter(([k]) => k.startsWith('managed/'))
  .reduce((n, [, v]) => n + v, 0);
const restServerWrites = (await Promise.all(clusters.map(async (c, i) => difference(await writeCounts(c), serverWrites[i]!)))).reduce(
  (n, d) => n + Object.values(d).reduce((a, b) => a + b, 0),
  0,
);
const heldRss = round(procMiB(provider.pid!, 'VmRSS'), 0);
if (values['heap-snapshot']) {
  const snapshots = (): string[] => readdirSync(snapshotDir).filter((f) => f.endsWith('.heapsnapshot'));
  const known = new Set(snapshots());
  provider.kill('SIGUSR2');
  let file = '';
  let size = -1;
  let since = 0;
  await eventually(
    () => {
      // the heap snapshot is written once its size has held for a second
      file ||= snapshots().find((f) => !known.has(f)) ?? '';
      if (!file) return false;
      const now = statSync(path.join(snapshotDir, file)).size;
      if (now !== size) [size, since] = [now, performance.now()];
      return size > 0 && performance.now() - since > 1_000;
    },
    'the heap snapshot',
    often(300_000),
  );
  console.error(`bench: heap snapshot ${path.join(snapshotDir, file)}`);
}

// 3. Drift: someone edits target stores; the watch brings them back. The repair is seen by a watch
// of the store, not by polling: a poll every 50 ms put a floor of about 0.06 s under every figure.
const drift: number[] = [];
type DriftedStore = KubeObjectLike & { metadata: { resourceVersion: string }; spec: { scope: { nodeCount: number } } };
for (let i = 0; i < 10; i++) {
  const index = Math.floor((i * N) / 10);
  const name = storeNames[index]!;
  const c = targetAdmins[index % T]!;
  const obj = (await c.get<DriftedStore>(RookObjectStores, { namespace: 'rook-minio', name }))!;
  const stop = new AbortController();
  let opened: () => void = () => {};
  let repaired: () => void = () => {};
  let edited = false;
  const open = new Promise<void>((resolve) => (opened = resolve));
  const seen = new Promise<number>((resolve) => (repaired = () => resolve(performance.now())));
  const watching = c
    .watch(
      RookObjectStores,
      {
        namespace: 'rook-minio',
        fieldSelector: `metadata.name=${name}`,
        resourceVersion: obj.metadata.resourceVersion,
        signal: stop.signal,
        onOpen: () => opened(),
      },
      (type, o) => {
        // The edit comes first (6); the next version with 4 again is the repair.
        const count = type === 'MODIFIED' ? (o as DriftedStore).spec.scope.nodeCount : undefined;
        if (count === 6) edited = true;
        else if (count === 4 && edited) repaired();
      },
    )
    .catch(() => {});
  await open;
  const started = performance.now();
  await c.update(RookObjectStores, { ...obj, spec: { ...obj.spec, scope: { ...obj.spec.scope, nodeCount: 6 } } });
  const timeout = setTimeout(() => stop.abort(), 60_000);
  const at = await Promise.race([seen, watching.then(() => undefined)]);
  clearTimeout(timeout);
  stop.abort();
  if (at === undefined) throw new Error(`bench: the drifted store ${name} was not repaired within 60 s`);
  drift.push(at - started);
}

// 4. Delete them all.
before = await requests();
const deleteLoad = await loads();
const [providerCpuBeforeDelete, serversCpuBeforeDelete] = [cpuSeconds(provider.pid!), serversCpu()];
const t2 = performance.now();
let goneFromTargets = 0;
const emptied = setInterval(() => {
  if (!goneFromTargets && targetCount() === 0) goneFromTargets = performance.now();
}, 10);
await inParallel(storeNames, BATCH, (n) => admin.delete(kinds.ObjectStore, { namespace: NS, name: n }));
await eventually(() => stores.list().length === 0 && goneFromTargets > 0, 'all stores deleted', often());
clearInterval(emptied);
const deleted = performance.now() - t2;
// Who was busy while deleting: provider-rook (of one core) and the API servers with etcd (of the machine's).
const deleteCores = {
  providerRook: round((cpuSeconds(provider.pid!) - providerCpuBeforeDelete) / (deleted / 1000)),
  servers: round((serversCpu() - serversCpuBeforeDelete) / (deleted / 1000)),
};
const atDelete = perStore(delta(await requests(), before), N);
const deleteServers = loadBetween(await loads(), deleteLoad);
// provider-rook deletes the target namespace it made with its last store; the claims below start
// once it is gone, or their first writes would meet a namespace being terminated (403s, retries).
await eventually(
  async () => (await Promise.all(targetAdmins.map((c) => c.get(Namespaces, { name: 'rook-minio' })))).every((ns) => !ns),
  'the emptied target namespaces gone',
  often(120_000),
);

// 5. Claims: M Buckets at once through a class, until all Bound; then a plain client's writes.
let claims: Record<string, unknown> | undefined;
if (CLAIMS > 0) {
  await admin.apply(kinds.ObjectStoreClass, {
    apiVersion: kinds.ObjectStoreClass.apiVersion,
    kind: 'ObjectStoreClass',
    metadata: { name: 'standard', namespace: NS },
    spec: { scope: { nodeCount: 4 }, providerRef: { name: providerName(0) } },
  });
  await admin.apply(
    BucketClasses,
    bucketClass({ name: 'standard', namespace: NS }, kinds.ObjectStoreClass, { name: 'standard', namespace: NS }),
  );
  const buckets = new Informer<Bucket>(admin, Buckets, { namespaces: [NS], log: silentLogger });
  await buckets.start();
  const writesBefore = await Promise.all(clusters.map((c) => writeCounts(c)));
  const reqBefore = await requests();
  const reconcilesBefore = await reconciles();
  const cpuBefore = cpuSeconds(provider.pid!);
  const serversBefore = serversCpu();
  const t3 = performance.now();
  const claimNames = Array.from({ length: CLAIMS }, (_, i) => `claim-${i}`);
  await inParallel(claimNames, BATCH, (n) =>
    admin.create(Buckets, {
      apiVersion: Buckets.apiVersion,
      kind: 'Bucket',
      metadata: { name: n, namespace: NS },
      spec: { classRef: { name: 'standard' }, writeConnectionSecretToRef: { name: n } },
    }),
  );
  await eventually(
    () => buckets.list().filter((b) => b.status?.bindingPhase === 'Bound').length >= CLAIMS,
    `${CLAIMS} claims Bound`,
    often(),
  );
  const bound = performance.now() - t3;
  const claimsCpu = cpuSeconds(provider.pid!) - cpuBefore;
  const claimsServersCpu = serversCpu() - serversBefore;
  const ours = delta(await requests(), reqBefore);
  const passes = delta(await reconciles(), reconcilesBefore);
  const providerWrites = (ours['control writes'] ?? 0) + (ours['target writes'] ?? 0);
  // Every write the servers took meanwhile (provider-rook's, the stand-in's, the bench's creates).
  const serverDiffs = await Promise.all(clusters.map(async (c, i) => difference(await writeCounts(c), writesBefore[i]!)));
  const serverTook = serverDiffs.reduce((n, d) => n + Object.values(d).reduce((a, b) => a + b, 0), 0);
  // By cluster, verb and resource, per claim: which writes a claim costs (anyone's: ours, the stand-in's, the bench's).
  const writesByResource: Record<string, number> = {};
  serverDiffs.forEach((d, i) => {
    for (const [k, v] of Object.entries(d)) writesByResource[`${i === 0 ? 'control' : 'target'} ${k}`] = round(v / CLAIMS);
  });
  // The same number of writes from a plain client, as fast as the servers take them: ConfigMaps.
  const ConfigMaps: ResourceType = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
  const t4 = performance.now();
  await inParallel(
    Array.from({ length: serverTook }, (_, i) => i),
    BATCH,
    (i) =>
      admin.create(ConfigMaps, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `plain-${i}`, namespace: NS },
        data: { i: String(i) },
      }),
  );
  const plain = performance.now() - t4;
  const plainServersCpu = serversCpu() - serversBefore - claimsServersCpu;
  claims = {
    claims: CLAIMS,
    boundS: round(bound / 1000, 1),
    providerWrites,
    serverWrites: serverTook,
    plainClientS: round(plain / 1000, 1),
    ratio: round(bound / plain),
    // provider-rook's CPU meanwhile, and its share of one core (Node runs our code on one): near 1, we are the bottleneck.
    providerCpuS: round(claimsCpu, 1),
    providerCoreShare: round(claimsCpu / (bound / 1000)),
    // The API servers' and etcds' CPU for the claims, and for the plain client's writes: what a write of ours costs them.
    serversCpuS: round(claimsServersCpu, 1),
    serversCoresDuringClaims: round(claimsServersCpu / (bound / 1000)),
    plainServersCpuS: round(plainServersCpu, 1),
    serversCoresDuringPlain: round(plainServersCpu / (plain / 1000)),
    // Where the time went: provider-rook's requests (by host role and answer) and reconciles (by controller and result) per claim.
    perClaim: { requests: perStore(ours, CLAIMS), reconciles: perStore(passes, CLAIMS), writesAtServers: writesByResource },
  };
  await buckets.stop();
}

// 6. Deletes where the garbage collector works: managed Tenants and CephBuckets, made Ready, then deleted.
let collected: Record<string, unknown> | undefined;
if (COLLECTED > 0) {
  const target = targetAdmins[0]!;
  const operators = ['minio-operator', 'rook-ceph'];
  await installOperators(target, operators);
  const standIns = await standInsFor(target, operators);
  for (const st of standIns) await st.start();
  const kindsToDelete: [string, ResourceType, (i: number) => Record<string, unknown>][] = [
    [
      'tenants',
      kinds.Tenant,
      (i) => ({
        forProvider: { pools: [SMALL_POOL] },
        targetNamespace: `bench-tenant-${i}`,
      }),
    ],
    ['cephBuckets', kinds.CephBucket, () => ({ forProvider: { storageClassName: 'rook-ceph-bucket' }, targetNamespace: 'bench-ceph' })],
  ];
  collected = {};
  for (const [label, type, spec] of kindsToDelete) {
    const names = Array.from({ length: COLLECTED }, (_, i) => `${label.toLowerCase()}-${i}`);
    const made = new Informer<ObjectStore>(admin, type, { namespaces: [NS], log: silentLogger });
    await made.start();
    await inParallel(
      names.map((n, i) => [n, i] as const),
      BATCH,
      ([n, i]) =>
        admin.create(type, {
          apiVersion: type.apiVersion,
          kind: type.kind,
          metadata: { name: n, namespace: NS },
          spec: { ...spec(i), providerRef: { name: providerName(0) }, reclaimPolicy: 'Delete' },
        }),
    );
    await eventually(() => made.list().filter(ready).length >= COLLECTED, `${COLLECTED} ${label} Ready`, often());
    const reqBefore = await requests();
    const started = performance.now();
    await inParallel(names, BATCH, (n) => admin.delete(type, { namespace: NS, name: n }));
    await eventually(() => made.list().length === 0, `${label} deleted`, often());
    collected[label] = {
      deleteS: round((performance.now() - started) / 1000, 1),
      requestsPerDeletion: perStore(delta(await requests(), reqBefore), COLLECTED),
    };
    await made.stop();
  }
  for (const st of standIns) await st.stop();
}

// The peak of the stores (and claims) above; the shared store's phase reports its own memory.
const peakBeforeShared = procMiB(provider.pid!, 'VmHWM');

// 7. Buckets in one shared store: S claims, each a bucket and a user of its own; each proven usable.
let shared: Record<string, unknown> | undefined;
let sharedCluster: LocalCluster | undefined;
let delivered: Record<string, unknown> | undefined;
let consumerCluster: LocalCluster | undefined;
if (SHARED > 0) {
  [sharedCluster] = (await up(['bench-shared'], (m) => console.error(m))) as [LocalCluster];
  const target = client(sharedCluster);
  await installOperatorBundle(target);
  const access = kubeconfigFileAccess(sharedCluster.kubeconfig);
  const keys = { endpoint: sharedCluster.server, clusterCA: access.caData!, clientCert: access.certData!, clientKey: access.keyData! };
  await admin.apply(Secrets, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'shared', namespace: NS },
    type: 'Opaque',
    data: { ...keys, endpoint: Buffer.from(keys.endpoint).toString('base64') },
  });
  await admin.apply(Providers, {
    apiVersion: Providers.apiVersion,
    kind: 'Provider',
    metadata: { name: 'shared', namespace: NS },
    spec: { credentialsSecretRef: { name: 'shared' } },
  });
  // This target's stand-in runs the store as a real S3 server, and plays the Jobs against it.
  const operator = new FakeMinioOperator(target, { s3: true });
  await operator.start();
  await admin.apply(kinds.ObjectStore, {
    apiVersion: kinds.ObjectStore.apiVersion,
    kind: 'ObjectStore',
    metadata: { name: 'shared-store', namespace: NS },
    spec: { forProvider: { scope: { nodeCount: 4 } }, targetNamespace: 'shared', providerRef: { name: 'shared' }, reclaimPolicy: 'Delete' },
  });
  await eventually(
    async () => ready(await admin.get<ObjectStore>(kinds.ObjectStore, { namespace: NS, name: 'shared-store' })),
    'the shared store Ready',
    often(120_000),
  );
  await admin.apply(kinds.MinioBucketClass, {
    apiVersion: kinds.MinioBucketClass.apiVersion,
    kind: 'MinioBucketClass',
    metadata: { name: 'shared', namespace: NS },
    spec: { store: { kind: 'ObjectStore', name: 'shared-store' } },
  });
  await admin.apply(
    BucketClasses,
    bucketClass({ name: 'shared', namespace: NS }, kinds.MinioBucketClass, { name: 'shared', namespace: NS }),
  );
  const buckets = new Informer<Bucket>(admin, Buckets, { namespaces: [NS], log: silentLogger });
  await buckets.start();
  const sharedNames = Array.from({ length: SHARED }, (_, i) => `shared-${i}`);
  const t5 = performance.now();
  await inParallel(sharedNames, BATCH, (n) =>
    admin.create(Buckets, {
      apiVersion: Buckets.apiVersion,
      kind: 'Bucket',
      metadata: { name: n, namespace: NS },
      spec: { classRef: { name: 'shared' }, writeConnectionSecretToRef: { name: n } },
    }),
  );
  const isBound = (n: string): boolean => {
    const b = buckets.get(`${NS}/${n}`);
    return b?.status?.bindingPhase === 'Bound' && ready(b);
  };
  await eventually(() => sharedNames.every(isBound), `${SHARED} shared-store claims Bound`, often());
  const boundShared = performance.now() - t5;
  // Each claim's Secret alone makes a round trip (PUT, GET, LIST, DELETE) in its own bucket.
  const t6 = performance.now();
  const buckets_ = new Set<string>();
  await inParallel(sharedNames, 10, async (n) => {
    const secret = secretText(
      (await admin.get<KubeObjectLike & { data?: Record<string, string> }>(Secrets, { namespace: NS, name: n }))?.data,
    );
    const local = await resolveS3Endpoint(secret.endpoint!, target);
    await roundTrip(local, { accessKey: secret.username!, secretKey: secret.password! }, secret.bucket!);
    buckets_.add(secret.bucket!);
  });
  const roundTrips = performance.now() - t6;
  const serverRss = (await operator.serverPids()).reduce((n, pid) => n + procMiB(pid, 'VmRSS'), 0);
  const apiRss = clusterPids(sharedCluster).reduce((n, pid) => n + procMiB(pid, 'VmRSS'), 0);
  shared = {
    claims: SHARED,
    stores: 1,
    buckets: buckets_.size,
    boundS: round(boundShared / 1000, 1),
    roundTripsS: round(roundTrips / 1000, 1),
    usable: buckets_.size,
    memoryMiB: {
      providerRookRss: round(procMiB(provider.pid!, 'VmRSS'), 0),
      providerRookPeakRss: round(procMiB(provider.pid!, 'VmHWM'), 0),
      s3ServerRss: round(serverRss, 0),
      targetApiServerAndEtcdRss: round(apiRss, 0),
    },
  };
  if (DELIVERED > 0) delivered = await deliveredPhase(sharedCluster, target, buckets);
  await buckets.stop();
  await operator.stop();
}

/** 8. Claims delivered to a consumer cluster (see --delivered). */
async function deliveredPhase(storeCluster: LocalCluster, target: KubeClient, buckets: Informer<Bucket>): Promise<Record<string, unknown>> {
  [consumerCluster] = (await up(['bench-consumer'], (m) => console.error(m))) as [LocalCluster];
  const consumer = client(consumerCluster);
  await consumer.apply(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'apps' } });
  const ingress = new LoopbackIngress('http://shared-store-s3.shared.svc.cluster.local:9000', target);
  const url = await ingress.listen();
  const access = kubeconfigFileAccess(consumerCluster.kubeconfig);
  const b64 = (t: string): string => Buffer.from(t).toString('base64');
  await admin.apply(Secrets, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'consumer', namespace: NS },
    type: 'Opaque',
    data: { endpoint: b64(consumerCluster.server), clusterCA: access.caData!, clientCert: access.certData!, clientKey: access.keyData! },
  });
  await admin.apply(Providers, {
    apiVersion: Providers.apiVersion,
    kind: 'Provider',
    metadata: { name: 'consumer', namespace: NS },
    spec: { credentialsSecretRef: { name: 'consumer' }, consumers: [{ claimNamespace: NS, namespaces: ['apps'] }] },
  } as KubeObjectLike);
  await admin.apply(kinds.MinioBucketClass, {
    apiVersion: kinds.MinioBucketClass.apiVersion,
    kind: 'MinioBucketClass',
    metadata: { name: 'exposed', namespace: NS },
    spec: { store: { kind: 'ObjectStore', name: 'shared-store' }, exposure: { url } },
  } as KubeObjectLike);
  await admin.apply(
    BucketClasses,
    bucketClass({ name: 'exposed', namespace: NS }, kinds.MinioBucketClass, { name: 'exposed', namespace: NS }),
  );
  const claim = (n: string): KubeObjectLike =>
    ({
      apiVersion: Buckets.apiVersion,
      kind: 'Bucket',
      metadata: { name: n, namespace: NS },
      spec: {
        classRef: { name: 'exposed' },
        writeConnectionSecretToRef: { name: n },
        consumers: [{ providerRef: { name: 'consumer', namespace: NS }, namespace: 'apps' }],
      },
    }) as KubeObjectLike;
  const isDelivered = (n: string): boolean => {
    const b = buckets.get(`${NS}/${n}`) as (Bucket & { status?: { conditions?: { type: string; status: string }[] } }) | undefined;
    return b?.status?.bindingPhase === 'Bound' && cond(b, 'Delivered')?.status === 'True';
  };
  const settle = async (): Promise<number> => {
    await sleep(3_000);
    return procMiB(provider.pid!, 'VmRSS');
  };
  // One claim first: what watching one consumer cluster costs, beside one delivered claim.
  const before = await settle();
  await admin.create(Buckets, claim('delivered-0'));
  await eventually(() => isDelivered('delivered-0'), 'the first delivered claim', often(120_000));
  const oneCluster = await settle();
  const names = Array.from({ length: DELIVERED - 1 }, (_, i) => `delivered-${i + 1}`);
  const tracked = [storeCluster, consumerCluster, clusters[0]!];
  const writesBefore = await Promise.all(tracked.map((c) => writeCounts(c)));
  const t = performance.now();
  await inParallel(names, BATCH, (n) => admin.create(Buckets, claim(n)));
  await eventually(() => names.every(isDelivered), `${names.length} claims Bound and Delivered`, often());
  const boundS = round((performance.now() - t) / 1000, 1);
  const writes = await Promise.all(tracked.map(async (c, i) => difference(await writeCounts(c), writesBefore[i]!)));
  const perClaim = (w: Record<string, number>): number => round(Object.values(w).reduce((a, b) => a + b, 0) / names.length, 1);
  const all = await settle();
  // Each Secret as the consumer cluster holds it: a round trip from there.
  let usable = 0;
  await inParallel(['delivered-0', ...names], 10, async (n) => {
    const keys = secretText(
      (await consumer.get<KubeObjectLike & { data?: Record<string, string> }>(Secrets, { namespace: 'apps', name: n }))?.data,
    );
    await roundTrip(
      await resolveS3Endpoint(keys.endpoint!, consumer),
      { accessKey: keys.AWS_ACCESS_KEY_ID!, secretKey: keys.AWS_SECRET_ACCESS_KEY! },
      keys.BUCKET_NAME!,
    );
    usable++;
  });
  await ingress.close();
  return {
    claims: DELIVERED,
    boundS,
    writesPerClaim: { control: perClaim(writes[2]!), target: perClaim(writes[0]!), consumer: perClaim(writes[1]!) },
    writesByCluster: { control: writes[2], target: writes[0], consumer: writes[1] },
    usable,
    memoryMiB: {
      oneConsumerClusterAndClaim: round(oneCluster - before, 1),
      perDeliveredClaim: round((all - oneCluster) / names.length, 2),
      providerRookRss: round(all, 0),
    },
  };
}

clearInterval(heapSampler);
const peakRss = round(peakBeforeShared, 0);
const cpuS = cpuSeconds(provider.pid!);
provider.kill('SIGTERM');
await new Promise((r) => provider.once('exit', r));
await stores.stop();
await Promise.all(inTarget.map((i) => i.stop()));
for (const o of operators) await o.stop();
await admin.close();
for (const c of targetAdmins) await c.close();
if (!process.env.KEEP_CLUSTERS)
  await down(['bench-control', ...names, ...(sharedCluster ? ['bench-shared'] : []), ...(consumerCluster ? ['bench-consumer'] : [])]);

const result = {
  stores: N,
  targets: T,
  providerFlags: values['provider-flags'],
  nodeFlags: values['node-flags'],
  fill: { inTargetsS: round((presentAt - t0) / 1000, 1), allReadyS: round(allReady / 1000, 1), servers: fillServers },
  requestsPerStoreAtCreate: atCreate,
  atRest: {
    windowS: REST_S,
    polls: REST_S / POLL_S,
    reconciles: pollsAtRest,
    pollS: POLL_S,
    providerRequests: atRest,
    writesAtServers: restServerWrites,
    cpuS: restCpuS,
  },
  driftS: { p50: round(percentile(drift, 50) / 1000), max: round(Math.max(...drift) / 1000) },
  memoryMiB: { idleRss: idle.rssMiB, idleHeap: idle.heapMiB, heldRss, peakRss, peakHeap: round(peakHeap, 0), nodeWithBuiltins: nodeFloor },
  atPeakRssMiB: Object.fromEntries(Object.entries(atPeak).map(([k, v]) => [k, round(v, 0)])),
  deleteS: round(deleted / 1000, 1),
  deleteCores,
  deleteServers,
  requestsPerStoreAtDelete: atDelete,
  cpuS,
  ...(claims ? { claims } : {}),
  ...(collected ? { collected } : {}),
  ...(shared ? { shared } : {}),
  ...(delivered ? { delivered } : {}),
};
console.log(JSON.stringify(result));
if (values.json) writeFileSync(values.json, `${JSON.stringify(result, null, 2)}\n`);

function execBuild(): void {
  // The image runs compiled JavaScript; so does the bench (type stripping at run time costs memory).
  const tsc = path.join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(repoRoot, 'tsconfig.build.json')], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error('bench: tsc failed');
}
