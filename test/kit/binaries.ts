// Finds or builds the control-plane binaries that local clusters run, and the S3 server the tests run.
// KUBEBUILDER_ASSETS wins when set; otherwise we build once from the Go module proxy into a cache
// outside the repo, keyed by the pinned versions so a version bump never reuses stale binaries.
import { fileURLToPath } from 'node:url';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';

const toolsDir = fileURLToPath(new URL('../../hack/tools', import.meta.url));
const s3ToolsDir = fileURLToPath(new URL('../../hack/tools-s3', import.meta.url));
/** Bump when the way we build changes, so caches built the old way are not reused. */
const RECIPE = 'r2';

export interface Binaries {
  kubeApiserver: string;
  etcd: string;
  /** Runs only the API-level controllers (GC, namespace, service accounts); absent with KUBEBUILDER_ASSETS. */
  kubeControllerManager?: string;
}

/** The versions pinned by hack/tools/go.mod, e.g. { kubernetes: 'v1.35.4', etcd: 'v3.6.5' }. */
export function pinnedVersions(): { kubernetes: string; etcd: string } {
  const mod = readFileSync(path.join(toolsDir, 'go.mod'), 'utf8');
  const pin = (module: string): string => {
    const match = new RegExp(`^\\s*${module.replaceAll('.', '\\.')} (v\\S+)`, 'm').exec(mod);
    if (!match?.[1]) throw new Error(`hack/tools/go.mod does not pin ${module}`);
    return match[1];
  };
  return { kubernetes: pin('k8s.io/kubernetes'), etcd: pin('go.etcd.io/etcd/server/v3') };
}

const cacheBase = (): string =>
  process.env.PROVIDER_ROOK_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'), 'provider-rook');

export function cacheDir(): string {
  const { kubernetes, etcd } = pinnedVersions();
  return path.join(cacheBase(), `k8s-${kubernetes}-etcd-${etcd}-${RECIPE}`);
}

/** The helm that lints, renders and dry-runs charts/provider-rook (built from the Go module proxy). */
export const HELM_VERSION = 'v3.22.0';

/** $HELM when set; else helm HELM_VERSION from the cache, built there once with `go install`. */
export async function ensureHelm(log: (line: string) => void = (l) => console.error(l)): Promise<string> {
  if (process.env.HELM) return process.env.HELM;
  const dir = path.join(cacheBase(), `helm-${HELM_VERSION}`);
  const bin = path.join(dir, 'helm');
  if (existsSync(bin)) return bin;
  log(`Building helm ${HELM_VERSION} into ${dir} (first run only; this takes a few minutes)...`);
  const scratch = `${dir}.partial-${process.pid}`;
  const started = Date.now();
  const result = await execa(
    process.env.GO ?? 'go',
    ['install', '-trimpath', '-ldflags=-s -w', `helm.sh/helm/v3/cmd/helm@${HELM_VERSION}`],
    {
      env: { CGO_ENABLED: '0', GOBIN: scratch, GOFLAGS: '' },
      all: true,
      reject: false,
    },
  );
  if (result.exitCode !== 0) {
    rmSync(scratch, { recursive: true, force: true });
    throw new Error(`building helm failed (or set HELM to a helm binary):\n${String(result.all).split('\n').slice(-20).join('\n')}`);
  }
  rmSync(dir, { recursive: true, force: true });
  renameSync(scratch, dir);
  log(`Built helm in ${Math.round((Date.now() - started) / 1000)} s.`);
  return bin;
}

export async function ensureBinaries(log: (line: string) => void = (l) => console.error(l)): Promise<Binaries> {
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (assets) {
    const bins = { kubeApiserver: path.join(assets, 'kube-apiserver'), etcd: path.join(assets, 'etcd') };
    for (const bin of Object.values(bins)) {
      if (!existsSync(bin)) throw new Error(`KUBEBUILDER_ASSETS=${assets} has no ${path.basename(bin)}`);
    }
    const kcm = path.join(assets, 'kube-controller-manager');
    return existsSync(kcm) ? { ...bins, kubeControllerManager: kcm } : bins;
  }
  const dir = cacheDir();
  const bins: Required<Binaries> = {
    kubeApiserver: path.join(dir, 'kube-apiserver'),
    etcd: path.join(dir, 'etcd'),
    kubeControllerManager: path.join(dir, 'kube-controller-manager'),
  };
  if (Object.values(bins).every((bin) => existsSync(bin))) return bins;
  await build(dir, log);
  return bins;
}

async function build(dir: string, log: (line: string) => void): Promise<void> {
  const { kubernetes, etcd } = pinnedVersions();
  log(
    `Building kube-apiserver ${kubernetes}, kube-controller-manager ${kubernetes} and etcd ${etcd} into ${dir} (first run only; this takes several minutes)...`,
  );
  // Stamp the release into the binaries, as Kubernetes' own build does (GET /version reports it).
  const [major, minor] = kubernetes.slice(1).split('.');
  const v = 'k8s.io/component-base/version';
  const ldflags = `-s -w -X ${v}.gitVersion=${kubernetes} -X ${v}.gitMajor=${major} -X ${v}.gitMinor=${minor} -X ${v}.gitTreeState=clean`;
  const targets = ['k8s.io/kubernetes/cmd/kube-apiserver', 'k8s.io/kubernetes/cmd/kube-controller-manager', './cmd/etcd'];
  await goBuild({ module: toolsDir, dir, ldflags, targets, what: 'the control-plane binaries', override: 'KUBEBUILDER_ASSETS' }, log);
}

/** The SeaweedFS version hack/tools-s3/go.mod pins (a pseudo-version). */
export function weedVersion(): string {
  const mod = readFileSync(path.join(s3ToolsDir, 'go.mod'), 'utf8');
  const match = /^require github\.com\/seaweedfs\/seaweedfs (v\S+)/m.exec(mod);
  if (!match?.[1]) throw new Error('hack/tools-s3/go.mod does not pin github.com/seaweedfs/seaweedfs');
  return match[1];
}

/** $WEED when set; else SeaweedFS's weed (the tests' S3 server) from the cache, built there once from hack/tools-s3. */
export async function ensureWeed(log: (line: string) => void = (l) => console.error(l)): Promise<string> {
  if (process.env.WEED) return process.env.WEED;
  const dir = path.join(cacheBase(), `seaweedfs-${weedVersion()}`);
  const bin = path.join(dir, 'weed');
  if (existsSync(bin)) return bin;
  log(`Building SeaweedFS's weed ${weedVersion()} into ${dir} (first run only; this takes several minutes)...`);
  const targets = ['github.com/seaweedfs/seaweedfs/weed'];
  await goBuild({ module: s3ToolsDir, dir, ldflags: '-s -w', targets, what: 'weed', override: 'WEED' }, log);
  return bin;
}

/** A `go build` of a tools module: what it builds, into which cache folder, and what a user may set instead. */
interface GoBuild {
  module: string;
  dir: string;
  ldflags: string;
  targets: string[];
  what: string;
  /** The variable that names ready-made binaries instead. */
  override: string;
}

/**
 * Builds into a scratch folder and renames it to dir, so an interrupted build never leaves a
 * half-filled cache; a line every 30 s shows it is alive.
 */
async function goBuild({ module, dir, ldflags, targets, what, override }: GoBuild, log: (line: string) => void): Promise<void> {
  const go = process.env.GO ?? 'go';
  try {
    await execa(go, ['version']);
  } catch {
    throw new Error(`${what} is not in ${dir} and '${go}' was not found to build it; install Go or set ${override}`);
  }
  const scratch = `${dir}.partial-${process.pid}`;
  mkdirSync(scratch, { recursive: true });
  const started = Date.now();
  const child = execa(go, ['build', '-trimpath', `-ldflags=${ldflags}`, '-o', scratch + path.sep, ...targets], {
    cwd: module,
    env: { CGO_ENABLED: '0', GOFLAGS: '-mod=mod' },
    all: true,
    reject: false,
  });
  const ticker = setInterval(() => log(`  ... still building ${what} (${Math.round((Date.now() - started) / 1000)} s)`), 30_000);
  const result = await child.finally(() => clearInterval(ticker));
  if (result.exitCode !== 0) {
    rmSync(scratch, { recursive: true, force: true });
    throw new Error(`building ${what} failed (or set ${override}):\n${String(result.all).split('\n').slice(-20).join('\n')}`);
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(path.dirname(dir), { recursive: true });
  renameSync(scratch, dir);
  log(`Built ${what} in ${Math.round((Date.now() - started) / 1000)} s.`);
}
