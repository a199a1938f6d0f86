// The e2e environment on kind (needs Docker): a control cluster with provider-rook deployed from
// config/ as a Deployment (image built here and loaded into kind), and two targets running the
// real Rook MinIO operator from config/operators/rook-minio/. Targets are reached at their docker-network
// addresses with ServiceAccount tokens bound to provider-rook:target.
import { execa } from 'execa';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../../kit/cluster.ts';
import { applyManifests, installCrds, installOperatorBundle, loadManifests } from '../../kit/manifests.ts';
import { KubeClient } from '../../../src/kit/kube/client.ts';
import { kubeconfigAccess, type ClusterAccess } from '../../../src/kit/kube/config.ts';
import { Deployments, Pods, Secrets } from '../../../src/kit/kube/resources.ts';
import { secretText } from '../../../src/runtime/providers/credentials.ts';
import { roundTrip } from '../../kit/s3.ts';
import { operatorsUnderTest } from '../../fakes/backends.ts';
import type { E2EEnvironment, TargetCluster } from './backend.ts';
import { applyFile, rbacFile, serviceAccountToken } from './identities.ts';
import { docker, kind, missingTools } from './kind-cli.ts';
import { eventually } from '../../kit/eventually.ts';

const NAMES = { control: 'e2e-control', targets: ['e2e-target-a', 'e2e-target-b'] } as const;
const IMAGE = 'provider-rook:e2e';
const NS = 'provider-rook-system';
const workDir = path.join(repoRoot, '.local', 'e2e-kind');
/** The operators kind clusters do not run, by bundle name, and why: the specs skip their backends with that message. */
const UNAVAILABLE: Record<string, string> = {
  'rook-ceph':
    'Rook Ceph needs a CephCluster with OSD disks and a CephObjectStore, which kind nodes cannot run; ' +
    'the Ceph backend is covered on local control planes (make e2e-local), with the bucket provisioner stand-in',
  seaweedfs:
    'the SeaweedFS operator has not been run on kind by this project yet (this machine has no Docker); ' +
    'the SeaweedFS backends are covered on local control planes (make e2e-local), with the operator stand-in',
};

function clientOf(kubeconfigYaml: string): { client: KubeClient; kc: ClusterAccess } {
  const kc = kubeconfigAccess(kubeconfigYaml);
  return { client: new KubeClient(kc, { fieldManager: 'e2e-admin' }), kc };
}

/** How the kind environment waits: up to 3 minutes, a try a second. */
const slowly = { timeoutMs: 180_000, delayMs: 1_000 };

export async function kindEnvironment(): Promise<E2EEnvironment> {
  const missing = await missingTools();
  if (missing) throw new Error(missing);
  mkdirSync(workDir, { recursive: true });
  for (const name of [NAMES.control, ...NAMES.targets]) if (!(await kind.exists(name))) await kind.create(name);

  await docker('build', '-t', IMAGE, repoRoot);
  await kind.loadImage(IMAGE, NAMES.control);

  const { client: control } = clientOf(await kind.kubeconfig(NAMES.control));
  await installCrds(
    control,
    readdirSync(path.join(repoRoot, 'crds')).map((f) => path.join(repoRoot, 'crds', f)),
  );
  for (const f of readdirSync(path.join(repoRoot, 'config', 'rbac'))) await applyFile(control, rbacFile(f));
  // config/provider as shipped, with the image built here and faster intervals for the specs.
  const deploy = loadManifests(path.join(repoRoot, 'config', 'provider', 'provider-rook.yaml')).map((doc) => {
    if (doc.kind !== 'Deployment') return doc;
    const d = structuredClone(doc) as typeof doc & { spec: { template: { spec: { containers: { image: string; args: string[] }[] } } } };
    d.spec.template.spec.containers[0]!.image = IMAGE;
    d.spec.template.spec.containers[0]!.args.push('--poll', '5s', '--leak-interval', '10s', '--leak-grace', '5s', '--log-level', 'debug');
    return d;
  });
  await applyManifests(control, deploy);

  const targets = await Promise.all(
    NAMES.targets.map(async (name): Promise<TargetCluster> => {
      const externalYaml = await kind.kubeconfig(name);
      writeFileSync(path.join(workDir, `${name}.kubeconfig`), externalYaml, { mode: 0o600 });
      const { client: admin, kc } = clientOf(externalYaml);
      // The real operators, all but those this environment cannot run (UNAVAILABLE says why).
      for (const operator of operatorsUnderTest.filter((o) => !(o in UNAVAILABLE))) await installOperatorBundle(admin, operator);
      for (const f of ['target.yaml', 'consumer.yaml']) await applyFile(admin, rbacFile(f));
      const token = await serviceAccountToken(admin, NS, 'provider-rook', ['provider-rook:target', 'provider-rook:consumer']);
      const internal = kubeconfigAccess(await kind.internalKubeconfig(name));
      return {
        name,
        admin,
        providerSecret: {
          endpoint: internal.server,
          clusterCA: Buffer.from(kc.caData!, 'base64').toString(),
          token,
        },
        stop: () => docker('stop', kind.node(name)),
        start: async () => {
          await docker('start', kind.node(name));
          await eventually(async () => Boolean(await admin.serverVersion()), `${name} to answer again`, slowly);
        },
      };
    }),
  );

  const providerReady = async (): Promise<boolean> => {
    const d = await control.get<{ metadata: { name: string }; status?: { availableReplicas?: number } }>(Deployments, {
      namespace: NS,
      name: 'provider-rook',
    });
    return (d?.status?.availableReplicas ?? 0) >= 1;
  };
  await eventually(providerReady, 'provider-rook to be available', slowly);

  return {
    backend: 'kind',
    control,
    targets: targets as [TargetCluster, TargetCluster],
    unavailable: UNAVAILABLE,
    logs: `kubectl --context kind-${NAMES.control} -n ${NS} logs deploy/provider-rook`,
    provider: {
      async kill() {
        const { items } = await control.list<{ metadata: { name: string } }>(Pods, {
          namespace: NS,
          labelSelector: 'app.kubernetes.io/name=provider-rook',
        });
        for (const pod of items) {
          await control.request('DELETE', `/api/v1/namespaces/${NS}/pods/${pod.metadata.name}`, { body: { gracePeriodSeconds: 0 } });
        }
      },
      async start() {
        await eventually(providerReady, 'provider-rook to be available again', slowly); // the Deployment restarts it
      },
    },
    async s3RoundTrip(namespace, secretName, from = control) {
      const secret = await from.get<{ metadata: { name: string }; data?: Record<string, string> }>(Secrets, {
        namespace,
        name: secretName,
      });
      const { endpoint, username, password, bucket } = secretText(secret?.data);
      const url = new URL(endpoint!); // http://<store>.<ns>.svc.<domain>:9000
      const [service, storeNs] = url.hostname.split('.');
      const owner = targets[0]!; // the design flow's class points at the first target
      const forward = execa('kubectl', [
        '--kubeconfig',
        path.join(workDir, `${owner.name}.kubeconfig`),
        '-n',
        storeNs!,
        'port-forward',
        `svc/${service}`,
        ':9000',
      ]);
      try {
        const port = await new Promise<string>((resolve, reject) => {
          forward.stdout!.on('data', (chunk: Buffer) => {
            const m = /127\.0\.0\.1:(\d+)/.exec(chunk.toString());
            if (m) resolve(m[1]!);
          });
          forward.catch(reject);
        });
        // Put, get, list and delete in the claim's bucket, with its user's keys alone.
        await roundTrip(`http://127.0.0.1:${port}`, { accessKey: username!, secretKey: password! }, bucket!);
      } finally {
        forward.kill();
      }
    },
    async teardown() {
      if (!process.env.KEEP_CLUSTERS) for (const name of [NAMES.control, ...NAMES.targets]) await kind.delete(name);
    },
  };
}
