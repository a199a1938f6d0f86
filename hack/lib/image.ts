// Builds the container image without a Docker daemon (make image), from what this machine's
// registries give: a base of only the Debian libraries the node binary links against (mmdebstrap,
// --variant=extract: no shell, no package manager), the node binary of the node@24 npm package
// (stripped of its symbol table), and /app (hack/lib/image-spec.ts says what). Assembled as an OCI
// image with umoci, three layers (base, node, app), every timestamp the commit's, and written as an
// OCI archive with skopeo. Two builds of one commit give the same digest, as long as Debian's
// bookworm mirror serves the same package versions (it changes when a point release or security
// update lands).
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { pruneModules } from '../prune-modules.ts';
import { IMAGE, imageArchive, imageRef } from './image-spec.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const work = path.join(repoRoot, '.local', 'image');
const DEBIAN = 'http://deb.debian.org/debian';
// The builder's architecture: the node binary is its, so the base and the image config say so too.
const ARCH = ({ x64: 'amd64', arm64: 'arm64' } as Record<string, string>)[process.arch] ?? process.arch;
const TRIPLET = ARCH === 'arm64' ? 'aarch64-linux-gnu' : 'x86_64-linux-gnu';

const run = (cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): string =>
  execFileSync(cmd, args, {
    cwd: opts.cwd ?? repoRoot,
    env: { ...process.env, ...opts.env },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });

/** The tools this needs, from Debian's packages; `make image` says how to get them. */
export function missingImageTools(): string[] {
  return ['mmdebstrap', 'umoci', 'skopeo', 'strip'].filter((t) => {
    try {
      run('sh', ['-c', `command -v ${t}`]);
      return false;
    } catch {
      return true;
    }
  });
}

/** The commit's time: every file and the image config carry it, so the digest depends on content only. */
function sourceDateEpoch(): number {
  try {
    return Number(run('git', ['log', '-1', '--format=%ct']).trim());
  } catch {
    return 0;
  }
}

/** Every path under dir: owned by root, readable by all and writable by root only (whatever the builder's umask), mtime fixed. */
function normalize(dir: string, epoch: number): void {
  run('chown', ['-R', '-h', '0:0', dir]);
  run('chmod', ['-R', 'u+rwX,go+rX,go-w', dir]);
  run('find', [dir, '-exec', 'touch', '-h', '-d', `@${epoch}`, '{}', '+']);
}

/** The Debian libraries node needs, and the mount points and users a runtime expects; nothing else. */
function base(dir: string, epoch: number): void {
  run(
    'mmdebstrap',
    [
      '--variant=extract',
      `--architectures=${ARCH}`,
      `--include=${IMAGE.packages.join(',')}`,
      '--mode=root',
      '--format=directory',
      '--quiet',
      'bookworm',
      dir,
      DEBIAN,
    ],
    {
      env: { SOURCE_DATE_EPOCH: String(epoch) },
    },
  );
  // What extracting packages leaves that nothing runs: apt and dpkg state, docs, locales, gconv modules, device nodes.
  for (const p of [
    'etc/apt',
    'etc/dpkg',
    'var',
    'usr/share',
    `usr/lib/${TRIPLET}/gconv`,
    'dev',
    'etc/fstab',
    'etc/hostname',
    'etc/resolv.conf',
  ])
    rmSync(path.join(dir, p), { recursive: true, force: true });
  for (const m of IMAGE.mountPoints) mkdirSync(path.join(dir, m), { recursive: true });
  chmodSync(path.join(dir, 'tmp'), 0o1777);
  // Without it glibc reads /etc/hosts only when DNS fails (extracting runs no maintainer script to write it).
  writeFileSync(path.join(dir, 'etc', 'nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files dns\n');
  const [uid, gid] = IMAGE.user.split(':');
  writeFileSync(
    path.join(dir, 'etc', 'passwd'),
    `root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:${uid}:${gid}:nonroot:/home/nonroot:/sbin/nologin\n`,
  );
  writeFileSync(path.join(dir, 'etc', 'group'), `root:x:0:\nnonroot:x:${gid}:\n`);
  normalize(dir, epoch);
}

/** /app: the compiled code without source maps, production dependencies only, the operator bundles, package.json. */
function app(dir: string, epoch: number): void {
  run(process.execPath, [
    path.join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc'),
    '-p',
    'tsconfig.build.json',
    '--sourceMap',
    'false',
    '--outDir',
    path.join(dir, 'dist'),
  ]);
  for (const f of ['package.json', 'package-lock.json']) cpSync(path.join(repoRoot, f), path.join(dir, f));
  cpSync(path.join(repoRoot, 'config', 'operators'), path.join(dir, 'config', 'operators'), { recursive: true });
  const npm = path.join(repoRoot, 'node_modules', 'npm', 'bin', 'npm-cli.js');
  const npmCli = existsSync(npm) ? [process.execPath, npm] : ['npm'];
  run(npmCli[0]!, [...npmCli.slice(1), 'ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: dir,
  });
  rmSync(path.join(dir, 'package-lock.json'));
  pruneModules(path.join(dir, 'node_modules'));
  // npm's own record of what it installed: nothing reads it at run time.
  rmSync(path.join(dir, 'node_modules', '.package-lock.json'), { force: true });
  normalize(dir, epoch);
}

/** The node binary of the node@24 devDependency, without its symbol table (18 MiB; nothing here reads it). */
function nodeBinary(dir: string, epoch: number): void {
  const target = path.join(dir, 'bin', 'node');
  mkdirSync(path.dirname(target), { recursive: true });
  run('strip', ['-o', target, realpathSync(path.join(repoRoot, 'node_modules', 'node', 'bin', 'node'))]);
  normalize(dir, epoch);
}

export interface BuiltImage {
  archive: string;
  /** The manifest's digest: what a registry and a runtime name the image by. */
  digest: string;
  seconds: number;
}

/** Builds the image into imageArchive; the OCI layout stays in .local/image/oci for image-run. */
export function buildImage(log: (line: string) => void = () => {}): BuiltImage {
  const missing = missingImageTools();
  if (missing.length) throw new Error(`make image needs ${missing.join(', ')}: apt-get install mmdebstrap umoci skopeo binutils`);
  const started = Date.now();
  const epoch = sourceDateEpoch();
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const [baseDir, nodeDir, appDir, layout] = ['base', 'nodejs', 'app', 'oci'].map((d) => path.join(work, d)) as [
    string,
    string,
    string,
    string,
  ];
  // The base and node layers do not depend on the commit: a fixed time keeps them the same blobs from one commit to the next.
  log('base: the Debian libraries node links against (mmdebstrap)');
  base(baseDir, 0);
  log('node: the node@24 binary, stripped');
  nodeBinary(nodeDir, 0);
  log('app: dist (tsc), production node_modules (npm ci --omit=dev), config/operators, package.json');
  mkdirSync(appDir);
  app(appDir, epoch);
  log('assembling the OCI image (umoci) and writing the archive (skopeo)');
  const image = `${layout}:${IMAGE.tag}`;
  const created = new Date(epoch * 1000).toISOString();
  run('umoci', ['init', '--layout', layout]);
  run('umoci', ['new', '--image', image]);
  for (const [src, dest] of [
    [baseDir, '/'],
    [nodeDir, path.dirname(path.dirname(IMAGE.node))],
    [appDir, IMAGE.workdir],
  ] as const) {
    run('umoci', [
      'insert',
      '--image',
      image,
      '--history.created',
      created,
      '--history.created_by',
      `provider-rook hack/lib/image.ts (${path.basename(src)})`,
      src,
      dest,
    ]);
  }
  run('umoci', [
    'config',
    '--image',
    image,
    '--created',
    created,
    '--author',
    'provider-rook',
    '--architecture',
    ARCH,
    '--os',
    'linux',
    '--config.user',
    IMAGE.user,
    '--config.workingdir',
    IMAGE.workdir,
    ...IMAGE.env.flatMap((e) => ['--config.env', e]),
    ...IMAGE.entrypoint.flatMap((a) => ['--config.entrypoint', a]),
    '--clear',
    'config.cmd',
    '--history.created',
    created,
    '--history.created_by',
    'provider-rook hack/lib/image.ts (config)',
  ]);
  run('umoci', ['gc', '--layout', layout]);
  rmSync(imageArchive, { force: true });
  run('skopeo', ['copy', '--quiet', `oci:${image}`, `oci-archive:${imageArchive}:${imageRef}`]);
  const index = JSON.parse(readFileSync(path.join(layout, 'index.json'), 'utf8')) as { manifests: { digest: string }[] };
  for (const d of [baseDir, nodeDir, appDir]) rmSync(d, { recursive: true, force: true });
  return { archive: imageArchive, digest: index.manifests[0]!.digest, seconds: (Date.now() - started) / 1000 };
}

/** Sizes, for the README: the archive, each layer (compressed), in the order they stack. */
export function imageSizes(): { archive: number; layers: { digest: string; size: number }[] } {
  const layout = path.join(work, 'oci');
  const index = JSON.parse(readFileSync(path.join(layout, 'index.json'), 'utf8')) as { manifests: { digest: string }[] };
  const blob = (digest: string) => path.join(layout, 'blobs', ...digest.split(':'));
  const manifest = JSON.parse(readFileSync(blob(index.manifests[0]!.digest), 'utf8')) as { layers: { digest: string; size: number }[] };
  void readdirSync;
  return { archive: statSync(imageArchive).size, layers: manifest.layers.map((l) => ({ digest: l.digest, size: l.size })) };
}
