// The image, built here without a Docker daemon (make image) and run as the chart's Deployment runs
// it (make image-run): ready, a claim Bound, metrics, a clean stop on SIGTERM within the grace
// period; a bad kubeconfig path is one clear line. Confinement is read from the kernel (/proc).
import { beforeAll, describe, expect, it } from '@jest/globals';
import { buildImage, type BuiltImage } from '../../hack/lib/image.ts';
import { IMAGE } from '../../hack/lib/image-spec.ts';
import { chart } from '../../hack/lib/image-run.ts';
import { imageScenario, type ImageScenario } from '../../hack/lib/image-scenario.ts';

let built: BuiltImage;
let run: ImageScenario;

beforeAll(async () => {
  built = buildImage();
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
