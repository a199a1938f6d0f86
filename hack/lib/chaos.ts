// The chaos harness's parts: three local control planes (control, target A, target B), provider-rook
// replicas as their own processes (killed with SIGKILL, restarted), the operator stand-ins, one
// "world" of classes and Providers per scenario, and the invariants every scenario ends with.
import type { ObjectKey } from '../../src/kit/kube/object-key.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync } from 'node:fs';
import path from 'node:path';
import { BucketClasses, Buckets } from '../../src/app.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { ObjectStore } from '../../src/backends/rook-minio/api.ts';
import type { Bucket } from '../../src/apis/storage.ts';
import { RookObjectStores } from '../../src/backends/rook-minio/objectstore.ts';
import { KubeClient, type KubeObjectLike } from '../../src/kit/kube/client.ts';
import { kubeconfigFileAccess } from '../../src/kit/kube/config.ts';
import { Namespaces, Secrets } from '../../src/kit/kube/resources.ts';
import { LABEL_CONTROL_PLANE, LABEL_OWNER_UID } from '../../src/runtime/ownership/marks.ts';
import { Providers } from '../../src/runtime/system/provider-status.ts';
import { FakeMinioOperator } from '../../test/fakes/fake-minio-operator.ts';
import { freePort, repoRoot, start, stop, up, type LocalCluster } from '../../test/kit/cluster.ts';
import { eventually, type EventuallyOptions } from '../../test/kit/eventually.ts';
import { installCrds, installOperatorBundle, manifestFiles } from '../../test/kit/manifests.ts';
import { cond } from '../../test/kit/conditions.ts';

export const CLUSTERS = ['chaos-control', 'chaos-a', 'chaos-b'] as const;
export const workDir = path.join(repoRoot, '.local', 'chaos');

export type Conditioned = KubeObjectLike & {
  metadata: { uid?: string; labels?: Record<string, string>; finalizers?: string[]; deletionTimestamp?: string };
  status?: { bindingPhase?: string; conditions?: { type: string; status: string; reason: string; message?: string }[] };
};
export const isBound = (b: Conditioned | undefined): boolean => b?.status?.bindingPhase === 'Bound' && cond(b, 'Ready')?.status === 'True';

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** How the chaos harness waits (with eventually): up to timeoutMs, a try at least every maxDelayMs. */
export const within = (timeoutMs: number, maxDelayMs = 1_000): EventuallyOptions => ({ timeoutMs, delayMs: 100, maxDelayMs });

export function adminOf(cluster: LocalCluster): KubeClient {
  return new KubeClient(kubeconfigFileAccess(cluster.kubeconfig), { fieldManager: 'chaos-admin' });
}

/** The Provider Secret's keys for a target, as a platform team writes them (plain text). */
export function providerKeys(target: LocalCluster): Record<string, string> {
  const kc = kubeconfigFileAccess(target.kubeconfig);
  const text = (b64?: string): string => Buffer.from(b64 ?? '', 'base64').toString();
  return { endpoint: target.server, clusterCA: text(kc.caData), clientCert: text(kc.certData), clientKey: text(kc.keyData) };
}

export const secretOf = ({ namespace, name }: Required<ObjectKey>, keys: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace },
  type: 'Opaque',
  data: Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
});

/** One provider-rook process, started again after each kill, logging to its own file at debug level. */
export class Replica {
  private child?: ChildProcess;
  private exited: Promise<unknown> = Promise.resolve();
  private port = 0;
  starts = 0;
  readonly log: string;
  private readonly args: string[];

  /** `opts.nodeFlags`: Node's flags (none: Node's defaults); `opts.logLevel`: debug unless said (scenario 6 reads the logs). */
  constructor(name: string, control: LocalCluster, extraArgs: string[] = [], opts: { nodeFlags?: string[]; logLevel?: string } = {}) {
    this.log = path.join(workDir, `${name}.log`);
    this.args = [
      ...(opts.nodeFlags ?? []),
      path.join(repoRoot, 'src', 'main.ts'),
      '--kubeconfig',
      control.kubeconfig,
      '--poll',
      '10s',
      '--leak-interval',
      '20s',
      '--leak-grace',
      '10s',
      '--log-level',
      opts.logLevel ?? 'debug',
      ...extraArgs,
    ];
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.port = await freePort();
    const log = openSync(this.log, 'a');
    const child = spawn(process.execPath, [...this.args, '--metrics-addr', `127.0.0.1:${this.port}`], {
      cwd: repoRoot,
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    this.child = child;
    this.starts++;
    this.exited = new Promise((resolve) => child.once('exit', resolve));
  }

  async kill(): Promise<void> {
    if (!this.running) return;
    this.child!.kill('SIGKILL');
    await this.exited;
  }

  /** Freezes the process (SIGSTOP): its connections stay open and silent until resume(). */
  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  /** Its /metrics, as text. */
  async metricsText(): Promise<string> {
    return (await fetch(`http://127.0.0.1:${this.port}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
  }

  async metric(name: string): Promise<number | undefined> {
    const body = await this.metricsText();
    const line = body.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
    return line ? Number(line.split(' ').pop()) : undefined;
  }

  async healthy(): Promise<boolean> {
    return fetch(`http://127.0.0.1:${this.port}/healthz`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.ok,
      () => false,
    );
  }
}

export interface Target {
  name: 'a' | 'b';
  cluster: LocalCluster;
  admin: KubeClient;
  operator: FakeMinioOperator;
}

/** The clusters, shared by every scenario. */
/** The operator every target of the environment has, played without S3 servers; scenario 9 adds the others. */
export const ENV_OPERATOR = 'rook-minio';

export class ChaosEnv {
  readonly control: LocalCluster;
  readonly admin: KubeClient;
  readonly targets: Record<'a' | 'b', Target>;
  /** Every value a scenario generated or used that must never be shown (scenario 6 looks for them). */
  readonly secrets = new Set<string>();
  /** Text from Events and status, collected before a scenario cleans up (scenario 6 scans it). */
  readonly surfaces: string[] = [];
  readonly logs = new Set<string>();

  private constructor(control: LocalCluster, targets: Record<'a' | 'b', Target>) {
    this.control = control;
    this.admin = adminOf(control);
    this.targets = targets;
  }

  static async up(log: (line: string) => void): Promise<ChaosEnv> {
    rmSync(workDir, { recursive: true, force: true });
    mkdirSync(workDir, { recursive: true });
    const [control, a, b] = (await up([...CLUSTERS], log)) as [LocalCluster, LocalCluster, LocalCluster];
    await installCrds(adminOf(control), manifestFiles(path.join(repoRoot, 'crds')));
    const target = async (name: 'a' | 'b', cluster: LocalCluster): Promise<Target> => {
      const admin = adminOf(cluster);
      await installOperatorBundle(admin, ENV_OPERATOR);
      // No S3 servers (s3 off): the faults are provider-rook's and the API's; S3 is proven by the integration tests.
      const operator = new FakeMinioOperator(admin);
      await operator.start();
      return { name, cluster, admin, operator };
    };
    return new ChaosEnv(control, { a: await target('a', a), b: await target('b', b) });
  }

  /** Stops a target's API server (and etcd) until start(); its operator stand-in goes with it. */
  async stopTarget(t: Target): Promise<void> {
    await t.operator.stop();
    await stop(t.cluster.name);
  }

  async startTarget(t: Target): Promise<void> {
    await start(t.cluster.name);
    t.operator = new FakeMinioOperator(t.admin);
    await t.operator.start();
  }

  /** A scenario's own world (namespaces, Providers, classes) and a running provider-rook, logging where scenario 6 looks. */
  async scenario(tag: string, extraArgs: string[] = []): Promise<{ world: World; replica: Replica }> {
    const world = await new World(this, tag).create();
    const replica = new Replica(tag, this.control, extraArgs);
    this.logs.add(replica.log);
    await replica.start();
    return { world, replica };
  }

  async close(): Promise<void> {
    for (const t of Object.values(this.targets)) {
      await t.operator.stop();
      await t.admin.close();
    }
    await this.admin.close();
  }
}

/** A scenario's own namespaces, Providers for both targets, and a BucketClass per target. */
export class World {
  readonly platform: string;
  readonly app: string;
  private readonly env: ChaosEnv;

  constructor(env: ChaosEnv, tag: string) {
    this.env = env;
    this.platform = `chaos-${tag}-platform`;
    this.app = `chaos-${tag}-app`;
  }

  async create(): Promise<this> {
    const { admin } = this.env;
    for (const name of [this.platform, this.app])
      await admin.apply(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    for (const t of Object.values(this.env.targets)) {
      const keys = providerKeys(t.cluster);
      this.env.secrets.add(keys.clientKey!);
      await admin.apply(Secrets, secretOf({ namespace: this.platform, name: `target-${t.name}` }, keys));
      await admin.apply(Providers, {
        apiVersion: Providers.apiVersion,
        kind: 'Provider',
        metadata: { name: t.name, namespace: this.platform },
        spec: { credentialsSecretRef: { name: `target-${t.name}` } },
      });
      await admin.apply(kinds.ObjectStoreClass, {
        apiVersion: kinds.ObjectStoreClass.apiVersion,
        kind: 'ObjectStoreClass',
        metadata: { name: `on-${t.name}`, namespace: this.platform },
        spec: {
          scope: { nodeCount: 4 },
          targetNamespace: `${this.platform}-store`,
          providerRef: { name: t.name, namespace: this.platform },
        },
      });
      await admin.apply(BucketClasses, {
        apiVersion: BucketClasses.apiVersion,
        kind: 'BucketClass',
        metadata: { name: t.name, namespace: this.app },
        classRef: {
          kind: 'ObjectStoreClass',
          apiVersion: kinds.ObjectStoreClass.apiVersion,
          name: `on-${t.name}`,
          namespace: this.platform,
        },
      });
    }
    return this;
  }

  /** Creates claims at once (20 requests in flight), each of BucketClass `on` (a target's, or another); returns when they were created. */
  async claims(names: string[], on: string): Promise<Map<string, number>> {
    const created = new Map<string, number>();
    for (let i = 0; i < names.length; i += 20) {
      await Promise.all(
        names.slice(i, i + 20).map(async (name) => {
          await this.env.admin.create(Buckets, {
            apiVersion: Buckets.apiVersion,
            kind: 'Bucket',
            metadata: { name, namespace: this.app },
            spec: { classRef: { name: on }, writeConnectionSecretToRef: { name: `${name}-conn` } },
          });
          created.set(name, performance.now());
        }),
      );
    }
    return created;
  }

  listClaims = async (): Promise<(Bucket & Conditioned)[]> =>
    (await this.env.admin.list<Bucket & Conditioned>(Buckets, { namespace: this.app })).items;
  listManaged = async (): Promise<(ObjectStore & Conditioned)[]> =>
    (await this.env.admin.list<ObjectStore & Conditioned>(kinds.ObjectStore, { namespace: this.platform })).items;

  /** Our ObjectStores in a target (all namespaces), by the marks we put on them. */
  async targetObjects(t: Target): Promise<Conditioned[]> {
    return (await t.admin.list<Conditioned>(RookObjectStores, { labelSelector: LABEL_OWNER_UID })).items.filter(
      (o) => o.metadata.namespace === `${this.platform}-store` && o.metadata.labels?.[LABEL_CONTROL_PLANE] !== undefined,
    );
  }

  /** Waits until every named claim is Bound; returns when each was first seen Bound. */
  async bound(names: string[], timeoutMs: number): Promise<Map<string, number>> {
    const at = new Map<string, number>();
    await eventually(
      async () => {
        const claims = new Map((await this.listClaims()).map((c) => [c.metadata.name, c]));
        for (const n of names) if (!at.has(n) && isBound(claims.get(n))) at.set(n, performance.now());
        return at.size === names.length;
      },
      `${names.length} claims to be Bound`,
      within(timeoutMs, 100),
    ).catch(async (err: Error) => {
      const waiting = (await this.listClaims()).filter((c) => names.includes(c.metadata.name) && !isBound(c)).slice(0, 3);
      throw new Error(
        `${err.message}; e.g. ${waiting.map((c) => `${c.metadata.name}: ${JSON.stringify(c.status?.conditions ?? [])}`).join('; ')}`,
      );
    });
    return at;
  }

  /**
   * The invariants after any fault: every claim Bound; exactly one managed resource per claim and none
   * without one; exactly one target object per managed resource, in its own target, and none without a
   * live owner. Returns the violations (empty when all hold).
   */
  async violations(): Promise<string[]> {
    const out: string[] = [];
    const claims = await this.listClaims();
    const managed = await this.listManaged();
    for (const c of claims)
      if (!isBound(c)) out.push(`claim ${c.metadata.name} is not Bound (${JSON.stringify(c.status?.conditions ?? [])})`);
    const claimUids = new Set(claims.map((c) => c.metadata.uid));
    const perClaim = new Map<string, number>();
    for (const mr of managed) {
      const uid = (mr.spec as { claimRef?: { uid?: string } }).claimRef?.uid ?? '';
      perClaim.set(uid, (perClaim.get(uid) ?? 0) + 1);
      if (!claimUids.has(uid)) out.push(`managed resource ${mr.metadata.name} has no live claim`);
    }
    for (const c of claims) {
      const n = perClaim.get(c.metadata.uid!) ?? 0;
      if (n !== 1) out.push(`claim ${c.metadata.name} has ${n} managed resources`);
    }
    const managedUids = new Map(managed.map((m) => [m.metadata.uid!, m]));
    for (const t of Object.values(this.env.targets)) {
      const perOwner = new Map<string, number>();
      for (const o of await this.targetObjects(t)) {
        const owner = o.metadata.labels?.[LABEL_OWNER_UID] ?? '';
        perOwner.set(owner, (perOwner.get(owner) ?? 0) + 1);
        if (!managedUids.has(owner)) out.push(`target ${t.name}: ObjectStore ${o.metadata.name} has no live owner`);
      }
      for (const m of managed.filter((x) => x.spec.providerRef?.name === t.name)) {
        const n = perOwner.get(m.metadata.uid!) ?? 0;
        if (n !== 1) out.push(`managed resource ${m.metadata.name} has ${n} ObjectStores in target ${t.name}`);
      }
    }
    return out;
  }

  /** What is left after every claim was deleted: claims, managed resources, target objects, copied Secrets. */
  async leftovers(): Promise<string[]> {
    const left: string[] = [];
    for (const c of await this.listClaims())
      left.push(`claim ${c.metadata.name} (finalizers ${JSON.stringify(c.metadata.finalizers ?? [])})`);
    for (const m of await this.listManaged())
      left.push(`managed resource ${m.metadata.name} (finalizers ${JSON.stringify(m.metadata.finalizers ?? [])})`);
    for (const t of Object.values(this.env.targets))
      for (const o of await this.targetObjects(t)) left.push(`target ${t.name}: ObjectStore ${o.metadata.name}`);
    const copied = (await this.env.admin.list<KubeObjectLike>(Secrets, { namespace: this.app })).items.filter((s) =>
      s.metadata.name.endsWith('-conn'),
    );
    for (const s of copied) left.push(`Secret ${this.app}/${s.metadata.name}`);
    return left;
  }

  /** Remembers generated keys (connection Secrets) and the text of Events and status, for scenario 6. */
  async harvest(): Promise<void> {
    const { admin } = this.env;
    for (const s of (await admin.list<KubeObjectLike & { data?: Record<string, string> }>(Secrets, { namespace: this.app })).items) {
      for (const [key, value] of Object.entries(s.data ?? {})) {
        const text = Buffer.from(value, 'base64').toString();
        if (key === 'password' || (key === 'username' && text.length >= 8)) this.env.secrets.add(text);
      }
    }
    for (const c of [...(await this.listClaims()), ...(await this.listManaged())]) this.env.surfaces.push(JSON.stringify(c.status ?? {}));
    for (const p of (await admin.list<Conditioned>(Providers, { namespace: this.platform })).items)
      this.env.surfaces.push(JSON.stringify(p.status ?? {}));
  }
}

export const percentile = (xs: number[], p: number): number =>
  xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]! : NaN;
