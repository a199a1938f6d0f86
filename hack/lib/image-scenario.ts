// What `make image-run` and test/integration/image.test.ts do with the built image: run it as the
// chart's Deployment would (image-run.ts) against two local control planes, and see it become ready,
// bind a claim (a Rook MinIO store in the target, its operator played by the stand-in, which runs in
// this process), expose its metrics and stop within its grace period on SIGTERM; then run it once
// with a kubeconfig path that does not exist.
import { kubeconfigFileAccess } from '../../src/kit/kube/config.ts';
import { BucketClasses, Buckets } from '../../src/app.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import { KubeClient, type KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Namespaces, type ResourceType } from '../../src/kit/kube/resources.ts';
import { Providers } from '../../src/runtime/providers/provider.ts';
import { FakeMinioOperator } from '../../test/fakes/fake-minio-operator.ts';
import { down, freePort, up } from '../../test/kit/cluster.ts';
import { providerSecret } from './demo.ts';
import { eventually } from '../../test/kit/eventually.ts';
import { installChart, runImage, unpackImage, type Confinement, type RunningImage } from './image-run.ts';
import { installCrds, installOperatorBundle, manifestFiles } from '../../test/kit/manifests.ts';

export interface ImageScenario {
  digest: string;
  /** From the start of the process to /readyz answering 200. */
  readyMs: number;
  /** From the claim's creation to Bound. */
  boundMs: number;
  metricsLines: number;
  confinement?: Confinement;
  stop: { code: number | null; signal: NodeJS.Signals | null; ms: number; killed: boolean; graceSeconds: number };
  badKubeconfig: { code: number | null; output: string };
  output: string;
}

export async function imageScenario(clusters: [string, string], log: (line: string) => void = () => {}): Promise<ImageScenario> {
  const image = unpackImage();
  log(
    `unpacked ${image.digest}: ${image.process.args.join(' ')} as ${image.process.user.uid}:${image.process.user.gid} in ${image.process.cwd}`,
  );
  const [controlCluster, targetCluster] = (await up(clusters)) as [Awaited<ReturnType<typeof up>>[0], Awaited<ReturnType<typeof up>>[0]];
  const control = new KubeClient(kubeconfigFileAccess(controlCluster.kubeconfig), { fieldManager: 'image-run' });
  const target = new KubeClient(kubeconfigFileAccess(targetCluster.kubeconfig), { fieldManager: 'image-run' });
  const operator = new FakeMinioOperator(target);
  let running: RunningImage | undefined;
  try {
    await installCrds(control, manifestFiles(new URL('../../crds', import.meta.url).pathname));
    const { namespace, token } = await installChart(control);
    await installOperatorBundle(target, 'rook-minio');
    void operator.start();
    const access = kubeconfigFileAccess(controlCluster.kubeconfig);
    const caPem = Buffer.from(access.caData!, 'base64').toString('utf8');
    const started = Date.now();
    running = runImage(image, { server: controlCluster.server, caPem, token, namespace, metricsPort: await freePort() });
    log(`running (pid ${running.pid}) with the chart's arguments; metrics on http://${running.metrics}`);
    const exitedEarly = running.exited.then((e) => {
      throw new Error(`the image exited (${e.code ?? e.signal}) before it was stopped:\n${running!.output()}`);
    });
    const get = (p: string) => fetch(`http://${running!.metrics}${p}`).then(async (r) => ({ status: r.status, body: await r.text() }));
    const within = <T>(p: Promise<T>) => Promise.race([p, exitedEarly]);
    await within(
      eventually(async () => (await get('/readyz').catch(() => ({ status: 0 }))).status === 200, '/readyz', {
        timeoutMs: 60_000,
        delayMs: 100,
      }),
    );
    const readyMs = Date.now() - started;
    const confinement = running.confinement();
    log(`ready in ${(readyMs / 1000).toFixed(1)} s; confined: ${JSON.stringify(confinement)}`);

    // A platform team's Provider and class; an app team's claim.
    const apply = (type: ResourceType, obj: object) =>
      control.apply(type, { apiVersion: type.apiVersion, kind: type.kind, ...obj } as KubeObjectLike);
    await apply(Namespaces, { metadata: { name: 'image-run' } });
    await providerSecret(control, { namespace: 'image-run', name: 'target-creds' }, targetCluster.kubeconfig);
    const claimStarted = Date.now();
    await apply(Providers, {
      metadata: { name: 'target', namespace: 'image-run' },
      spec: { credentialsSecretRef: { name: 'target-creds' } },
    });
    await apply(kinds.ObjectStoreClass, {
      metadata: { name: 'standard', namespace: 'image-run' },
      spec: { scope: { nodeCount: 4 }, providerRef: { name: 'target' }, targetNamespace: 'stores' },
    });
    await apply(BucketClasses, {
      metadata: { name: 'standard', namespace: 'image-run' },
      classRef: { apiVersion: 'minio.rook.crossplane.io/v1alpha1', kind: 'ObjectStoreClass', name: 'standard', namespace: 'image-run' },
    });
    await apply(Buckets, {
      metadata: { name: 'photos', namespace: 'image-run' },
      spec: { classRef: { name: 'standard' }, writeConnectionSecretToRef: { name: 'photos-s3' } },
    });
    const claims = Buckets;
    await within(
      eventually(
        async () =>
          (await control.get<KubeObjectLike & { status?: { bindingPhase?: string } }>(claims, { namespace: 'image-run', name: 'photos' }))
            ?.status?.bindingPhase === 'Bound',
        'the claim to be Bound',
        {
          timeoutMs: 60_000,
          delayMs: 100,
          explain: async () =>
            JSON.stringify(
              (await control.get<KubeObjectLike & { status?: unknown }>(claims, { namespace: 'image-run', name: 'photos' }))?.status,
            ),
        },
      ),
    );
    const boundMs = Date.now() - claimStarted;
    log(`claim Bound in ${(boundMs / 1000).toFixed(1)} s`);
    const metrics = await get('/metrics');
    if (metrics.status !== 200 || !metrics.body.includes('crossplane_managed_resource_exists'))
      throw new Error('/metrics did not answer with our metrics');
    const metricsLines = metrics.body.split('\n').filter((l) => l && !l.startsWith('#')).length;
    log(`/metrics: ${metricsLines} samples`);
    const stop = { ...(await running.stop()), graceSeconds: running.graceSeconds };
    log(`SIGTERM: exited ${stop.code ?? stop.signal} in ${(stop.ms / 1000).toFixed(1)} s (grace period ${stop.graceSeconds} s)`);
    const output = running.output();
    running = undefined;

    // Bad input: a kubeconfig that is not there.
    const bad = runImage(image, {
      server: controlCluster.server,
      caPem,
      token,
      namespace,
      metricsPort: await freePort(),
      args: ['--kubeconfig', '/no/such/kubeconfig'],
    });
    const badExit = await bad.exited;
    return {
      digest: image.digest,
      readyMs,
      boundMs,
      metricsLines,
      confinement,
      stop,
      badKubeconfig: { code: badExit.code, output: bad.output() },
      output,
    };
  } finally {
    if (running) await running.stop();
    await operator.stop();
    await down(clusters);
  }
}
