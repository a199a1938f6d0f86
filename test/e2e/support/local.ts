// The e2e environment on local control planes (no Docker needed): three clusters (control and two
// targets) of real etcd + kube-apiserver; provider-rook runs as its own process authenticated as
// the provider-rook ServiceAccount (config/rbac/provider-rook.yaml), and reaches the targets with
// ServiceAccount tokens bound to provider-rook:target. Local clusters run no pods, so the Rook
// MinIO operator, the MinIO Operator and Rook's bucket provisioner are the clearly named TEST DOUBLEs
// in test/fakes/fake-*.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { dump } from 'js-yaml';
import { down, repoRoot, start, stop, up, type LocalCluster } from '../../kit/cluster.ts';
import { installCrds } from '../../kit/manifests.ts';
import { KubeClient } from '../../../src/kit/kube/client.ts';
import { kubeconfigFileAccess } from '../../../src/kit/kube/config.ts';
import { installOperators, operatorsUnderTest, standInsFor } from '../../fakes/backends.ts';
import type { E2EEnvironment, TargetCluster } from './backend.ts';
import { applyFile, rbacFile, serviceAccountToken } from './identities.ts';

const NAMES = { control: 'e2e-control', targets: ['e2e-target-a', 'e2e-target-b'] } as const;
const workDir = path.join(repoRoot, '.local', 'e2e');

function adminOf(cluster: LocalCluster): KubeClient {
  return new KubeClient(kubeconfigFileAccess(cluster.kubeconfig), { fieldManager: 'e2e-admin' });
}

function caOf(cluster: LocalCluster): string {
  return Buffer.from(kubeconfigFileAccess(cluster.kubeconfig).caData!, 'base64').toString();
}

/** A kubeconfig file for a bearer token: how provider-rook reaches the control cluster. */
function tokenKubeconfig(cluster: LocalCluster, token: string, file: string): string {
  const kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': 'provider-rook',
    clusters: [
      {
        name: cluster.name,
        cluster: { server: cluster.server, 'certificate-authority-data': Buffer.from(caOf(cluster)).toString('base64') },
      },
    ],
    users: [{ name: 'provider-rook', user: { token } }],
    contexts: [{ name: 'provider-rook', context: { cluster: cluster.name, user: 'provider-rook' } }],
  };
  writeFileSync(file, dump(kubeconfig), { mode: 0o600 });
  return file;
}

export async function localEnvironment(): Promise<E2EEnvironment> {
  mkdirSync(workDir, { recursive: true });
  const [controlCluster, ...targetClusters] = await up([NAMES.control, ...NAMES.targets]);
  const control = adminOf(controlCluster!);

  // Control: our CRDs and roles, and provider-rook's own ServiceAccount (not admin).
  await installCrds(
    control,
    readdirSync(path.join(repoRoot, 'crds')).map((f) => path.join(repoRoot, 'crds', f)),
  );
  for (const f of ['provider-rook.yaml', 'app-team.yaml', 'platform-team.yaml']) await applyFile(control, rbacFile(f));
  const providerToken = await serviceAccountToken(control, 'provider-rook-system', 'provider-rook', [
    'provider-rook',
    'provider-rook:secrets',
  ]);
  const kubeconfig = tokenKubeconfig(controlCluster!, providerToken, path.join(workDir, 'provider-rook.kubeconfig'));

  // Targets: the operator installed by their admin, and a least-privilege identity for provider-rook.
  const operators: { stop(): Promise<void> }[] = [];
  const targets = await Promise.all(
    targetClusters.map(async (cluster): Promise<TargetCluster> => {
      const admin = adminOf(cluster);
      await installOperators(admin, operatorsUnderTest);
      for (const f of ['target.yaml', 'consumer.yaml']) await applyFile(admin, rbacFile(f));
      const token = await serviceAccountToken(admin, 'provider-rook-system', 'provider-rook', [
        'provider-rook:target',
        'provider-rook:consumer',
      ]);
      for (const operator of await standInsFor(admin, operatorsUnderTest)) {
        await operator.start();
        operators.push(operator);
      }
      return {
        name: cluster.name,
        admin,
        providerSecret: { endpoint: cluster.server, clusterCA: caOf(cluster), token },
        stop: () => stop(cluster.name),
        start: async () => {
          await start(cluster.name);
        },
      };
    }),
  );

  const logs = path.join(workDir, 'provider-rook.log');
  let child: ChildProcess | undefined;
  let exited: Promise<unknown> = Promise.resolve();
  const running = (): boolean => child !== undefined && child.exitCode === null && child.signalCode === null;
  const provider = {
    async start(): Promise<void> {
      if (running()) return;
      const log = openSync(logs, 'a');
      child = spawn(
        process.execPath,
        [
          path.join(repoRoot, 'src', 'main.ts'),
          '--kubeconfig',
          kubeconfig,
          '--poll',
          '2s',
          '--leak-interval',
          '3s',
          '--leak-grace',
          '1s',
          '--metrics-addr',
          '127.0.0.1:0',
          '--log-level',
          'debug',
        ],
        { cwd: repoRoot, stdio: ['ignore', log, log] },
      );
      closeSync(log);
      const current = child;
      exited = new Promise((resolve) => current.once('exit', resolve));
    },
    async kill(): Promise<void> {
      if (!running()) return;
      child!.kill('SIGKILL');
      await exited;
    },
  };
  await provider.start();

  return {
    backend: 'local',
    control,
    targets: targets as [TargetCluster, TargetCluster],
    provider,
    unavailable: {},
    logs,
    async teardown() {
      await provider.kill();
      await Promise.all(operators.map((o) => o.stop()));
      if (!process.env.KEEP_CLUSTERS) await down([NAMES.control, ...NAMES.targets]);
    },
  };
}
