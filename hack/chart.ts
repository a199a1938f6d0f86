// The Helm chart (charts/provider-rook) and the plain manifests are one thing: config/provider/
// provider-rook.yaml is the chart rendered with its default values. `npm run chart` renders it;
// `--check` lints the chart and fails when the file differs from a fresh rendering (CI runs that).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { ensureHelm, pinnedVersions } from '../test/kit/binaries.ts';
import { repoRoot } from '../test/kit/cluster.ts';

export const CHART = path.join(repoRoot, 'charts', 'provider-rook');
export const PLAIN = path.join(repoRoot, 'config', 'provider', 'provider-rook.yaml');
const HEADER = `# Rendered from charts/provider-rook with its default values (and the namespace) by \`npm run chart\`;
# do not edit. With Helm: helm install provider-rook charts/provider-rook -n provider-rook-system --create-namespace.
# Without: kubectl apply --server-side -f crds/ -f config/provider/
`;

/** `helm template` of the chart: the objects a release with these values would hold. */
export async function render(values: string[] = [], namespace = 'provider-rook-system'): Promise<string> {
  const helm = await ensureHelm();
  // The version the local control planes run (a helm built by go install assumes an old default).
  const kubeVersion = pinnedVersions().kubernetes;
  const { stdout } = await execa(helm, [
    'template',
    'provider-rook',
    CHART,
    '--namespace',
    namespace,
    '--kube-version',
    kubeVersion,
    ...values.flatMap((v) => ['--set', v]),
  ]);
  return stdout;
}

export async function lint(): Promise<string> {
  const helm = await ensureHelm();
  const { stdout } = await execa(helm, ['lint', '--strict', CHART]);
  return stdout;
}

const plain = async (): Promise<string> => `${HEADER}${await render(['createNamespace=true'])}\n`;

if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv.includes('--check')) {
    console.log((await lint()).trim().split('\n').pop());
    if (readFileSync(PLAIN, 'utf8') !== (await plain())) {
      console.error(`${path.relative(repoRoot, PLAIN)} differs from the chart's rendering; run 'npm run chart' and commit the result`);
      process.exit(1);
    }
    console.log(`${path.relative(repoRoot, PLAIN)} is the chart's rendering`);
  } else {
    writeFileSync(PLAIN, await plain());
    console.log(`wrote ${path.relative(repoRoot, PLAIN)}`);
  }
}
