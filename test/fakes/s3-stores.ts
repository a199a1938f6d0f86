// TEST DOUBLE support: the real S3 servers the stand-ins run for the stores they play, and the local
// mapping by which tests reach them as an app in the target would.
//
// In a target, an app reaches a store by its Service's name, <service>.<namespace>.svc[.<domain>]:
// DNS finds the Service and kube-proxy sends the request to the pods the Service selects. Local
// control planes run no pods, so a stand-in that plays a store's pods routes their labels to the
// loopback endpoint of the store's server, and resolveS3Endpoint plays DNS and kube-proxy: it reads
// the Service from the target, and answers with the one store whose pods it selects, on a port the
// Service serves. A Service that selects no store, or several, is an error, as it would be for the
// app. Rook Ceph's gateway Service is made by the platform team's CephObjectStore, which no
// stand-in plays, so its host name is routed by name.
//
// Routes live in the process that runs the stand-in. When the stand-ins run as processes of their
// own (make demo), shareRoutes(dir) in each process, theirs and the caller's, shares them through
// one file per process in dir.
import type { ObjectKey } from '../../src/kit/kube/object-key.ts';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startS3Server, type S3Credentials, type S3Server } from '../kit/s3-server.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Services } from '../../src/kit/kube/resources.ts';

/** Whom a route leads to: pods with these labels in a namespace, or a host name with its port. */
/**
 * How a store is reached: as pods (their namespace and labels, and the port they serve S3 on,
 * which a Service's targetPort must name), or at a host and port of its own.
 */
export type Reach = { namespace: string; labels: Record<string, string>; podPort?: number } | { host: string; port: number };

interface Route {
  cluster: string;
  reach: Reach;
  endpoint: string;
}
const routes = new Map<string, Route>();
let sharedDir: string | undefined;

/**
 * Shares routes with other processes through dir: this process's routes are written to
 * <dir>/<pid>.json as they change, and resolveS3Endpoint also reads those of the other processes
 * still running.
 */
export function shareRoutes(dir: string): void {
  mkdirSync(dir, { recursive: true });
  sharedDir = dir;
  publish();
  process.once('exit', () => rmSync(ownFile(dir), { force: true }));
}

const ownFile = (dir: string): string => path.join(dir, `${process.pid}.json`);

function publish(): void {
  if (!sharedDir) return;
  const tmp = `${ownFile(sharedDir)}.tmp`;
  writeFileSync(tmp, JSON.stringify([...routes.values()]));
  renameSync(tmp, ownFile(sharedDir)); // readers never see half a file
}

/** The routes of this process, and those the other running processes share. */
function allRoutes(): Route[] {
  const all = [...routes.values()];
  if (!sharedDir || !existsSync(sharedDir)) return all;
  for (const f of readdirSync(sharedDir)) {
    const pid = Number(/^(\d+)\.json$/.exec(f)?.[1]);
    if (!pid || pid === process.pid || !alive(pid)) continue;
    all.push(...(JSON.parse(readFileSync(path.join(sharedDir, f), 'utf8')) as Route[]));
  }
  return all;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function route(cluster: string, reach: Reach, endpoint: string): void {
  routes.set(JSON.stringify([cluster, reach]), { cluster, reach, endpoint });
  publish();
}

function unroute(endpoint: string): void {
  for (const [key, r] of routes) if (r.endpoint === endpoint) routes.delete(key);
  publish();
}

/**
 * Names every cluster resolves, as public DNS would: a Gateway's route host names, each to its
 * Gateway's loopback address (FakeGatewayController). Clients resolve them with s3Lookup, so they
 * connect there while sending (and signing) the name itself as Host.
 */
const publicHosts = new Map<string, string>();
export const publishHost = (name: string, address: string): void => void publicHosts.set(name, address);
export const unpublishHost = (name: string): void => void publicHosts.delete(name);

/** A socket lookup (net.connect's) that knows the published names; anything else is not found. */
export function s3Lookup(
  hostname: string,
  options: { all?: boolean } | number,
  callback: (err: NodeJS.ErrnoException | null, address: string | { address: string; family: number }[], family?: number) => void,
): void {
  const address = /^\d+\.\d+\.\d+\.\d+$/.test(hostname) ? hostname : publicHosts.get(hostname);
  if (!address) {
    const err = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    callback(err, '');
    return;
  }
  if (typeof options === 'object' && options.all) callback(null, [{ address, family: 4 }]);
  else callback(null, address, 4);
}

/** Services exported to the clusterset (FakeMcsController): "<namespace>/<name>" to the exporting cluster. */
const exported = new Map<string, KubeClient>();
export const exportService = ({ namespace, name }: Required<ObjectKey>, from: KubeClient): void =>
  void exported.set(`${namespace}/${name}`, from);
export const unexportService = ({ namespace, name }: Required<ObjectKey>): void => void exported.delete(`${namespace}/${name}`);
const ServiceImports = { apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ServiceImport', plural: 'serviceimports', namespaced: true };

/**
 * The loopback endpoint that url (a connection Secret's endpoint, e.g.
 * http://<store>-s3.rook-minio.svc.cluster.local:9000) leads to for a client placed in the cluster
 * of `placedIn`: a Service's name resolves only there, as cluster DNS does; an address an ingress or
 * load balancer stand-in listens on (a loopback address) is reachable from every cluster as it is.
 */
export async function resolveS3Endpoint(url: string, placedIn: KubeClient): Promise<string> {
  const target = placedIn;
  const { hostname, port: p, protocol } = new URL(url);
  if (/^127\.\d+\.\d+\.\d+$/.test(hostname)) return `${protocol}//${hostname}:${p || (protocol === 'https:' ? 443 : 80)}`;
  // A published name is reached as it is (s3Lookup finds its address); the Host it sends is its own.
  if (publicHosts.has(hostname)) return url.replace(/\/$/, '');
  // A clusterset name resolves where its ServiceImport is, and leads to the exporting cluster's Service.
  const clusterset = /^([^.]+)\.([^.]+)\.svc\.clusterset\.local$/.exec(hostname);
  if (clusterset) {
    const [, name, namespace] = clusterset as unknown as [string, string, string];
    if (!(await target.get(ServiceImports, { namespace, name }).catch(() => undefined)))
      throw new Error(`${hostname} does not resolve in ${target.server}: no ServiceImport ${namespace}/${name} there`);
    const from = exported.get(`${namespace}/${name}`);
    if (!from) throw new Error(`${hostname}: nothing exports Service ${namespace}/${name}`);
    return resolveS3Endpoint(`${protocol}//${name}.${namespace}.svc.cluster.local:${p || 80}`, from);
  }
  const port = Number(p || (protocol === 'https:' ? 443 : 80));
  const mine = allRoutes().filter((r) => r.cluster === target.server);
  const byName = mine.find((r) => 'host' in r.reach && r.reach.host === hostname && r.reach.port === port);
  if (byName) return byName.endpoint;
  const [service, namespace, svc] = hostname.split('.');
  if (svc !== 'svc' || !service || !namespace) throw new Error(`${hostname} is not a Service's name, and no stand-in serves it`);
  const found = await target.get<
    KubeObjectLike & { spec?: { selector?: Record<string, string>; ports?: { port: number; targetPort?: number | string }[] } }
  >(Services, { namespace, name: service });
  if (!found) throw new Error(`no Service ${namespace}/${service} in ${target.server}`);
  const served = found.spec?.ports?.find((sp) => sp.port === port);
  if (!served) throw new Error(`Service ${namespace}/${service} does not serve port ${port}`);
  // As kube-proxy does: to the pods' port the Service's targetPort names (its port when unset).
  const podPort = typeof served.targetPort === 'number' ? served.targetPort : served.targetPort ? undefined : served.port;
  const selector = Object.entries(found.spec!.selector ?? {});
  const selects = (reach: Reach): boolean =>
    'labels' in reach && reach.namespace === namespace && selector.length > 0 && selector.every(([k, v]) => reach.labels[k] === v);
  const selected = mine.filter((r) => selects(r.reach));
  const listening = selected.filter(
    (r) =>
      podPort === undefined ||
      (r.reach as { podPort?: number }).podPort === undefined ||
      (r.reach as { podPort?: number }).podPort === podPort,
  );
  if (selected.length && !listening.length)
    throw new Error(`Service ${namespace}/${service} sends port ${port} to port ${podPort} of its pods, where nothing listens`);
  const stores = new Set(listening.map((r) => r.endpoint));
  if (stores.size !== 1) throw new Error(`Service ${namespace}/${service} selects ${stores.size} running stores, not one`);
  return [...stores][0]!;
}

/**
 * The servers one stand-in runs, one per store it plays (keyed as it likes), each in a folder of
 * its own that goes with the server.
 */
export class S3Stores {
  private readonly servers = new Map<string, Promise<S3Server & { dir: string }>>();
  private readonly cluster: string;
  private closed = false;

  constructor(target: KubeClient) {
    this.cluster = target.server;
  }

  /** Starts the store's server once, with this root identity (and `identities`), and routes reach to it; its endpoint. */
  async run(key: string, root: S3Credentials, reach: Reach, identities: unknown[] = []): Promise<string> {
    if (this.closed) throw new Error('the stand-in has stopped');
    let server = this.servers.get(key);
    if (!server) {
      const dir = mkdtempSync(path.join(tmpdir(), 'provider-rook-s3-'));
      server = startS3Server({ dir, root, identities }).then(
        (s) => ({ ...s, dir }),
        (err: unknown) => {
          this.servers.delete(key); // the next pass tries again
          rmSync(dir, { recursive: true, force: true });
          throw err;
        },
      );
      this.servers.set(key, server);
    }
    const { endpoint } = await server;
    route(this.cluster, reach, endpoint);
    return endpoint;
  }

  /** Runs `weed shell` commands on a store's running server (what only the shell does, such as quotas). */
  async shell(key: string, commands: string[]): Promise<string> {
    const server = await this.servers.get(key);
    if (!server) throw new Error(`no server runs for ${key}`);
    return server.shell(commands);
  }

  /** Runs `weed shell` commands on the running server at this (loopback) endpoint. */
  async shellAt(endpoint: string, commands: string[]): Promise<string> {
    for (const starting of this.servers.values()) {
      const server = await starting.catch(() => undefined);
      if (server?.endpoint === endpoint) return server.shell(commands);
    }
    throw new Error(`no server of this stand-in runs at ${endpoint}`);
  }

  /** The servers' processes (for memory figures). */
  async pids(): Promise<number[]> {
    const servers = await Promise.all([...this.servers.values()].map((s) => s.catch(() => undefined)));
    return servers.filter((s) => s !== undefined).map((s) => s.pid);
  }

  async stop(key: string): Promise<void> {
    const starting = this.servers.get(key);
    this.servers.delete(key);
    const server = await starting?.catch(() => undefined);
    if (!server) return;
    unroute(server.endpoint);
    await server.stop();
    rmSync(server.dir, { recursive: true, force: true });
  }

  async stopAll(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.servers.keys()].map((key) => this.stop(key)));
  }
}
