// Names of the clusters shared by one test run, and helpers to reach them.
import { get, type LocalCluster } from './cluster.ts';
import { KubeClient } from '../../src/kit/kube/client.ts';
import { kubeconfigFileAccess, type ClusterAccess } from '../../src/kit/kube/config.ts';

// consumer holds no store: apps there get their connection Secrets delivered from the control cluster.
export const TEST_CLUSTERS = { control: 'it-control', target: 'it-target', consumer: 'it-consumer' } as const;

export function testCluster(role: keyof typeof TEST_CLUSTERS): LocalCluster {
  return get(TEST_CLUSTERS[role]);
}

export function kubeConfigOf(cluster: LocalCluster): ClusterAccess {
  return kubeconfigFileAccess(cluster.kubeconfig);
}

export function adminClient(cluster: LocalCluster, fieldManager = 'provider-rook-tests'): KubeClient {
  return new KubeClient(kubeConfigOf(cluster), { fieldManager });
}

let counter = 0;
/** A unique, DNS-safe name for test objects. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${process.pid.toString(36)}-${(counter++).toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
}
