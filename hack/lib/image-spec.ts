// The container image, as one description that both builds use: `make image` (hack/image.ts, no
// Docker daemon) and the Dockerfile, which a unit test keeps in step with this (entry point and
// Node's flags, user and group, working directory, files shipped).
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PROVIDER_NODE_FLAGS } from './node-flags.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string };

export const IMAGE = {
  /** What the chart's default image reference names (values.yaml image.repository, tag = appVersion). */
  name: 'provider-rook',
  tag: pkg.version,
  /** distroless's nonroot user and group; the chart sets runAsNonRoot and takes them from the image. */
  user: '65532:65532',
  workdir: '/app',
  /** Where the node binary lives, as in distroless's nodejs images. */
  node: '/nodejs/bin/node',
  entrypoint: ['/nodejs/bin/node', ...PROVIDER_NODE_FLAGS, 'dist/main.js'],
  env: ['NODE_ENV=production'],
  /** What /app holds: the compiled code (no source maps), production node_modules, the operator bundles, package.json. */
  files: ['dist', 'node_modules', 'config/operators', 'package.json'],
  /** Debian packages the node binary links against (ldd): the base layer holds these and nothing else of Debian. */
  packages: ['libc6', 'libstdc++6', 'libgcc-s1'],
  /** Empty directories a runtime mounts over: proc, dev, tmp, and the ServiceAccount's token (a read-only root has no room for new ones). */
  mountPoints: ['proc', 'dev', 'tmp', 'sys', 'var/run/secrets/kubernetes.io/serviceaccount'],
} as const;

export const imageRef = `${IMAGE.name}:${IMAGE.tag}`;
/** Where `make image` writes the image. */
export const imageArchive = path.join(repoRoot, '.local', `${IMAGE.name}-${IMAGE.tag}.oci.tar`);
