// A TCP proxy in front of a real API server that can play a connection that died silently: freeze()
// stops relaying on every open connection without closing it (as when a NAT or a load balancer
// forgets it), and forget() resets each at its next request; new connections still pass. The server
// behind it stays real.
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export class FreezableProxy {
  private readonly server: Server;
  private readonly pairs = new Set<[Socket, Socket]>();
  private readonly upstream: { host: string; port: number };

  constructor(upstream: string) {
    const url = new URL(upstream);
    this.upstream = { host: url.hostname, port: Number(url.port) };
    this.server = createServer((client) => {
      const server = createConnection(this.upstream);
      const pair: [Socket, Socket] = [client, server];
      this.pairs.add(pair);
      client.pipe(server);
      server.pipe(client);
      const close = (): void => {
        this.pairs.delete(pair);
        client.destroy();
        server.destroy();
      };
      client.on('error', close).on('close', close);
      server.on('error', close).on('close', close);
    });
  }

  /** Listens (again, after close, on the port it had: the same URL comes back). */
  async listen(port = 0): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    return `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Every open connection stops carrying bytes either way, and stays open. */
  freeze(): number {
    for (const [client, server] of this.pairs) {
      client.unpipe(server);
      server.unpipe(client);
      client.pause();
      server.pause();
    }
    return this.pairs.size;
  }

  /**
   * Every open connection is forgotten, as by a NAT or a load balancer that restarted: the next bytes
   * a client sends on one are answered with a reset. New connections still pass.
   */
  forget(): number {
    for (const [client, server] of this.pairs) {
      client.unpipe(server);
      client.once('data', () => {
        client.resetAndDestroy();
      });
      client.resume();
    }
    return this.pairs.size;
  }

  /** Connections opened so far and still open. */
  get open(): number {
    return this.pairs.size;
  }

  async close(): Promise<void> {
    for (const [client, server] of this.pairs) {
      client.destroy();
      server.destroy();
    }
    await new Promise((resolve) => this.server.close(resolve));
  }
}
