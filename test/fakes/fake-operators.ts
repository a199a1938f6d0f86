// TEST DOUBLES as a process: npm run fake-operators [-- KUBECONFIG [OPERATOR,...,deployments] [--s3=ROUTES_DIR]] (every operator by default).
// Plays the backends' operators on a local target cluster (which runs no pods); see fake-*.ts
// beside it (deployments: the Deployment controller's status writes, deployment-rollout.ts). Each waits (retrying) until its operator's CRD is in the cluster. --s3=ROUTES_DIR runs
// them with { s3: true } (a real S3 server per store) and shares the routes to those servers in
// ROUTES_DIR, for resolveS3Endpoint in another process (s3-stores.ts).
import { fileURLToPath } from 'node:url';
import { KubeClient } from '../../src/kit/kube/client.ts';
import { kubeconfigFileAccess } from '../../src/kit/kube/config.ts';
import { DeploymentRollout } from './deployment-rollout.ts';
import { operatorStandIns, operatorsUnderTest, type Running } from './backends.ts';
import { shareRoutes } from './s3-stores.ts';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--s3='));
const routesDir = process.argv.find((a) => a.startsWith('--s3='))?.slice('--s3='.length);
const kubeconfig = args[0] ?? fileURLToPath(new URL('../../.local/clusters/target/kubeconfig', import.meta.url));
const wanted = args[1]?.split(',') ?? operatorsUnderTest;
const s3 = routesDir !== undefined;
if (routesDir) shareRoutes(routesDir);
const kc = kubeconfigFileAccess(kubeconfig);
const client = new KubeClient(kc, { fieldManager: 'fake-operators' });
const all: Record<string, () => Running> = {
  ...Object.fromEntries(Object.entries(operatorStandIns).map(([name, s]) => [name, () => s.make(client, { s3 })])),
  deployments: () => new DeploymentRollout(client, () => true),
};
const running = wanted.map((name) => {
  const make = all[name];
  if (!make) throw new Error(`unknown operator ${name}; use ${Object.keys(all).join(', ')}`);
  const standIn = make();
  void standIn.start();
  return standIn;
});
console.error(
  `operator stand-ins (test doubles: ${wanted.join(', ')}${s3 ? ', with S3 servers' : ''}) watching ${kc.server}; Ctrl-C stops them`,
);
const stop = (): void => void Promise.all(running.map((s) => s.stop())).then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
