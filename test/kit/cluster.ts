// Local control planes: one real etcd + kube-apiserver (+ a trimmed kube-controller-manager when
// available) per cluster, on free 127.0.0.1 ports, with all state under .local/clusters/NAME.
import { fileURLToPath } from 'node:url';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync, closeSync } from 'node:fs';
import https from 'node:https';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { ensureBinaries, type Binaries } from './binaries.ts';
import { ensurePki, pkiPaths, readPem } from './pki.ts';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

export function clustersRoot(): string {
  return process.env.PROVIDER_ROOK_CLUSTERS_DIR ?? path.join(repoRoot, '.local', 'clusters');
}

export interface ClusterPorts {
  apiserver: number;
  etcdClient: number;
  etcdPeer: number;
}

export interface LocalCluster {
  name: string;
  dir: string;
  kubeconfig: string;
  server: string;
  ports: ClusterPorts;
}

export type ProcessName = 'etcd' | 'kube-apiserver' | 'kube-controller-manager';

export interface ClusterStatus extends LocalCluster {
  running: Record<ProcessName, number | undefined>;
}

type Log = (line: string) => void;
const quiet: Log = () => {};

const START_TIMEOUT_MS = Number(process.env.PROVIDER_ROOK_START_TIMEOUT_MS ?? 90_000);

function clusterOf(name: string): LocalCluster {
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name))
    throw new Error(`invalid cluster name '${name}': use lower-case letters, digits and '-'`);
  const dir = path.join(clustersRoot(), name);
  const stateFile = path.join(dir, 'cluster.json');
  const ports: ClusterPorts = existsSync(stateFile)
    ? (JSON.parse(readFileSync(stateFile, 'utf8')) as { ports: ClusterPorts }).ports
    : { apiserver: 0, etcdClient: 0, etcdPeer: 0 };
  return { name, dir, kubeconfig: path.join(dir, 'kubeconfig'), server: `https://127.0.0.1:${ports.apiserver}`, ports };
}

/** Names of all clusters that have a folder under the clusters root. */
export function knownClusters(): string[] {
  const root = clustersRoot();
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .filter((entry) => existsSync(path.join(root, entry, 'cluster.json')))
    .sort();
}

/** A TCP port on 127.0.0.1 that nothing listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A free port below the kernel's ephemeral range (32768-60999 by default): a cluster keeps its ports
 * across a stop and a start, and a port from that range, once freed, may be handed to any process
 * that binds port 0 meanwhile (the S3 servers take ten each). Ports recorded by any known cluster,
 * stopped ones too, and those in `taken` are never handed out: a cluster started while another is
 * stopped for an outage test must not take the stopped one's ports.
 */
export async function stablePort(taken: ReadonlySet<number> = new Set()): Promise<number> {
  const reserved = recordedPorts();
  const [low, size] = [20_000, 12_000];
  const offset = Math.floor(Math.random() * size);
  for (let i = 0; i < size; i++) {
    const port = low + ((offset + i) % size);
    if (!reserved.has(port) && !taken.has(port) && (await portIsFree(port))) return port;
  }
  throw new Error('no free port in 20000-31999; stop old clusters with `npm run clusters -- down`');
}

/** Every port written in a cluster.json under the clusters root. */
function recordedPorts(): Set<number> {
  const ports = new Set<number>();
  for (const name of knownClusters()) for (const port of Object.values(clusterOf(name).ports)) ports.add(port);
  return ports;
}

async function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function pidFile(cluster: LocalCluster, proc: ProcessName): string {
  return path.join(cluster.dir, `${proc}.pid`);
}

/** The pids of a cluster's live processes (API server, etcd, controller-manager), e.g. to read their CPU time. */
export function clusterPids(cluster: LocalCluster): number[] {
  return (['etcd', 'kube-apiserver', 'kube-controller-manager'] as const)
    .map((p) => livePid(cluster, p))
    .filter((p): p is number => p !== undefined);
}

/** The pid of a cluster process if it is alive and still the binary we started. */
function livePid(cluster: LocalCluster, proc: ProcessName): number | undefined {
  const file = pidFile(cluster, proc);
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8'));
  try {
    process.kill(pid, 0);
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.includes(proc) && cmdline.includes(cluster.dir) ? pid : undefined;
  } catch {
    return undefined;
  }
}

const SERVED_BEFORE_USE = [
  '/api/v1/namespaces',
  '/api/v1/secrets',
  '/apis/apps/v1/deployments',
  '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
];

function logTail(file: string, lines = 15): string {
  if (!existsSync(file)) return '(no log)';
  return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
}

function spawnDetached(cluster: LocalCluster, proc: ProcessName, bin: string, args: string[]): void {
  const logFile = path.join(cluster.dir, `${proc}.log`);
  const fd = openSync(logFile, 'a');
  // Detached in its own process group: the cluster outlives the CLI that started it.
  const child = spawn(bin, args, { detached: true, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  if (child.pid === undefined) throw new Error(`could not start ${bin}`);
  writeFileSync(pidFile(cluster, proc), String(child.pid));
  child.unref();
}

async function waitFor(what: string, check: () => Promise<boolean>, cluster: LocalCluster, proc: ProcessName): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  let delay = 50;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    if (livePid(cluster, proc) === undefined) {
      throw new Error(
        `${proc} of cluster '${cluster.name}' exited while starting; last log lines:\n${logTail(path.join(cluster.dir, `${proc}.log`))}`,
      );
    }
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 500);
  }
  throw new Error(
    `${what} of cluster '${cluster.name}' was not ready after ${START_TIMEOUT_MS / 1000} s; last log lines:\n${logTail(path.join(cluster.dir, `${proc}.log`))}`,
  );
}

function httpGet(url: string, options: https.RequestOptions = {}): Promise<{ status: number; body: string }> {
  const mod = url.startsWith('https:') ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.get(url, { ...options, timeout: 2000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

/** GET a path on the cluster's API server as the admin user. */
export function adminGet(cluster: LocalCluster, urlPath: string): Promise<{ status: number; body: string }> {
  const pki = pkiPaths(cluster.dir);
  return httpGet(`${cluster.server}${urlPath}`, { ca: readPem(pki.caCert), cert: readPem(pki.adminCert), key: readPem(pki.adminKey) });
}

function writeKubeconfig(cluster: LocalCluster): void {
  const pki = pkiPaths(cluster.dir);
  const b64 = (file: string): string => Buffer.from(readPem(file)).toString('base64');
  writeFileSync(
    cluster.kubeconfig,
    `apiVersion: v1
kind: Config
clusters:
- name: ${cluster.name}
  cluster:
    server: ${cluster.server}
    certificate-authority-data: ${b64(pki.caCert)}
users:
- name: ${cluster.name}-admin
  user:
    client-certificate-data: ${b64(pki.adminCert)}
    client-key-data: ${b64(pki.adminKey)}
contexts:
- name: ${cluster.name}
  context:
    cluster: ${cluster.name}
    user: ${cluster.name}-admin
current-context: ${cluster.name}
`,
    { mode: 0o600 },
  );
}

async function startProcesses(cluster: LocalCluster, bins: Binaries, log: Log): Promise<void> {
  const pki = pkiPaths(cluster.dir);
  const { ports } = cluster;
  const needed: [ProcessName, number][] = [];
  if (!livePid(cluster, 'etcd')) needed.push(['etcd', ports.etcdClient], ['etcd', ports.etcdPeer]);
  if (!livePid(cluster, 'kube-apiserver')) needed.push(['kube-apiserver', ports.apiserver]);
  for (const [proc, port] of needed) {
    if (!(await portIsFree(port))) {
      throw new Error(
        `port ${port} needed by ${proc} of cluster '${cluster.name}' is already in use; stop whatever holds it or run 'npm run clusters -- down ${cluster.name}'`,
      );
    }
  }

  if (!livePid(cluster, 'etcd')) {
    log(`[${cluster.name}] starting etcd on 127.0.0.1:${ports.etcdClient}`);
    const client = `http://127.0.0.1:${ports.etcdClient}`;
    const peer = `http://127.0.0.1:${ports.etcdPeer}`;
    spawnDetached(cluster, 'etcd', bins.etcd, [
      '--name',
      cluster.name,
      '--data-dir',
      path.join(cluster.dir, 'etcd-data'),
      '--listen-client-urls',
      client,
      '--advertise-client-urls',
      client,
      '--listen-peer-urls',
      peer,
      '--initial-advertise-peer-urls',
      peer,
      '--initial-cluster',
      `${cluster.name}=${peer}`,
      // Test clusters trade durability for speed: no fsync, small backend.
      '--unsafe-no-fsync',
      '--quota-backend-bytes',
      String(1 << 30),
      '--log-level',
      'warn',
    ]);
  }
  await waitFor(
    'etcd',
    async () => (await httpGet(`http://127.0.0.1:${ports.etcdClient}/health`)).body.includes('"health":"true"'),
    cluster,
    'etcd',
  );

  if (!livePid(cluster, 'kube-apiserver')) {
    log(`[${cluster.name}] starting kube-apiserver on ${cluster.server}`);
    spawnDetached(cluster, 'kube-apiserver', bins.kubeApiserver, [
      '--bind-address=127.0.0.1',
      `--secure-port=${ports.apiserver}`,
      '--advertise-address=127.0.0.1',
      `--etcd-servers=http://127.0.0.1:${ports.etcdClient}`,
      `--cert-dir=${path.join(cluster.dir, 'apiserver-certs')}`,
      `--tls-cert-file=${pki.servingCert}`,
      `--tls-private-key-file=${pki.servingKey}`,
      `--client-ca-file=${pki.caCert}`,
      '--authorization-mode=RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${pki.serviceAccountPub}`,
      `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      '--service-cluster-ip-range=10.96.0.0/16',
      '--allow-privileged=true',
      '--v=0',
      ...auditFlags(cluster),
    ]);
  }
  await waitFor('kube-apiserver', async () => (await adminGet(cluster, '/readyz')).status === 200, cluster, 'kube-apiserver');
  // /readyz can pass while watch caches still answer "storage is (re)initializing"; a cluster is
  // handed out only once the kinds every client starts with can be listed.
  await waitFor(
    'kube-apiserver watch caches',
    async () => {
      const lists = await Promise.all(SERVED_BEFORE_USE.map((p) => adminGet(cluster, p)));
      return lists.every((r) => r.status === 200);
    },
    cluster,
    'kube-apiserver',
  );

  if (bins.kubeControllerManager && !livePid(cluster, 'kube-controller-manager')) {
    // Only controllers that act on the API alone: no pods ever run on a node-less control plane.
    spawnDetached(cluster, 'kube-controller-manager', bins.kubeControllerManager, [
      `--kubeconfig=${cluster.kubeconfig}`,
      '--controllers=garbage-collector-controller,namespace-controller,serviceaccount-controller,root-ca-certificate-publisher-controller,clusterrole-aggregation-controller',
      '--leader-elect=false',
      '--secure-port=0',
      `--root-ca-file=${pki.caCert}`,
      `--service-account-private-key-file=${pki.serviceAccountKey}`,
      '--v=0',
    ]);
  }
}

/**
 * PROVIDER_ROOK_AUDIT=1: the API server writes every write request (verb, URI, user, body) to
 * audit.log in the cluster's folder. For finding out which writes a claim costs; off by default.
 */
function auditFlags(cluster: LocalCluster): string[] {
  if (process.env.PROVIDER_ROOK_AUDIT !== '1') return [];
  const policy = path.join(cluster.dir, 'audit-policy.yaml');
  const writes = ['create', 'update', 'patch', 'delete', 'deletecollection'];
  writeFileSync(
    policy,
    `apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Request\n  verbs: [${writes.join(', ')}]\n- level: None\n`,
  );
  return [`--audit-policy-file=${policy}`, `--audit-log-path=${path.join(cluster.dir, 'audit.log')}`];
}

/** Ports this process gave to clusters, so that clusters started together never share one. */
const handedOut = new Set<number>();

/** Starts (or reuses) one cluster per name; returns them in order. */
export async function up(names: string[], log: Log = quiet): Promise<LocalCluster[]> {
  const bins = await ensureBinaries(log);
  return Promise.all(
    names.map(async (name) => {
      const cluster = clusterOf(name);
      mkdirSync(cluster.dir, { recursive: true });
      await ensurePki(cluster.dir, name);
      if (cluster.ports.apiserver === 0) {
        const pick = async (): Promise<number> => {
          const port = await stablePort(handedOut);
          handedOut.add(port);
          return port;
        };
        cluster.ports = { apiserver: await pick(), etcdClient: await pick(), etcdPeer: await pick() };
        cluster.server = `https://127.0.0.1:${cluster.ports.apiserver}`;
        writeFileSync(path.join(cluster.dir, 'cluster.json'), JSON.stringify({ name, ports: cluster.ports }, null, 2));
      }
      writeKubeconfig(cluster);
      await startProcesses(cluster, bins, log);
      return cluster;
    }),
  );
}

async function kill(cluster: LocalCluster, proc: ProcessName): Promise<void> {
  const pid = livePid(cluster, proc);
  if (pid !== undefined) {
    const signal = (sig: NodeJS.Signals): void => {
      try {
        process.kill(-pid, sig);
      } catch {
        /* already gone */
      }
    };
    signal('SIGTERM');
    const deadline = Date.now() + 10_000;
    while (livePid(cluster, proc) !== undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    if (livePid(cluster, proc) !== undefined) signal('SIGKILL');
    while (livePid(cluster, proc) !== undefined) await new Promise((r) => setTimeout(r, 20));
  }
  rmSync(pidFile(cluster, proc), { force: true });
}

/** Stops a cluster's processes, keeping its data, ports and certificates. */
export async function stop(name: string): Promise<void> {
  const cluster = clusterOf(name);
  await kill(cluster, 'kube-controller-manager');
  await kill(cluster, 'kube-apiserver');
  await kill(cluster, 'etcd');
}

/** Restarts a stopped cluster on the same ports with the same data. */
export async function start(name: string, log: Log = quiet): Promise<LocalCluster> {
  const cluster = clusterOf(name);
  if (!existsSync(path.join(cluster.dir, 'cluster.json')))
    throw new Error(`no cluster '${name}'; create it with 'npm run clusters -- up ${name}'`);
  await startProcesses(cluster, await ensureBinaries(log), log);
  return cluster;
}

/** Stops and removes clusters (all known ones when no name is given). */
export async function down(names: string[] = knownClusters()): Promise<void> {
  await Promise.all(
    names.map(async (name) => {
      await stop(name);
      rmSync(clusterOf(name).dir, { recursive: true, force: true });
    }),
  );
}

export function status(): ClusterStatus[] {
  return knownClusters().map((name) => {
    const cluster = clusterOf(name);
    return {
      ...cluster,
      running: {
        etcd: livePid(cluster, 'etcd'),
        'kube-apiserver': livePid(cluster, 'kube-apiserver'),
        'kube-controller-manager': livePid(cluster, 'kube-controller-manager'),
      },
    };
  });
}

/** Looks up an existing cluster without starting anything. */
export function get(name: string): LocalCluster {
  const cluster = clusterOf(name);
  if (!existsSync(cluster.kubeconfig)) throw new Error(`no cluster '${name}'`);
  return cluster;
}
