// What an e2e spec may know about the clusters it runs on, whatever made them: kind clusters with
// provider-rook deployed as a Pod and the real Rook MinIO operator, or local control planes with
// provider-rook as a process and the operator test double. Specs talk only to this interface.
import type { KubeClient } from '../../../src/kit/kube/client.ts';

export interface TargetCluster {
  name: string;
  /** Admin access, for the spec's own checks and for playing "someone edits the target". */
  admin: KubeClient;
  /** Provider Secret keys for a least-privilege identity in this target (a ServiceAccount token). */
  providerSecret: Record<string, string>;
  /** Makes the target unreachable (its API server stops) and brings it back. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

export interface E2EEnvironment {
  backend: 'kind' | 'local';
  /** Admin access to the control cluster. */
  control: KubeClient;
  targets: [TargetCluster, TargetCluster];
  provider: {
    /** Kills provider-rook abruptly (SIGKILL, or a Pod deleted without grace). */
    kill(): Promise<void>;
    /** Starts it again (a no-op where a Deployment restarts it by itself); resolves once it runs. */
    start(): Promise<void>;
  };
  /** Backends (operator bundle names) this environment cannot run, and why; specs skip them with that message. */
  unavailable: Record<string, string>;
  /** Where the provider's logs are, for failure messages. */
  logs: string;
  /** Optional S3 round-trip against a bound claim's Secret, read from `from` (the control cluster by default); real MinIO only. */
  s3RoundTrip?(namespace: string, secretName: string, from?: KubeClient): Promise<void>;
  teardown(): Promise<void>;
}

export async function environment(): Promise<E2EEnvironment> {
  const backend = process.env.E2E_BACKEND ?? 'local';
  if (backend === 'kind') return (await import('./kind.ts')).kindEnvironment();
  if (backend === 'local') return (await import('./local.ts')).localEnvironment();
  throw new Error(`E2E_BACKEND must be "kind" or "local", not "${backend}"`);
}
