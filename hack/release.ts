// make release VERSION=x.y.z: what a user installs, written under .local/release/x.y.z/:
// - provider-rook-x.y.z.tgz, the packaged Helm chart (its version and appVersion x.y.z);
// - provider-rook-x.y.z.oci.tar, the image provider-rook:x.y.z as an OCI archive (hack/lib/image.ts);
// - provider-rook-crds-x.y.z.yaml, every CRD in one file;
// - provider-rook-x.y.z.yaml, a plain install manifest: the CRDs, then the chart rendered with its
//   defaults and its namespace (kubectl apply --server-side -f);
// - SHA256SUMS, as sha256sum -c reads it.
// The version is the repository's: package.json, Chart.yaml's version and appVersion must all say
// x.y.z (a semantic version), so the chart always installs the image built beside it.
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import * as yaml from 'js-yaml';
import { CHART, render } from './chart.ts';
import { buildImage, type BuiltImage } from './lib/image.ts';
import { imageArchive } from './lib/image-spec.ts';
import { ensureHelm } from '../test/kit/binaries.ts';
import { repoRoot } from '../test/kit/cluster.ts';

/** semver.org's grammar, without build metadata (an image tag cannot hold '+'). */
export const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$/;

/** Why this version cannot be released from the repository as it is, or undefined. */
export function versionProblem(version: string): string | undefined {
  if (!SEMVER.test(version)) return `VERSION=${version} is not a semantic version such as 0.2.0`;
  const pkg = (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
  const chart = yaml.load(readFileSync(path.join(CHART, 'Chart.yaml'), 'utf8')) as { version: string; appVersion: string };
  const found = { 'package.json version': pkg, 'Chart.yaml version': chart.version, 'Chart.yaml appVersion': chart.appVersion };
  const other = Object.entries(found).filter(([, v]) => v !== version);
  if (other.length) return `${other.map(([k, v]) => `${k} is ${v}`).join(', ')}: set them to ${version} (and add it to CHANGELOG.md) first`;
  if (!new RegExp(`^## ${version.replace(/\./g, '\\.')}( |$)`, 'm').test(readFileSync(path.join(repoRoot, 'CHANGELOG.md'), 'utf8')))
    return `CHANGELOG.md has no section "## ${version}"`;
  return undefined;
}

export interface Release {
  dir: string;
  files: string[];
  image: BuiltImage;
}

/** Builds the release of `version` into `dir` (default .local/release/<version>); its files. */
export async function release(
  version: string,
  dir = path.join(repoRoot, '.local', 'release', version),
  log = console.log,
): Promise<Release> {
  const problem = versionProblem(version);
  if (problem) throw new Error(problem);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const helm = await ensureHelm();
  log(`release ${version}: packaging the chart`);
  await execa(helm, ['package', CHART, '--destination', dir]);
  log(`release ${version}: the CRDs and the install manifest`);
  const crdDir = path.join(repoRoot, 'crds');
  const crds = readdirSync(crdDir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) =>
      readFileSync(path.join(crdDir, f), 'utf8')
        .replace(/^# Generated.*\n/, '')
        .trim(),
    )
    .join('\n---\n');
  writeFileSync(path.join(dir, `provider-rook-crds-${version}.yaml`), `# provider-rook ${version}: every CRD.\n${crds}\n`);
  writeFileSync(
    path.join(dir, `provider-rook-${version}.yaml`),
    `# provider-rook ${version}: kubectl apply --server-side -f provider-rook-${version}.yaml\n${crds}\n---\n${await render(['createNamespace=true'])}\n`,
  );
  log(`release ${version}: the image`);
  const image = buildImage((line) => log(`release ${version}: image: ${line}`));
  copyFileSync(imageArchive, path.join(dir, `provider-rook-${version}.oci.tar`));
  const files = readdirSync(dir).sort();
  const sums = files.map(
    (f) =>
      `${createHash('sha256')
        .update(readFileSync(path.join(dir, f)))
        .digest('hex')}  ${f}`,
  );
  writeFileSync(path.join(dir, 'SHA256SUMS'), `${sums.join('\n')}\n`);
  log(`release ${version}: ${path.relative(repoRoot, dir)}/ holds ${[...files, 'SHA256SUMS'].join(', ')}`);
  return { dir, files: [...files, 'SHA256SUMS'], image };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const version = process.argv[2] ?? '';
  try {
    await release(version);
  } catch (err) {
    console.error(`make release: ${(err as Error).message.split('\n')[0]}`);
    process.exit(1);
  }
}
