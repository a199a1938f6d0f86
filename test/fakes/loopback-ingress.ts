// TEST DOUBLE: the ingress (or load balancer) a platform team runs in front of a store's S3 Service,
// reachable from every cluster. It listens on an address of its own on loopback and relays each
// connection, bytes unchanged (the Host header S3 signs included), to whatever the Service leads to
// inside the store's cluster, looked up per connection as kube-proxy would (resolveS3Endpoint,
// placed in that cluster). It answers on its own address only: nothing else resolves to it.
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { KubeClient } from '../../src/kit/kube/client.ts';
import { resolveS3Endpoint } from './s3-stores.ts';

let next = 10;

export class LoopbackIngress {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  /** The loopback address it listens on, its own (127.0.77.x unless given). */
  readonly host: string;
  private readonly port: number;

  /** Relays to `service` (e.g. http://store-s3.ns.svc.cluster.local:9000) as it resolves in the cluster of `inside`. */
  constructor(service: string, inside: KubeClient, at: { host?: string; port?: number } = {}) {
    this.host = at.host ?? `127.0.77.${next++}`;
    this.port = at.port ?? 0;
    this.server = createServer((client) => {
      this.sockets.add(client);
      client.pause();
      resolveS3Endpoint(service, inside).then(
        (endpoint) => {
          const url = new URL(endpoint);
          const upstream = createConnection({ host: url.hostname, port: Number(url.port) });
          this.sockets.add(upstream);
          client.pipe(upstream);
          upstream.pipe(client);
          client.resume();
          const close = (): void => {
            client.destroy();
            upstream.destroy();
            this.sockets.delete(client);
            this.sockets.delete(upstream);
          };
          client.on('error', close).on('close', close);
          upstream.on('error', close).on('close', close);
        },
        () => client.destroy(), // a Service that leads nowhere: the connection is refused, as a real ingress's 502 would fail the client
      );
    });
  }

  /** Starts listening; the URL clients use (http://<its address>:<port>). */
  async listen(): Promise<string> {
    await new Promise<void>((resolve, reject) => this.server.once('error', reject).listen(this.port, this.host, resolve));
    return this.url;
  }

  /** The URL clients use, once it listens. */
  get url(): string {
    return `http://${this.host}:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
