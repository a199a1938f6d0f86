// Requests go only where they may. An intruder holding only
// provider-rook:provider-admin in its namespace writes Provider Secrets whose server is a host NAME
// that resolves to the cloud metadata address, at once or after it first served the real target
// (DNS rebinding). Names resolve only through the test's own resolver: the name is `localhost`, so
// even code that ignored that resolver would reach only this machine's /etc/hosts and a local tripwire.
// Each test starts a provider-rook of its own (not the shared fixture), as the resolver is a start
// option and what each counts (lookups, connections) must be its own.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createConnection, createServer, type AddressInfo, type LookupFunction, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type App } from '../../src/app.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { ObjectStore } from '../../src/backends/rook-minio/api.ts';
import type { Provider } from '../../src/apis/provider.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Events, Secrets } from '../../src/kit/kube/resources.ts';
import { Providers } from '../../src/runtime/system/provider-status.ts';
import { adminClient, testCluster, uniqueName } from '../kit/env.ts';
import {
  createNamespace,
  identityClient,
  installCrds,
  installRoles,
  ourCrds,
  providerSecretKeys,
  startTestApp,
  writeSecret,
} from '../kit/provider.ts';
import { eventually } from '../kit/eventually.ts';
import { cond } from '../kit/conditions.ts';

const METADATA = '169.254.169.254';
const RULE =
  /the target cluster's host name resolves to a link-local, unspecified or cloud metadata address, which provider-rook never calls$/;

/** The resolver provider-rook's target connections use: answers set by the test, every question counted. */
function resolver(address: string[]) {
  const r = {
    answer: address,
    lookups: 0,
    /** Answers that named a loopback address: a connection to the relay needs one of its own. */
    loopbackAnswers: 0,
    lookup: ((hostname, options, callback) => {
      r.lookups++;
      if (hostname !== 'localhost') return callback(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }), '');
      if (r.answer.some((a) => a.startsWith('127.'))) r.loopbackAnswers++;
      const all = r.answer.map((a) => ({ address: a, family: 4 }));
      if (options.all) callback(null, all);
      else callback(null, all[0]!.address, 4);
    }) as LookupFunction,
  };
  return r;
}

/** Every address this process tried to connect to (net and tls sockets announce each attempt). */
const attempts: string[] = [];
const onSocket = (message: unknown): void =>
  void (message as { socket: Socket }).socket.on('connectionAttempt', (ip: string) => attempts.push(ip));

/** A TCP relay to the real target API server that can drop every open connection, as a restarting server or a load balancer does. */
class Relay {
  connections = 0;
  private readonly server: Server;
  private readonly open = new Set<Socket>();
  constructor(upstream: URL) {
    this.server = createServer((client) => {
      this.connections++;
      const server = createConnection({ host: upstream.hostname, port: Number(upstream.port) });
      for (const s of [client, server]) {
        this.open.add(s);
        s.on('error', () => undefined).on('close', () => {
          this.open.delete(s);
          client.destroy();
          server.destroy();
        });
      }
      client.pipe(server).pipe(client);
    });
  }
  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as AddressInfo).port;
  }
  dropAll(): void {
    for (const s of this.open) s.destroy();
  }
  async close(): Promise<void> {
    this.dropAll();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

let control: KubeClient;
const apps: App[] = [];
const closing: { close(): unknown }[] = [];

/** A namespace with the intruder in it: a ServiceAccount bound to provider-rook:provider-admin there, and nothing else. */
async function intruderIn(prefix: string): Promise<{ ns: string; intruder: KubeClient }> {
  const ns = await createNamespace(control, prefix);
  return {
    ns,
    intruder: await identityClient(
      testCluster('control'),
      control,
      { namespace: ns, name: 'intruder' },
      { role: 'provider-rook:provider-admin' },
    ),
  };
}

async function writeProvider(client: KubeClient, ns: string, name: string, keys: Record<string, string>): Promise<void> {
  await writeSecret(client, { namespace: ns, name: `${name}-creds` }, keys);
  await client.apply(Providers, {
    apiVersion: Providers.apiVersion,
    kind: 'Provider',
    metadata: { name, namespace: ns },
    spec: { credentialsSecretRef: { name: `${name}-creds` } },
  });
}

const readyIs = (ns: string, name: string, status: string, reason: string, timeoutMs = 30_000): Promise<Provider> =>
  eventually(
    async () => {
      const p = await control.get<Provider>(Providers, { namespace: ns, name });
      const ready = cond(p, 'Ready');
      return ready?.status === status && ready.reason === reason ? p : undefined;
    },
    `Provider ${ns}/${name} to be Ready=${status} (${reason})`,
    {
      timeoutMs,
      explain: async () => JSON.stringify(cond(await control.get<Provider>(Providers, { namespace: ns, name }), 'Ready')),
    },
  );

/** Whatever provider-rook wrote where the intruder or anyone else can read it. */
async function written(ns: string): Promise<string> {
  const providers = (await control.list<Provider>(Providers, { namespace: ns })).items.map((p) => p.status);
  const stores = (await control.list<ObjectStore>(kinds.ObjectStore, { namespace: ns })).items.map((s) => s.status);
  const events = (await control.list<KubeObjectLike & { reason?: string; message?: string }>(Events, { namespace: ns })).items.map((e) => [
    e.reason,
    e.message,
  ]);
  return JSON.stringify([providers, stores, events]);
}

beforeAll(async () => {
  control = adminClient(testCluster('control'));
  await installCrds(control, ourCrds());
  await installRoles(control);
  subscribe('net.client.socket', onSocket);
}, 60_000);

afterAll(async () => {
  unsubscribe('net.client.socket', onSocket);
  await Promise.all(apps.map((a) => a.stop()));
  await Promise.all(closing.map((c) => c.close()));
});

describe("an intruder's Provider endpoint", () => {
  it('a host name that resolves to the metadata address is refused before any connection, with EndpointNotAllowed', async () => {
    const { ns, intruder } = await intruderIn('meta');
    // Would anything connect where the name is sent, it lands here (on this machine), and counts.
    let tripped = 0;
    const tripwire = createServer((s) => {
      tripped++;
      s.destroy();
    });
    closing.push(tripwire);
    await new Promise<void>((resolve) => tripwire.listen(0, '127.0.0.1', resolve));
    const port = (tripwire.address() as AddressInfo).port;
    const keys = {
      endpoint: `https://localhost:${port}`,
      clusterCA: providerSecretKeys(testCluster('target')).clusterCA!,
      token: 'INTRUDER-TOKEN',
    };

    // First an answer whose first address is this machine: a guard that let it through would reach the tripwire, not the metadata address.
    const dns = resolver(['127.0.0.1', METADATA]);
    const app = await startTestApp(testCluster('control'), { namespaces: [ns], endpoints: { lookup: dns.lookup } });
    apps.push(app);
    await writeProvider(intruder, ns, 'mixed', keys);
    const mixed = await readyIs(ns, 'mixed', 'False', 'EndpointNotAllowed');
    expect(cond(mixed, 'Ready')?.message).toMatch(RULE);

    // Now only the metadata address, for a second Provider and a managed resource that names it.
    dns.answer = [METADATA];
    await writeProvider(intruder, ns, 'metadata', keys);
    const store = uniqueName('store');
    await control.create(kinds.ObjectStore, {
      apiVersion: kinds.ObjectStore.apiVersion,
      kind: 'ObjectStore',
      metadata: { name: store, namespace: ns },
      spec: { forProvider: { scope: { nodeCount: 4 } }, targetNamespace: 'rook-minio', providerRef: { name: 'metadata' } },
    } as unknown as ObjectStore);
    const meta = await readyIs(ns, 'metadata', 'False', 'EndpointNotAllowed');
    expect(cond(meta, 'Ready')?.message).toBe(
      "the target cluster's host name resolves to a link-local, unspecified or cloud metadata address, which provider-rook never calls",
    );
    const mr = await eventually(async () => {
      const got = await control.get<ObjectStore>(kinds.ObjectStore, { namespace: ns, name: store });
      return cond(got, 'Synced')?.reason === 'EndpointNotAllowed' ? got : undefined;
    }, 'the managed resource to say Synced=False/EndpointNotAllowed');
    expect(cond(mr, 'Synced')?.message).toMatch(RULE);

    // The name was asked about, again and again; nothing connected anywhere it pointed.
    expect(dns.lookups).toBeGreaterThan(2);
    expect(tripped).toBe(0);
    expect(attempts.filter((ip) => !/^(127\.|::1$)/.test(ip))).toEqual([]);
    expect(await written(ns)).not.toMatch(/169\.254|localhost|INTRUDER-TOKEN|ENOTFOUND/);
  }, 90_000);

  it('a host name that served the real target and then answers the metadata address is refused at the next connection', async () => {
    const { ns, intruder } = await intruderIn('rebind');
    const real = providerSecretKeys(testCluster('target'));
    const relay = new Relay(new URL(real.endpoint!));
    closing.push(relay);
    const port = await relay.listen();
    const dns = resolver(['127.0.0.1']);
    const app = await startTestApp(testCluster('control'), { namespaces: [ns], endpoints: { lookup: dns.lookup } });
    apps.push(app);
    // `localhost` is in the target's serving certificate, so TLS verifies as for the real name.
    const keys = { ...real, endpoint: `https://localhost:${port}` };
    await writeProvider(intruder, ns, 'target', keys);
    await readyIs(ns, 'target', 'True', 'Reachable');
    const secret = (await intruder.get<KubeObjectLike & { data: Record<string, string> }>(Secrets, {
      namespace: ns,
      name: 'target-creds',
    }))!;
    expect(relay.connections).toBeGreaterThan(0);

    // The name now answers the metadata address; the server drops its connections (a restart, a load
    // balancer): every new connection looks the name up again, and is refused.
    dns.answer = [METADATA];
    const before = { lookups: dns.lookups, answered: dns.loopbackAnswers };
    relay.dropAll();
    const refused = await readyIs(ns, 'target', 'False', 'EndpointNotAllowed');
    expect(cond(refused, 'Ready')?.message).toMatch(RULE);
    expect(dns.lookups).toBeGreaterThan(before.lookups);
    // Every connection to the relay needs a lookup that answered its address, and none has since the
    // switch: connections begun before it may still land (a busy machine), but not one more.
    expect(dns.loopbackAnswers).toBe(before.answered);
    expect(relay.connections).toBeLessThanOrEqual(before.answered);
    expect(attempts.filter((ip) => !/^(127\.|::1$)/.test(ip))).toEqual([]);

    // Nothing was lost: the intruder's Secret is as written, nothing echoes the address, and an honest answer works again.
    const after = (await intruder.get<KubeObjectLike & { data: Record<string, string> }>(Secrets, {
      namespace: ns,
      name: 'target-creds',
    }))!;
    expect([after.metadata.resourceVersion, after.data]).toEqual([secret.metadata.resourceVersion, secret.data]);
    expect(await written(ns)).not.toMatch(/169\.254|localhost/);
    dns.answer = ['127.0.0.1'];
    await readyIs(ns, 'target', 'True', 'Reachable', 45_000);
  }, 120_000);

  it('plain http is refused by default, even without credentials, naming the flag that allows it', async () => {
    const { ns, intruder } = await intruderIn('plain');
    let tripped = 0;
    const tripwire = createServer((s) => {
      tripped++;
      s.destroy();
    });
    closing.push(tripwire);
    await new Promise<void>((resolve) => tripwire.listen(0, '127.0.0.1', resolve));
    const port = (tripwire.address() as AddressInfo).port;
    const dns = resolver(['127.0.0.1']);
    apps.push(await startTestApp(testCluster('control'), { namespaces: [ns], endpoints: { lookup: dns.lookup } }));
    const kubeconfig =
      `apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: c\n  cluster: {server: 'http://localhost:${port}'}\n` +
      'contexts:\n- name: c\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: {}\n';
    await writeProvider(intruder, ns, 'plain', { kubeconfig });
    const p = await readyIs(ns, 'plain', 'False', 'InvalidCredentials');
    expect(cond(p, 'Ready')?.message).toBe(
      `key 'kubeconfig' of Secret ${ns}/plain-creds has clusters[0].cluster.server that uses plain http, which provider-rook refuses unless started with --allow-plain-http`,
    );
    expect(dns.lookups).toBe(0);
    expect(tripped).toBe(0);
  }, 60_000);
});
