// TEST DOUBLES: the controllers that give a store an address other clusters reach. Local control
// planes run no cloud, no Gateway and no mesh, so these write what the real ones write and carry the
// traffic themselves, on loopback addresses of their own (reachable from every cluster, as a load
// balancer's or a Gateway's address is):
// - FakeLoadBalancerController plays a cloud's service controller: each Service of type
//   LoadBalancer gets an address (127.0.78.x) in status.loadBalancer.ingress, and that address
//   relays each connection, bytes unchanged, to the pods the Service selects (resolveS3Endpoint,
//   placed in the Service's cluster). With { pending: true } it never assigns one, as a cloud out
//   of addresses.
// - FakeGatewayController plays a Gateway API implementation for gatewayClassName "loopback": each
//   Gateway gets an address (127.0.79.x) in status.addresses and Programmed; each HTTPRoute attached
//   to it gets status.parents[].conditions Accepted (ResolvedRefs too). Its listeners proxy HTTP by
//   the Host header to the route's backend Service, keeping Host (what S3 signs). Its route host
//   names are published (publishHost) so that clients in every cluster resolve them to its address.
// - FakeMcsController plays a Multi-Cluster Services implementation: a ServiceExport in the
//   exporting cluster gets Valid and Ready, and a ServiceImport of the same name is written in each
//   member cluster that holds the namespace (namespace sameness). resolveS3Endpoint then resolves
//   <svc>.<ns>.svc.clusterset.local for a client placed in a cluster holding that ServiceImport.
// Never used by src/.
import type { ObjectKey } from '../../src/kit/kube/object-key.ts';
import { copyOf, type ReadonlyDeep } from '../../src/kit/controller/informer.ts';
import { request as httpRequest, createServer as createHttpServer, type RequestListener, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { getCondition } from '../../src/kit/conditions.ts';
import { isAlreadyExists } from '../../src/kit/kube/errors.ts';
import { Namespaces, Secrets, Services, type ResourceType } from '../../src/kit/kube/resources.ts';
import { Gateways, HTTPRoutes, ServiceExports } from '../../src/runtime/native/exposure.ts';
import { exportService, publishHost, resolveS3Endpoint, unexportService, unpublishHost } from './s3-stores.ts';
import { StandIn, type Loose } from './stand-in.ts';

export const ServiceImports: ResourceType = {
  apiVersion: 'multicluster.x-k8s.io/v1alpha1',
  kind: 'ServiceImport',
  plural: 'serviceimports',
  namespaced: true,
};

let nextAddress = 10;
const address = (block: number): string => `127.0.${block}.${nextAddress++}`;
const now = (): string => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
/** A condition of `type`, True, as these controllers write them for the object's generation. */
const trueCondition = (type: string, obj: Loose) => ({
  type,
  status: 'True',
  reason: type,
  message: '',
  lastTransitionTime: now(),
  observedGeneration: obj.metadata.generation as number | undefined,
});

const open = new WeakMap<Server, Set<Socket>>();

/** A TCP relay on host:port to what `upstream()` answers at each connection. */
async function relay(host: string, port: number, upstream: () => Promise<string>): Promise<Server> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    client.pause();
    sockets.add(client);
    upstream().then(
      (endpoint) => {
        const url = new URL(endpoint);
        const to = createConnection({ host: url.hostname, port: Number(url.port) });
        sockets.add(to);
        client.pipe(to);
        to.pipe(client);
        client.resume();
        const close = (): void => {
          client.destroy();
          to.destroy();
          sockets.delete(client);
          sockets.delete(to);
        };
        client.on('error', close).on('close', close);
        to.on('error', close).on('close', close);
      },
      () => client.destroy(),
    );
  });
  open.set(server, sockets);
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, resolve));
  return server;
}

const closeServer = (s: Server | HttpServer | undefined): Promise<void> =>
  new Promise((resolve) => {
    if (!s) return resolve();
    if ('closeAllConnections' in s) s.closeAllConnections();
    else for (const socket of open.get(s) ?? []) socket.destroy();
    s.close(() => resolve());
  });

type Svc = Loose & { spec?: { type?: string; ports?: { port: number }[] } };

export class FakeLoadBalancerController extends StandIn<Svc> {
  private readonly relays = new Map<string, { host: string; servers: Server[] }>();
  private readonly pending: boolean;

  constructor(client: KubeClient, opts: { pending?: boolean } = {}) {
    super(client, Services);
    this.pending = opts.pending ?? false;
  }

  protected async reconcile(svc: Svc): Promise<void> {
    if (svc.spec?.type !== 'LoadBalancer' || this.pending || svc.metadata.deletionTimestamp) return;
    const key = `${svc.metadata.namespace}/${svc.metadata.name}`;
    let lb = this.relays.get(key);
    if (!lb) {
      const host = address(78);
      const servers = await Promise.all(
        (svc.spec.ports ?? []).map((p) =>
          relay(host, p.port, () =>
            resolveS3Endpoint(`http://${svc.metadata.name}.${svc.metadata.namespace}.svc.cluster.local:${p.port}`, this.client),
          ),
        ),
      );
      lb = { host, servers };
      this.relays.set(key, lb);
    }
    const status = svc.status as { loadBalancer?: { ingress?: { ip?: string }[] } } | undefined;
    if (status?.loadBalancer?.ingress?.[0]?.ip === lb.host) return;
    await this.client.updateStatus(Services, { ...svc, status: { loadBalancer: { ingress: [{ ip: lb.host, ipMode: 'VIP' }] } } });
  }

  protected override async gone(svc: Svc): Promise<void> {
    const key = `${svc.metadata.namespace}/${svc.metadata.name}`;
    const lb = this.relays.get(key);
    this.relays.delete(key);
    await Promise.all((lb?.servers ?? []).map(closeServer));
  }

  override async stop(): Promise<void> {
    await super.stop();
    await Promise.all([...this.relays.values()].flatMap((lb) => lb.servers.map(closeServer)));
    this.relays.clear();
  }
}

type Listener = { name: string; port: number; protocol: string; tls?: { certificateRefs?: { name: string; namespace?: string }[] } };
type Gateway = Loose & { spec: { gatewayClassName: string; listeners: Listener[] } };
type Route = Loose & {
  spec: {
    parentRefs?: { name: string; namespace?: string; sectionName?: string }[];
    hostnames?: string[];
    rules?: { backendRefs?: { name: string; namespace?: string; port: number }[] }[];
  };
};

export class FakeGatewayController extends StandIn<Gateway> {
  private readonly routes: RouteWatcher;
  private readonly gateways = new Map<string, { host: string; servers: HttpServer[] }>();

  constructor(client: KubeClient) {
    super(client, Gateways);
    this.routes = new RouteWatcher(client, this);
  }

  override async start(): Promise<void> {
    await Promise.all([super.start(), this.routes.start()]);
  }

  override async stop(): Promise<void> {
    await Promise.all([super.stop(), this.routes.stop()]);
    await Promise.all([...this.gateways.values()].flatMap((g) => g.servers.map(closeServer)));
    this.gateways.clear();
  }

  /** The address of a Gateway this controller programmed. */
  addressOf({ namespace, name }: Required<ObjectKey>): string | undefined {
    return this.gateways.get(`${namespace}/${name}`)?.host;
  }

  /** The routes attached to a Gateway (any namespace, as allowedRoutes From=All). */
  attached(gw: { namespace: string; name: string }): ReadonlyDeep<Route>[] {
    return this.routes
      .list()
      .filter((r) => r.spec.parentRefs?.some((p) => p.name === gw.name && (p.namespace ?? r.metadata.namespace) === gw.namespace));
  }

  protected async reconcile(gw: Gateway): Promise<void> {
    if (gw.spec.gatewayClassName !== 'loopback' || gw.metadata.deletionTimestamp) return;
    const key = `${gw.metadata.namespace}/${gw.metadata.name}`;
    let state = this.gateways.get(key);
    if (!state) {
      const host = address(79);
      const servers: HttpServer[] = [];
      for (const l of gw.spec.listeners.filter((x) => x.protocol === 'HTTP' || x.protocol === 'HTTPS'))
        servers.push(await this.listen(host, l, { namespace: gw.metadata.namespace!, name: gw.metadata.name }));
      state = { host, servers };
      this.gateways.set(key, state);
    }
    const status = gw.status as { addresses?: { value: string }[] } | undefined;
    if (status?.addresses?.[0]?.value !== state.host) {
      const condition = (type: string) => trueCondition(type, gw);
      await this.client.updateStatus(Gateways, {
        ...gw,
        status: { addresses: [{ type: 'IPAddress', value: state.host }], conditions: [condition('Accepted'), condition('Programmed')] },
      });
    }
    for (const r of this.attached({ namespace: gw.metadata.namespace!, name: gw.metadata.name }))
      await this.routes.accept(copyOf<Route>(r), gw);
  }

  protected override async gone(gw: Gateway): Promise<void> {
    const key = `${gw.metadata.namespace}/${gw.metadata.name}`;
    const state = this.gateways.get(key);
    this.gateways.delete(key);
    await Promise.all((state?.servers ?? []).map(closeServer));
  }

  /** A listener that proxies by Host to the backend of the route that names it, Host kept; HTTPS ends TLS with the listener's certificate Secret. */
  private async listen(host: string, listener: Listener, gw: { namespace: string; name: string }): Promise<HttpServer> {
    const handler: RequestListener = (req, res) => {
      const name = (req.headers.host ?? '').replace(/:\d+$/, '');
      const route = this.attached(gw).find((r) => r.spec.hostnames?.includes(name));
      const backend = route?.spec.rules?.[0]?.backendRefs?.[0];
      if (!route || !backend) {
        res.writeHead(404).end();
        return;
      }
      const ns = backend.namespace ?? route.metadata.namespace;
      resolveS3Endpoint(`http://${backend.name}.${ns}.svc.cluster.local:${backend.port}`, this.client).then(
        (endpoint) => {
          const url = new URL(endpoint);
          const upstream = httpRequest(
            { host: url.hostname, port: Number(url.port), method: req.method, path: req.url, headers: req.headers },
            (answer) => {
              res.writeHead(answer.statusCode ?? 502, answer.headers);
              answer.pipe(res);
            },
          );
          upstream.on('error', () => res.destroy());
          req.pipe(upstream);
        },
        () => res.writeHead(503).end(),
      );
    };
    let server: HttpServer;
    if (listener.protocol === 'HTTPS') {
      const ref = listener.tls?.certificateRefs?.[0];
      const secret =
        ref &&
        (await this.client.get<Loose & { data?: Record<string, string> }>(Secrets, {
          namespace: ref.namespace ?? gw.namespace,
          name: ref.name,
        }));
      if (!secret?.data?.['tls.crt'] || !secret.data['tls.key'])
        throw new Error(`Gateway ${gw.namespace}/${gw.name}: listener ${listener.name} has no certificate Secret`);
      const pem = (k: string) => Buffer.from(secret.data![k]!, 'base64');
      server = createHttpsServer({ cert: pem('tls.crt'), key: pem('tls.key') }, handler) as unknown as HttpServer;
    } else server = createHttpServer(handler);
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(listener.port, host, resolve));
    return server;
  }
}

/** The HTTPRoutes of a FakeGatewayController: accepted when their Gateway is its, their host names published. */
class RouteWatcher extends StandIn<Route> {
  private readonly gateways: FakeGatewayController;
  private readonly published = new Map<string, string[]>();

  constructor(client: KubeClient, gateways: FakeGatewayController) {
    super(client, HTTPRoutes);
    this.gateways = gateways;
  }

  list(): ReadonlyDeep<Route>[] {
    return this.informer.list();
  }

  protected async reconcile(route: Route): Promise<void> {
    for (const ref of route.spec.parentRefs ?? []) {
      const gw = await this.client.get<Gateway>(Gateways, { namespace: ref.namespace ?? route.metadata.namespace, name: ref.name });
      if (gw && this.gateways.addressOf({ namespace: gw.metadata.namespace!, name: gw.metadata.name })) await this.accept(route, gw);
    }
  }

  async accept(route: Route, gw: Gateway): Promise<void> {
    const host = this.gateways.addressOf({ namespace: gw.metadata.namespace!, name: gw.metadata.name });
    if (!host) return;
    const key = `${route.metadata.namespace}/${route.metadata.name}`;
    for (const name of route.spec.hostnames ?? []) publishHost(name, host);
    this.published.set(key, route.spec.hostnames ?? []);
    // Judged once per generation of the route, as a Gateway controller does: a changed route is judged again.
    type Parent = { parentRef: { name: string }; conditions?: { type: string; observedGeneration?: number }[] };
    const parents = (route.status as { parents?: Parent[] } | undefined)?.parents ?? [];
    const judged = getCondition(parents.find((p) => p.parentRef.name === gw.metadata.name)?.conditions, 'Accepted');
    if (judged && judged.observedGeneration === route.metadata.generation) return;
    const latest = await this.client.get<Route>(HTTPRoutes, { namespace: route.metadata.namespace, name: route.metadata.name });
    if (!latest) return;
    const condition = (type: string) => trueCondition(type, latest);
    await this.client.updateStatus(HTTPRoutes, {
      ...latest,
      status: {
        parents: [
          {
            parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: gw.metadata.name, namespace: gw.metadata.namespace },
            controllerName: 'example.test/loopback-gateway',
            conditions: [condition('Accepted'), condition('ResolvedRefs')],
          },
        ],
      },
    });
  }

  protected override async gone(route: Route): Promise<void> {
    const key = `${route.metadata.namespace}/${route.metadata.name}`;
    for (const name of this.published.get(key) ?? []) unpublishHost(name);
    this.published.delete(key);
  }
}

type Export = Loose;

export class FakeMcsController extends StandIn<Export> {
  private readonly members: KubeClient[];

  /** Exports from `client`'s cluster into `members` (every cluster of the clusterset but the exporting one). */
  constructor(client: KubeClient, members: KubeClient[]) {
    super(client, ServiceExports);
    this.members = members;
  }

  protected async reconcile(exp: Export): Promise<void> {
    const { name, namespace } = exp.metadata as { name: string; namespace: string };
    const svc = await this.client.get<Svc>(Services, { namespace, name });
    const generation = exp.metadata.generation as number | undefined;
    const condition = (type: string, status: string, reason: string) => ({
      type,
      status,
      reason,
      message: '',
      lastTransitionTime: now(),
      observedGeneration: generation,
    });
    const conditions = svc
      ? [condition('Valid', 'True', 'Valid'), condition('Ready', 'True', 'Exported')]
      : [condition('Valid', 'False', 'NoService')];
    const had = (exp.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? [];
    if (JSON.stringify(had.map((c) => [c.type, c.status])) !== JSON.stringify(conditions.map((c) => [c.type, c.status])))
      await this.client.updateStatus(ServiceExports, { ...exp, status: { conditions } });
    if (!svc) return;
    exportService({ namespace, name }, this.client);
    for (const member of this.members) {
      if (!(await member.get(Namespaces, { name: namespace }))) continue; // namespace sameness: imported only where the namespace exists
      try {
        await member.create(ServiceImports, {
          apiVersion: ServiceImports.apiVersion,
          kind: ServiceImports.kind,
          metadata: { name, namespace },
          spec: { type: 'ClusterSetIP', ports: (svc.spec?.ports ?? []).map((p) => ({ port: p.port, protocol: 'TCP' })) },
        } as KubeObjectLike);
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
    }
  }

  protected override async gone(exp: Export): Promise<void> {
    const { name, namespace } = exp.metadata as { name: string; namespace: string };
    unexportService({ namespace, name });
    for (const member of this.members) await member.delete(ServiceImports, { namespace, name }).catch(() => undefined); // gone already, or its cluster with it
  }
}
