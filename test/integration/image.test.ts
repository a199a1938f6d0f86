// The release (make release): its chart, CRDs, install manifest and sums, all of the repository's
// version; and its image, built here without a Docker daemon and run as the chart's Deployment runs
// it (make image-run): ready, a claim Bound, metrics, a clean stop on SIGTERM within the grace
// period; a bad kubeconfig path is one clear line. Confinement is read from the kernel (/proc).
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import * as yaml from 'js-yaml';
import { beforeAll, describe, expect, it } from '@jest/globals';
import type { BuiltImage } from '../../hack/lib/image.ts';
import { release, versionProblem, type Release } from '../../hack/release.ts';
import { ensureHelm, pinnedVersions } from '../kit/binaries.ts';
import { repoRoot } from '../kit/cluster.ts';
import { IMAGE } from '../../hack/lib/image-spec.ts';
import { chart } from '../../hack/lib/image-run.ts';
import { imageScenario, type ImageScenario } from '../../hack/lib/image-scenario.ts';

let built: BuiltImage;
let run: ImageScenario;
let released: Release;

beforeAll(async () => {
  released = await release(IMAGE.tag, mkdtempSync(path.join(tmpdir(), 'provider-rook-release-')), () => {});
  built = released.image;
  run = await imageScenario([`it-image-control-${process.pid}`, `it-image-target-${process.pid}`]);
}, 240_000);

describe('the image, built and run here', () => {
  it('is an OCI archive whose digest is the one that ran', () => {
    expect(built.archive).toMatch(/\.local\/provider-rook-[0-9.]+\.oci\.tar$/);
    expect(run.digest).toBe(built.digest);
  });

  it("runs as the chart's Deployment says: the image's non-root user, read-only root, no capabilities, no new privileges", () => {
    // What the chart asks (the run follows it, so a change there would show below too)...
    const pod = chart().deployment.spec.template.spec;
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true });
    expect(pod.containers[0]!.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      readOnlyRootFilesystem: true,
    });
    // ...and what the kernel says of the running process.
    const [uid, gid] = IMAGE.user.split(':').map(Number);
    expect(run.confinement).toEqual({ uid, gid, capEff: '0000000000000000', noNewPrivs: true, readOnlyRoot: true });
  });

  it('becomes ready, binds a claim, exposes its metrics', () => {
    expect(run.readyMs).toBeGreaterThan(0);
    expect(run.boundMs).toBeGreaterThan(0);
    expect(run.metricsLines).toBeGreaterThan(0);
  });

  it('exits cleanly within its grace period on SIGTERM', () => {
    expect(run.stop).toMatchObject({ code: 0, killed: false });
    expect(run.stop.ms).toBeLessThan(run.stop.graceSeconds * 1000);
  });

  it('a kubeconfig path that does not exist: non-zero, one line, no stack trace', () => {
    expect(run.badKubeconfig.code).not.toBe(0);
    expect(run.badKubeconfig.output.trim()).toBe('provider-rook: cannot read --kubeconfig /no/such/kubeconfig: no such file');
  });
});

describe('the release', () => {
  const file = (f: string) => path.join(released.dir, f);

  it('holds the packaged chart, the image archive, the CRDs, an install manifest and their sums, all of one version', () => {
    const v = IMAGE.tag;
    expect([...released.files].sort()).toEqual(
      [
        `provider-rook-${v}.oci.tar`,
        `provider-rook-${v}.tgz`,
        `provider-rook-${v}.yaml`,
        `provider-rook-crds-${v}.yaml`,
        'SHA256SUMS',
      ].sort(),
    );
    for (const line of readFileSync(file('SHA256SUMS'), 'utf8').trim().split('\n')) {
      const [sum, name] = line.split(/\s+/);
      expect([
        name,
        createHash('sha256')
          .update(readFileSync(file(name!)))
          .digest('hex'),
      ]).toEqual([name, sum]);
    }
    const crds = (f: string) =>
      (yaml.loadAll(readFileSync(file(f), 'utf8')) as { kind?: string; metadata?: { name: string } }[])
        .filter((d) => d?.kind === 'CustomResourceDefinition')
        .map((d) => d.metadata!.name)
        .sort();
    const ours = readdirSync(path.join(repoRoot, 'crds'))
      .map((f) => f.replace(/^([^_]+)_(.+)\.yaml$/, '$2.$1'))
      .sort();
    expect(crds(`provider-rook-crds-${v}.yaml`)).toEqual(ours);
    expect(crds(`provider-rook-${v}.yaml`)).toEqual(ours);
  });

  it('packages a chart that passes helm lint --strict and installs the image built beside it', async () => {
    const helm = await ensureHelm();
    const chartFile = file(`provider-rook-${IMAGE.tag}.tgz`);
    await execa(helm, ['lint', '--strict', chartFile]);
    const rendered = (
      await execa(helm, [
        'template',
        'provider-rook',
        chartFile,
        '--namespace',
        'provider-rook-system',
        '--kube-version',
        pinnedVersions().kubernetes,
      ])
    ).stdout;
    const deployment = (
      yaml.loadAll(rendered) as { kind?: string; spec?: { template: { spec: { containers: { image: string }[] } } } }[]
    ).find((d) => d?.kind === 'Deployment');
    expect(deployment?.spec?.template.spec.containers[0]!.image).toBe(`provider-rook:${IMAGE.tag}`);
    // The archive's one image is named as the chart names it (the OCI layout's ref name): what an image load gives the cluster.
    const index = JSON.parse(
      execFileSync('tar', ['-xOf', file(`provider-rook-${IMAGE.tag}.oci.tar`), 'index.json'], { encoding: 'utf8' }),
    ) as {
      manifests: { annotations?: Record<string, string> }[];
    };
    expect(index.manifests.map((m) => m.annotations?.['org.opencontainers.image.ref.name'])).toEqual([
      deployment?.spec?.template.spec.containers[0]!.image,
    ]);
  });

  it('refuses a version that is not semantic, or not the one package.json, Chart.yaml and CHANGELOG.md say', () => {
    expect(versionProblem('1.0')).toMatch(/not a semantic version/);
    expect(versionProblem('v1.0.0')).toMatch(/not a semantic version/);
    expect(versionProblem('99.0.0')).toMatch(/package\.json version is .*Chart\.yaml version is .*set them to 99\.0\.0/);
    expect(versionProblem(IMAGE.tag)).toBeUndefined();
  });
});
