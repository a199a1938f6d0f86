// TEST DOUBLE as a process: npm run fake-operator [-- KUBECONFIG]. Plays the Rook MinIO operator on a
// local target cluster (which runs no pods); see e2e/support/fake-minio-operator.ts.
import { KubeConfig } from '@kubernetes/client-node';
import path from 'node:path';
import { KubeClient } from '../src/runtime/kube/client.ts';
import { FakeMinioOperator } from './support/fake-minio-operator.ts';

const kubeconfig = process.argv[2] ?? path.join(import.meta.dirname, '..', '.local', 'clusters', 'target', 'kubeconfig');
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
const operator = new FakeMinioOperator(new KubeClient(kc, { fieldManager: 'fake-minio-operator' }));
await operator.start();
console.error(`fake MinIO operator (a test stand-in) watching ${kc.getCurrentCluster()?.server}; Ctrl-C stops it`);
process.on('SIGINT', () => void operator.stop().then(() => process.exit(0)));
process.on('SIGTERM', () => void operator.stop().then(() => process.exit(0)));
