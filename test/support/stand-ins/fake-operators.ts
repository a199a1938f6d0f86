// TEST DOUBLES as a process: npm run fake-operators [-- KUBECONFIG [rook-minio,minio-operator,rook-ceph]].
// Plays the backends' operators on a local target cluster (which runs no pods); see fake-*.ts
// beside it. Each waits (retrying) until its operator's CRD is in the cluster.
import { fileURLToPath } from 'node:url';
import { KubeClient } from '../../../src/runtime/kube/client.ts';
import { kubeconfigFileAccess } from '../../../src/runtime/kube/config.ts';
import { FakeBucketProvisioner } from './fake-bucket-provisioner.ts';
import { FakeMinioOperator } from './fake-minio-operator.ts';
import { FakeTenantOperator } from './fake-tenant-operator.ts';

const kubeconfig = process.argv[2] ?? fileURLToPath(new URL('../../../.local/clusters/target/kubeconfig', import.meta.url));
const wanted = (process.argv[3] ?? 'rook-minio,minio-operator,rook-ceph').split(',');
const kc = kubeconfigFileAccess(kubeconfig);
const client = new KubeClient(kc, { fieldManager: 'fake-operators' });
const all = {
  'rook-minio': () => new FakeMinioOperator(client),
  'minio-operator': () => new FakeTenantOperator(client),
  'rook-ceph': () => new FakeBucketProvisioner(client),
};
const running = wanted.map((name) => {
  const make = all[name as keyof typeof all];
  if (!make) throw new Error(`unknown operator ${name}; use ${Object.keys(all).join(', ')}`);
  const standIn = make();
  void standIn.start();
  return standIn;
});
console.error(`operator stand-ins (test doubles: ${wanted.join(', ')}) watching ${kc.server}; Ctrl-C stops them`);
const stop = (): void => void Promise.all(running.map((s) => s.stop())).then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
