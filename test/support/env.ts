// Names of the clusters shared by one test run, and helpers to reach them.
import { get, type LocalCluster } from '../../hack/lib/cluster.ts';
import { KubeClient } from '../../src/runtime/kube/client.ts';
import { kubeconfigFileAccess, type ClusterAccess } from '../../src/runtime/kube/config.ts';

export const TEST_CLUSTERS = { control: 'it-control', target: 'it-target' } as const;

export function testCluster(role: keyof typeof TEST_CLUSTERS): LocalCluster {
  return get(TEST_CLUSTERS[role]);
}

export function kubeConfigOf(cluster: LocalCluster): ClusterAccess {
  return kubeconfigFileAccess(cluster.kubeconfig);
}

export function adminClient(cluster: LocalCluster, fieldManager = 'provider-rook-tests'): KubeClient {
  return new KubeClient(kubeConfigOf(cluster), { fieldManager });
}

/** Polls until check returns a value (not undefined/false) or the timeout passes. */
export async function eventually<T>(check: () => Promise<T | undefined | false> | T | undefined | false, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (let delay = 50; ; delay = Math.min(delay * 2, 500)) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${(lastError as Error).message})` : ''}`);
    }
    await new Promise((r) => setTimeout(r, delay));
  }
}

let counter = 0;
/** A unique, DNS-safe name for test objects. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${process.pid.toString(36)}-${(counter++).toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
}
