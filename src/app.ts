// provider-rook: the kinds it serves, registered on the generic runtime: every backend (src/backends.ts)
// as a native managed kind and as a class binding of the Bucket claim. The type constants below are
// conveniences for tests and tools.
import { kinds } from './apis/kinds.gen.ts';
import type { HealthSources } from './runtime/health.ts';
import type { KubeClient } from './runtime/kube/client.ts';
import { Manager, type ManagerOptions } from './runtime/manager.ts';
import type { LeakReport } from './runtime/native/leaks.ts';
import type { TargetClients } from './runtime/native/targets.ts';
import { setupClaim } from './runtime/claims/setup.ts';
import { setupNativeManaged } from './runtime/native/setup.ts';
import { backends } from './backends.ts';

export const FIELD_MANAGER = 'provider-rook';

export const ManagedObjectStores = kinds.ObjectStore;
export const ObjectStoreClasses = kinds.ObjectStoreClass;
export const BucketClasses = kinds.BucketClass;
export const BucketPolicies = kinds.BucketPolicy;
export const Buckets = kinds.Bucket;
export const Tenants = kinds.Tenant;
export const TenantClasses = kinds.TenantClass;
export const CephBuckets = kinds.CephBucket;
export const CephBucketClasses = kinds.CephBucketClass;

export type AppOptions = Omit<ManagerOptions, 'fieldManager'>;

export interface App {
  controlPlaneId: string;
  leaks: { sweep(signal?: AbortSignal, now?: number): Promise<LeakReport[]> };
  targets: TargetClients;
  control: KubeClient;
  /** For /readyz and /healthz. */
  health: HealthSources;
  stop(): Promise<void>;
}

export async function startApp(opts: AppOptions): Promise<App> {
  const manager = await Manager.create({ ...opts, fieldManager: FIELD_MANAGER });
  for (const b of backends) setupNativeManaged(manager, { type: b.managed, kind: b.native });
  setupClaim(manager, {
    claim: Buckets, portableClass: BucketClasses, policy: BucketPolicies,
    classes: backends.map((b) => ({ class: b.class, managed: b.managed, configure: b.configure })),
  });

  await manager.start();
  return {
    controlPlaneId: manager.controlPlaneId,
    leaks: { sweep: (signal, now) => manager.sweepLeaks(signal, now) },
    targets: manager.targets,
    control: manager.control,
    health: manager.health,
    stop: () => manager.stop(),
  };
}
