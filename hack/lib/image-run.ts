// Runs the image `make image` built, as the chart's Deployment runs it (make image-run, and
// test/integration/image.test.ts): with podman or docker where one works (a user's machine), else
// without a container engine. Podman and crun cannot run here (setting
// RLIMIT_NOFILE is not permitted, and crun refuses the machine's hybrid cgroups), so: skopeo copies
// the archive to an OCI layout, umoci unpacks it into a root filesystem and an OCI runtime config
// made from the image's own config (entry point, user, working directory, environment), and
// bubblewrap runs that: the root filesystem read-only, the image's user in a user namespace, every
// capability dropped, no new privileges, a PID namespace in which node is PID 1, and only /proc,
// /dev and the ServiceAccount's token mounted, as a kubelet would. The arguments are the chart's
// Deployment's (config/provider/provider-rook.yaml), but for the metrics address (a free loopback
// port: the network is the host's) and the loopback refusal (the local targets are on loopback). The
// API server is reached in-cluster: KUBERNETES_SERVICE_HOST/PORT and a ServiceAccount token bound to
// the chart's own roles.
import { fileURLToPath } from 'node:url';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as yaml from 'js-yaml';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { resourcePath, ServiceAccounts } from '../../src/kit/kube/resources.ts';
import { imageArchive, imageRef, IMAGE } from './image-spec.ts';
import { applyManifests, type Manifest } from '../../test/kit/manifests.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const runDir = path.join(repoRoot, '.local', 'image', 'run');
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

interface RuntimeConfig {
  process: { args: string[]; env?: string[]; cwd: string; user: { uid: number; gid: number } };
}
export interface UnpackedImage {
  rootfs: string;
  process: RuntimeConfig['process'];
  digest: string;
}

/** The archive, unpacked: its root filesystem and the runtime config umoci derives from the image's config. */
export function unpackImage(archive = imageArchive): UnpackedImage {
  if (!existsSync(archive)) throw new Error(`${archive} is missing: run make image first`);
  rmSync(runDir, { recursive: true, force: true });
  mkdirSync(runDir, { recursive: true });
  const layout = `${path.join(runDir, 'oci')}:${IMAGE.tag}`;
  execFileSync('skopeo', ['copy', '--quiet', `oci-archive:${archive}:${imageRef}`, `oci:${layout}`]);
  const bundle = path.join(runDir, 'bundle');
  execFileSync('umoci', ['unpack', '--image', layout, bundle], { stdio: 'ignore' });
  const config = JSON.parse(readFileSync(path.join(bundle, 'config.json'), 'utf8')) as RuntimeConfig;
  const index = JSON.parse(readFileSync(path.join(runDir, 'oci', 'index.json'), 'utf8')) as { manifests: { digest: string }[] };
  return { rootfs: path.join(bundle, 'rootfs'), process: config.process, digest: index.manifests[0]!.digest };
}

type Container = {
  args: string[];
  securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean; capabilities?: { drop?: string[] } };
  volumeMounts?: { name: string; mountPath: string }[];
};
type DeploymentDoc = KubeObjectLike & {
  spec: {
    template: {
      spec: {
        serviceAccountName: string;
        terminationGracePeriodSeconds?: number;
        securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
        containers: Container[];
        volumes?: { name: string; emptyDir?: object }[];
      };
    };
  };
};

/** The chart rendered with its defaults (config/provider/provider-rook.yaml): its Deployment, and everything else it installs. */
export function chart(): { deployment: DeploymentDoc; others: Manifest[] } {
  const docs = (
    yaml.loadAll(readFileSync(path.join(repoRoot, 'config', 'provider', 'provider-rook.yaml'), 'utf8')) as KubeObjectLike[]
  ).filter(Boolean);
  const deployment = docs.find((d) => d.kind === 'Deployment') as DeploymentDoc;
  return { deployment, others: docs.filter((d) => d.kind !== 'Deployment') as Manifest[] };
}

/** Installs what the chart installs besides its Deployment (namespace, ServiceAccount, roles, admission policy), and returns a token of its ServiceAccount. */
export async function installChart(control: KubeClient): Promise<{ namespace: string; token: string }> {
  const { deployment, others } = chart();
  const namespace = deployment.metadata.namespace!;
  await applyManifests(control, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }, ...others]);
  const sa = deployment.spec.template.spec.serviceAccountName;
  const review = await control.request<{ status: { token: string } }>('POST', resourcePath(ServiceAccounts, namespace, sa, 'token'), {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  });
  return { namespace, token: review.status.token };
}

export interface RunningImage {
  /** The host's pid of the container's PID 1 (node). */
  pid: number;
  metrics: string;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** What a kubelet does on deletion: SIGTERM, then SIGKILL after the grace period. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number; killed: boolean }>;
  graceSeconds: number;
  /** What the kernel says of the container's PID 1: its user inside, its effective capabilities, whether / is read-only. */
  confinement(): Confinement | undefined;
}

export interface Confinement {
  uid: number;
  gid: number;
  capEff: string;
  noNewPrivs: boolean;
  readOnlyRoot: boolean;
}

/** From /proc: the id the container's user maps to inside its user namespace, CapEff, NoNewPrivs and the root mount's options. */
function confinementOf(pid: number): Confinement | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => new RegExp(`^${name}:\\s*(.+)$`, 'm').exec(status)?.[1]?.trim() ?? '';
    // The id inside the process's user namespace: its host id (status) through the namespace's map (inside outside count).
    const inside = (file: string, host: number) => {
      for (const line of readFileSync(`/proc/${pid}/${file}`, 'utf8').trim().split('\n')) {
        const [i, o, n] = line.trim().split(/\s+/).map(Number) as [number, number, number];
        if (host >= o && host < o + n) return i + (host - o);
      }
      return NaN;
    };
    const hostId = (name: string) => Number(field(name).split(/\s+/)[0]);
    const root = readFileSync(`/proc/${pid}/mountinfo`, 'utf8')
      .split('\n')
      .map((l) => l.split(' '))
      .find((f) => f[4] === '/');
    return {
      uid: inside('uid_map', hostId('Uid')),
      gid: inside('gid_map', hostId('Gid')),
      capEff: field('CapEff'),
      noNewPrivs: field('NoNewPrivs') === '1',
      readOnlyRoot: Boolean(root?.[5]?.split(',').includes('ro')),
    };
  } catch {
    return undefined;
  }
}

/** The arguments the chart's container gets, with this machine's two differences (see the top of this file). */
export function chartArgs(metrics: string): string[] {
  return chart().deployment.spec.template.spec.containers[0]!.args.map((a) =>
    a.startsWith('--metrics-addr=')
      ? `--metrics-addr=${metrics}`
      : a.startsWith('--refuse-endpoint-ranges=')
        ? '--refuse-endpoint-ranges='
        : a,
  );
}

/** Runs the unpacked image under bubblewrap as the chart's Deployment says; `args` replaces the chart's (bad-input runs). */
export function runImage(
  image: UnpackedImage,
  opts: { server: string; caPem: string; token: string; namespace: string; metricsPort: number; args?: string[] },
): RunningImage {
  const { deployment } = chart();
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0]!;
  const sc = container.securityContext ?? {};
  // The pod's user: runAsUser if it sets one, else the image's (runAsNonRoot holds it to non-root).
  const uid = pod.securityContext?.runAsUser ?? image.process.user.uid;
  if (pod.securityContext?.runAsNonRoot && uid === 0) throw new Error('the chart says runAsNonRoot, and the image runs as root');
  const sa = path.join(runDir, 'serviceaccount');
  mkdirSync(sa, { recursive: true });
  writeFileSync(path.join(sa, 'token'), opts.token);
  writeFileSync(path.join(sa, 'ca.crt'), opts.caPem);
  writeFileSync(path.join(sa, 'namespace'), opts.namespace);
  const url = new URL(opts.server);
  const metrics = `127.0.0.1:${opts.metricsPort}`;
  const env = [...(image.process.env ?? []), `KUBERNETES_SERVICE_HOST=${url.hostname}`, `KUBERNETES_SERVICE_PORT=${url.port}`];
  const emptyDirs = new Set((pod.volumes ?? []).filter((v) => v.emptyDir).map((v) => v.name));
  const bwrap = [
    sc.readOnlyRootFilesystem ? '--ro-bind' : '--bind',
    image.rootfs,
    '/',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    ...(container.volumeMounts ?? []).filter((m) => emptyDirs.has(m.name)).flatMap((m) => ['--tmpfs', m.mountPath]),
    '--ro-bind',
    sa,
    SERVICE_ACCOUNT_DIR,
    '--unshare-user',
    '--uid',
    String(uid),
    '--gid',
    String(image.process.user.gid),
    '--unshare-pid',
    '--as-pid-1',
    '--unshare-ipc',
    '--unshare-uts',
    '--die-with-parent',
    '--new-session',
    ...(sc.capabilities?.drop?.includes('ALL') ? ['--cap-drop', 'ALL'] : []),
    '--clearenv',
    ...env.flatMap((e) => ['--setenv', e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
    '--chdir',
    image.process.cwd,
    '--',
    ...image.process.args,
    ...(opts.args ?? chartArgs(metrics)),
  ];
  const tmpfs = (container.volumeMounts ?? []).filter((m) => emptyDirs.has(m.name)).map((m) => m.mountPath);
  const engine = containerEngine();
  // Where a container engine works (a user's machine), it runs the image itself, with the same settings.
  const engineRun = engine && [
    'run',
    '--rm',
    '--name',
    ENGINE_NAME,
    '--network',
    'host',
    ...(sc.readOnlyRootFilesystem ? ['--read-only'] : []),
    ...(sc.capabilities?.drop?.includes('ALL') ? ['--cap-drop', 'ALL'] : []),
    ...(sc.allowPrivilegeEscalation === false ? ['--security-opt', 'no-new-privileges'] : []),
    '--user',
    `${uid}:${image.process.user.gid}`,
    ...tmpfs.flatMap((t) => ['--tmpfs', t]),
    '-v',
    `${sa}:${SERVICE_ACCOUNT_DIR}:ro`,
    ...[`KUBERNETES_SERVICE_HOST=${url.hostname}`, `KUBERNETES_SERVICE_PORT=${url.port}`].flatMap((e) => ['-e', e]),
    imageRef,
    ...(opts.args ?? chartArgs(metrics)),
  ];
  if (engine) loadIntoEngine(engine);
  const child: ChildProcess = engine
    ? spawn(engine, engineRun as string[], { stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn('bwrap', bwrap, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const graceSeconds = pod.terminationGracePeriodSeconds ?? 30;
  const running: RunningImage = {
    pid: child.pid!,
    metrics,
    output: () => out,
    exited,
    graceSeconds,
    confinement: () => confinementOf((engine ? enginePid(engine) : containerInit(child.pid!)) ?? child.pid!),
    async stop() {
      const started = Date.now();
      // As a kubelet: SIGTERM to the container's PID 1, SIGKILL after the grace period (through the engine, which owns it, when there is one).
      const signal = (sig: 'TERM' | 'KILL') => {
        try {
          if (engine) execFileSync(engine, ['kill', '--signal', sig, ENGINE_NAME], { stdio: 'ignore' });
          else process.kill(containerInit(child.pid!) ?? child.pid!, `SIG${sig}`);
        } catch {
          // gone already
        }
      };
      signal('TERM');
      let killed = false;
      const timer = setTimeout(() => {
        killed = true;
        signal('KILL');
        child.kill('SIGKILL');
      }, graceSeconds * 1000);
      const result = await exited;
      clearTimeout(timer);
      return { ...result, ms: Date.now() - started, killed };
    },
  };
  return running;
}

const ENGINE_NAME = 'provider-rook-image-run';

/**
 * A container engine that runs containers here: podman or docker, if `info` answers. None does on
 * this project's machines (podman cannot set RLIMIT_NOFILE, crun refuses the hybrid cgroups), so
 * bubblewrap runs the image there; this path is a user's.
 */
export function containerEngine(): 'podman' | 'docker' | undefined {
  if (process.env.IMAGE_RUN_ENGINE === 'bwrap') return undefined;
  for (const engine of ['podman', 'docker'] as const) {
    try {
      execFileSync(engine, ['info'], { stdio: 'ignore', timeout: 15_000 });
      return engine;
    } catch {
      // not installed, or cannot run here
    }
  }
  return undefined;
}

/** The archive into the engine's store, as the chart's image reference. */
function loadIntoEngine(engine: 'podman' | 'docker'): void {
  execFileSync('skopeo', [
    'copy',
    '--quiet',
    `oci-archive:${imageArchive}:${imageRef}`,
    engine === 'podman' ? `containers-storage:${imageRef}` : `docker-daemon:${imageRef}`,
  ]);
  try {
    execFileSync(engine, ['rm', '--force', ENGINE_NAME], { stdio: 'ignore' }); // an earlier run's, if any
  } catch {
    // none
  }
}

/** The container's PID 1 as the host sees it, from the engine. */
function enginePid(engine: string): number | undefined {
  try {
    const pid = Number(execFileSync(engine, ['inspect', '--format', '{{.State.Pid}}', ENGINE_NAME], { encoding: 'utf8' }).trim());
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** The container's PID 1 as the host sees it: bubblewrap's child. */
function containerInit(bwrapPid: number): number | undefined {
  try {
    for (const task of readdirSync(`/proc/${bwrapPid}/task`)) {
      const children = readFileSync(`/proc/${bwrapPid}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
      if (children.length) return Number(children[0]);
    }
  } catch {
    // bubblewrap is gone
  }
  return undefined;
}
