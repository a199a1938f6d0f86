// How a store of its own is reached from other clusters than its own: one object provider-rook makes
// beside the store's S3 Service (a LoadBalancer Service, a Gateway API HTTPRoute, or a Multi-Cluster
// Services ServiceExport), and the endpoint read back from what the cloud, the Gateway or the MCS
// controller wrote. Kind-agnostic: a backend says which Service serves S3, this file does the rest.
import type { ObjectRef, ResourceType } from '../../kit/kube/resources.ts';
import { Services } from '../../kit/kube/resources.ts';
import type { Companion, ObjectReader, TargetObject } from './kind.ts';
import { conditionIs, getCondition } from '../../kit/conditions.ts';

export const HTTPRoutes: ResourceType = {
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'HTTPRoute',
  plural: 'httproutes',
  namespaced: true,
};
export const Gateways: ResourceType = { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', plural: 'gateways', namespaced: true };
export const ServiceExports: ResourceType = {
  apiVersion: 'multicluster.x-k8s.io/v1alpha1',
  kind: 'ServiceExport',
  plural: 'serviceexports',
  namespaced: true,
};

/** A store's exposure, as its spec says (apis/common.ts storeExposure). */
export interface StoreExposure {
  loadBalancer?: { annotations?: Record<string, string> };
  gateway?: { gatewayRef: { name: string; namespace: string; sectionName?: string }; hostname: string };
  multiCluster?: Record<string, never>;
  caBundle?: string;
  addressingStyle?: 'path' | 'virtual';
}

/** The Service that serves a store's S3 API in its cluster. */
export interface S3Service {
  /** The store's name in the target: what a wildcard host name (*.domain) becomes per store. */
  store: string;
  name: string;
  namespace: string;
  port: number;
  /** The port the store's pods serve S3 on, where that Service maps its port to another (its targetPort); its port otherwise. */
  podPort?: number;
  /** The store's pods, for a LoadBalancer Service of our own beside it. */
  selector: Record<string, string>;
}

export interface ExposureState {
  via: 'LoadBalancer' | 'Gateway' | 'MultiCluster';
  endpoint?: string;
  waiting?: string;
}

const loadBalancerName = (svc: S3Service): string => `${svc.name}-external`;
/** The host name a store is published under: a class's "*.s3.example.com" gives each store "<store>.s3.example.com". */
export const hostFor = (hostname: string, svc: S3Service): string =>
  hostname.startsWith('*.') ? `${svc.store}${hostname.slice(1)}` : hostname;
const routeName = (svc: S3Service): string => svc.name;

/** The objects each kind of exposure would make, but for the one the store's spec asks: what a change of exposure leaves behind. */
export function retiredExposures(exposure: StoreExposure | undefined, svc: S3Service): ObjectRef[] {
  const all: [keyof StoreExposure, ObjectRef][] = [
    ['loadBalancer', { type: Services, name: loadBalancerName(svc), namespace: svc.namespace }],
    ['gateway', { type: HTTPRoutes, name: routeName(svc), namespace: svc.namespace }],
    ['multiCluster', { type: ServiceExports, name: svc.name, namespace: svc.namespace }],
  ];
  return all.filter(([via]) => !exposure?.[via]).map(([, ref]) => ref);
}

/** The object that exposes the store, made and kept like every companion (signed marks, its uid recorded). */
export function exposureCompanion(exposure: StoreExposure | undefined, svc: S3Service): Companion | undefined {
  if (exposure?.loadBalancer) {
    const name = loadBalancerName(svc);
    return {
      type: Services,
      name,
      namespace: svc.namespace,
      purpose: 'LoadBalancer Service (exposure)',
      build: () => ({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: {
          name,
          namespace: svc.namespace,
          ...(exposure.loadBalancer!.annotations ? { annotations: exposure.loadBalancer!.annotations } : {}),
        },
        spec: {
          type: 'LoadBalancer',
          selector: svc.selector,
          // To the pods directly, on the port they serve: not the Service's own, where it maps one to another.
          ports: [{ name: 's3', port: svc.port, targetPort: svc.podPort ?? svc.port, protocol: 'TCP' }],
        },
      }),
    };
  }
  if (exposure?.gateway) {
    const { gatewayRef } = exposure.gateway;
    const hostname = hostFor(exposure.gateway.hostname, svc);
    const name = routeName(svc);
    return {
      type: HTTPRoutes,
      name,
      namespace: svc.namespace,
      purpose: 'HTTPRoute (exposure)',
      build: () => ({
        apiVersion: HTTPRoutes.apiVersion,
        kind: HTTPRoutes.kind,
        metadata: { name, namespace: svc.namespace },
        spec: {
          parentRefs: [parentRef(gatewayRef)],
          hostnames: [hostname],
          rules: [{ backendRefs: [{ name: svc.name, port: svc.port }] }],
        },
      }),
    };
  }
  if (exposure?.multiCluster) {
    // An export is named after the Service it exports.
    return {
      type: ServiceExports,
      name: svc.name,
      namespace: svc.namespace,
      purpose: 'ServiceExport (exposure)',
      build: () => ({
        apiVersion: ServiceExports.apiVersion,
        kind: ServiceExports.kind,
        metadata: { name: svc.name, namespace: svc.namespace },
      }),
    };
  }
  return undefined;
}

function parentRef(ref: { name: string; namespace: string; sectionName?: string }) {
  return {
    group: 'gateway.networking.k8s.io',
    kind: 'Gateway',
    name: ref.name,
    namespace: ref.namespace,
    ...(ref.sectionName ? { sectionName: ref.sectionName } : {}),
  };
}

type Cond = { type: string; status: string; reason?: string };

/** Where the exposure leads, from what its controllers wrote; or what it still waits for. */
export async function exposureState(
  exposure: StoreExposure | undefined,
  svc: S3Service,
  made: TargetObject | undefined,
  read: ObjectReader,
  signal: AbortSignal,
): Promise<ExposureState | undefined> {
  if (exposure?.loadBalancer) {
    const where = `LoadBalancer Service ${svc.namespace}/${loadBalancerName(svc)}`;
    const ingress = (made?.status as { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } } | undefined)?.loadBalancer
      ?.ingress?.[0];
    const address = ingress?.ip ?? ingress?.hostname;
    if (!address) return { via: 'LoadBalancer', waiting: `${where} has no address yet (status.loadBalancer.ingress)` };
    return { via: 'LoadBalancer', endpoint: `http://${address.includes(':') ? `[${address}]` : address}:${svc.port}` };
  }
  if (exposure?.gateway) {
    const { gatewayRef } = exposure.gateway;
    const hostname = hostFor(exposure.gateway.hostname, svc);
    const where = `HTTPRoute ${svc.namespace}/${routeName(svc)} on Gateway ${gatewayRef.namespace}/${gatewayRef.name}`;
    const parents = (made?.status as { parents?: { parentRef: { name: string; namespace?: string }; conditions?: Cond[] }[] } | undefined)
      ?.parents;
    const mine = parents?.find(
      (p) => p.parentRef.name === gatewayRef.name && (p.parentRef.namespace ?? svc.namespace) === gatewayRef.namespace,
    );
    // Accepted as it is now: a route changed since (a new host name) is the Gateway's to judge again,
    // and one whose repair is still to come does not route the host name yet.
    const accepted = getCondition(mine?.conditions, 'Accepted') as (Cond & { observedGeneration?: number }) | undefined;
    const generation = (made?.metadata as { generation?: number } | undefined)?.generation;
    const judged = accepted?.observedGeneration === undefined || generation === undefined || accepted.observedGeneration === generation;
    if (accepted?.status !== 'True' || !judged) return { via: 'Gateway', waiting: `${where} is not Accepted yet` };
    if (!((made?.spec as { hostnames?: string[] } | undefined)?.hostnames ?? []).includes(hostname))
      return { via: 'Gateway', waiting: `${where} does not route ${hostname} yet` };
    const gateway = await read.get<TargetObject>(Gateways, { namespace: gatewayRef.namespace, name: gatewayRef.name }, signal);
    const status = gateway?.status as { addresses?: { value: string }[]; conditions?: Cond[] } | undefined;
    if (!status?.addresses?.length)
      return { via: 'Gateway', waiting: `Gateway ${gatewayRef.namespace}/${gatewayRef.name} has no address yet` };
    const listeners =
      (gateway!.spec as { listeners?: { name: string; port: number; protocol: string; hostname?: string }[] } | undefined)?.listeners ?? [];
    const web = listeners.filter((l) => l.protocol === 'HTTP' || l.protocol === 'HTTPS');
    // A route that names no listener attaches to each one that admits it: which one apps should call
    // is then a guess, and another listener may admit routes from anyone for that host name.
    if (!gatewayRef.sectionName && web.length > 1)
      return {
        via: 'Gateway',
        waiting:
          `Gateway ${gatewayRef.namespace}/${gatewayRef.name} has ${web.length} HTTP and HTTPS listeners (${web.map((l) => l.name).join(', ')}): ` +
          "name the stores' one in this store's spec.exposure.gateway.gatewayRef.sectionName (and in its class's, for stores made later), " +
          'so that the route attaches to it alone',
      };
    const listener = gatewayRef.sectionName ? web.find((l) => l.name === gatewayRef.sectionName) : web[0];
    if (!listener)
      return {
        via: 'Gateway',
        waiting: `Gateway ${gatewayRef.namespace}/${gatewayRef.name} has no HTTP or HTTPS listener${gatewayRef.sectionName ? ` named ${gatewayRef.sectionName}` : ''}`,
      };
    const https = listener.protocol === 'HTTPS';
    const port = listener.port === (https ? 443 : 80) ? '' : `:${listener.port}`;
    return { via: 'Gateway', endpoint: `${https ? 'https' : 'http'}://${hostname}${port}` };
  }
  if (exposure?.multiCluster) {
    const where = `ServiceExport ${svc.namespace}/${svc.name}`;
    const conds = (made?.status as { conditions?: Cond[] } | undefined)?.conditions;
    const valid = getCondition(conds, 'Valid');
    const conflict = getCondition(conds, 'Conflict');
    const refused = valid?.status === 'False' ? valid : conflict?.status === 'True' ? conflict : undefined;
    // The reason is the target's text, shown to every claim of the store: bounded, as a Condition's is.
    if (refused) return { via: 'MultiCluster', waiting: `${where} is not exported: ${(refused.reason ?? 'invalid').slice(0, 128)}` };
    if (!conditionIs(conds, 'Ready') && !conditionIs(conds, 'Valid'))
      return { via: 'MultiCluster', waiting: `${where} is not exported yet` };
    return { via: 'MultiCluster', endpoint: `http://${svc.name}.${svc.namespace}.svc.clusterset.local:${svc.port}` };
  }
  return undefined;
}

/** exposureState, with the exposing object found among a store's observed companions. */
export function exposed(
  exposure: StoreExposure | undefined,
  svc: S3Service,
  companions: (TargetObject | undefined)[],
  read: ObjectReader,
  signal: AbortSignal,
): Promise<ExposureState | undefined> {
  const wanted = exposureCompanion(exposure, svc);
  if (!wanted) return Promise.resolve(undefined);
  const made = companions.find(
    (c) => c?.kind === wanted.type.kind && c.metadata.name === wanted.name && c.metadata.namespace === wanted.namespace,
  );
  return exposureState(exposure, svc, made, read, signal);
}
