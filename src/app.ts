// provider-rook: the kinds it serves, registered on the generic runtime: the Provider system, every
// backend (src/backends/index.ts) as a native managed kind and as a class binding of the Bucket claim.
// It names no backend: the constants below are the portable API's kinds, which it wires itself.
import { kinds } from './apis/kinds.gen.ts';
import { setupAccess, setupClaim } from './runtime/claims/setup.ts';
import type { AccessClaim } from './runtime/claims/access.ts';
import { grantHeld } from './runtime/claims/sharing.ts';
import type { ReadonlyDeep } from './kit/controller/informer.ts';
import { rotationHold } from './runtime/delivery/hold.ts';
import { setupDelivery } from './runtime/delivery/setup.ts';
import type { HealthSources } from './kit/health.ts';
import type { KubeClient } from './kit/kube/client.ts';
import { Manager, type ManagerOptions } from './kit/controller/manager.ts';
import type { ManagedResource } from './runtime/managed/types.ts';
import type { LeakReport } from './runtime/native/leaks.ts';
import { ProviderSystem, type ProviderSystemOptions } from './runtime/system/provider-system.ts';
import { registerBackend } from './runtime/system/native-setup.ts';
import type { TargetClients } from './runtime/providers/targets.ts';
import { backends, grantors } from './backends/index.ts';

export const FIELD_MANAGER = 'provider-rook';

export const BucketClasses = kinds.BucketClass;
export const BucketPolicies = kinds.BucketPolicy;
export const Buckets = kinds.Bucket;
export const BucketAccesses = kinds.BucketAccess;

export type AppOptions = Omit<ManagerOptions, 'fieldManager'> & ProviderSystemOptions;

export interface App {
  controlPlaneId: string;
  leaks: { sweep(signal?: AbortSignal, now?: number): Promise<LeakReport[]> };
  targets: TargetClients;
  control: KubeClient;
  /** For /readyz and /healthz. */
  health: HealthSources;
  stop(): Promise<void>;
}

/**
 * The process in two steps: start() leads (probes served, the Lease held when electing), then
 * builds the Provider system and the kinds and runs them; undefined when stopped while standing by.
 */
export function createApp(opts: AppOptions): { start(): Promise<App | undefined>; stop(): Promise<void> } {
  const manager = new Manager({ ...opts, fieldManager: FIELD_MANAGER });
  return {
    async start() {
      if (!(await manager.lead())) return undefined;
      const system = await ProviderSystem.create(manager, opts);
      // The keys a rotation replaced stay until every consumer of the claim holds the new ones.
      const hold = rotationHold(manager, [Buckets, BucketAccesses]);
      for (const b of backends) hold.wake(b.managed, registerBackend(manager, system, b, { retirementHold: hold.why }).controller);
      setupClaim(manager, {
        claim: Buckets,
        portableClass: BucketClasses,
        policy: BucketPolicies,
        classes: backends.map((b) => ({
          class: b.class,
          managed: b.managed,
          configure: b.configure,
          lookups: b.lookups,
          features: b.features,
        })),
      });
      setupAccess(manager, { access: BucketAccesses, claim: Buckets, grantors });
      const where = {
        managed: backends.map((b) => b.managed),
        classes: backends.map((b) => b.class),
        storeOf: (mr: ManagedResource) => {
          const store = backends.find((b) => b.managed.kind === mr.kind)?.native.endpointFrom?.of(mr);
          return store && { kind: store.type.kind, name: store.name };
        },
      };
      setupDelivery(manager, system, { claim: Buckets, ...where });
      setupDelivery(manager, system, {
        claim: BucketAccesses,
        bucket: {
          type: Buckets,
          of: (access) => (access.spec as { bucketRef?: { namespace: string; name: string } }).bucketRef,
          held: (bucket, access) => grantHeld(bucket, access as ReadonlyDeep<AccessClaim>),
        },
        ...where,
      });
      if (!(await manager.start())) return undefined;
      return {
        controlPlaneId: system.controlPlaneId,
        leaks: { sweep: (signal, now) => system.sweepLeaks(signal, now) },
        targets: system.targets,
        control: manager.control,
        health: manager.sources,
        stop: () => manager.stop(),
      };
    },
    stop: () => manager.stop(),
  };
}

export async function startApp(opts: AppOptions): Promise<App> {
  const app = createApp(opts);
  // A start that fails after the Lease is held stops what it started: the Lease's renewal among them.
  const started = await app.start().catch(async (err: unknown) => {
    await app.stop();
    throw err;
  });
  if (!started) throw new Error('provider-rook stopped before it started');
  return started;
}
