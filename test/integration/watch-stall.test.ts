// A watch whose connection died silently (no error, no close, just no bytes) is noticed and
// replaced: the informer sees changes again within its idle bound, on a new connection.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Informer } from '../../src/kit/controller/informer.ts';
import { KubeClient, type KubeObjectLike } from '../../src/kit/kube/client.ts';
import { ConfigMaps } from '../../src/kit/kube/resources.ts';
import { silentLogger } from '../../src/kit/logger.ts';
import { adminClient, kubeConfigOf, testCluster } from '../kit/env.ts';
import { createNamespace } from '../kit/provider.ts';
import { FreezableProxy } from '../kit/proxy.ts';
import { eventually } from '../kit/eventually.ts';

let admin: KubeClient;
let proxy: FreezableProxy;
let throughProxy: KubeClient;
let proxyServer: string;
const clients: KubeClient[] = [];
let ns: string;

beforeAll(async () => {
  admin = adminClient(testCluster('control'));
  ns = await createNamespace(admin, 'stall');
  proxy = new FreezableProxy(testCluster('control').server);
  proxyServer = await proxy.listen();
  throughProxy = new KubeClient(
    { ...kubeConfigOf(testCluster('control')), server: proxyServer },
    { fieldManager: 'stall-test', watchIdleMs: 2_000, timeoutMs: 2_000 },
  );
});

afterAll(async () => {
  await throughProxy?.close();
  await Promise.all(clients.map((c) => c.close()));
  await proxy?.close();
  await admin?.close();
});

/** A client through the proxy with a pool of its own (no connection another case froze), closed after the file. */
function ownClient(): KubeClient {
  const c = new KubeClient(
    { ...kubeConfigOf(testCluster('control')), server: proxyServer },
    { fieldManager: 'stall-test', timeoutMs: 2_000 },
  );
  clients.push(c);
  return c;
}

const configMap = (name: string): KubeObjectLike => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns } });

describe('a watch on a connection that died silently', () => {
  it('is replaced within its idle bound, and the informer sees what changed meanwhile', async () => {
    const informer = new Informer<KubeObjectLike>(throughProxy, ConfigMaps, { namespaces: [ns], log: silentLogger });
    await informer.start();
    try {
      await admin.create(ConfigMaps, configMap('before'));
      await eventually(() => informer.get(`${ns}/before`), 'the informer to see a change while the connection lives');

      expect(proxy.freeze()).toBeGreaterThan(0);
      await admin.create(ConfigMaps, configMap('during'));
      // Without the idle bound the watch would wait for its server-side timeout (4-5 minutes).
      await eventually(() => informer.get(`${ns}/during`), 'the informer to see a change made after its connection died', 20_000);
    } finally {
      await informer.stop();
    }
  });
});

describe('a request on a connection that died silently', () => {
  it('fails at its deadline, and the next request goes out on a new connection', async () => {
    // A client of its own: the frozen connections of the test above are not in its pool.
    const throughProxy = ownClient();
    await admin.create(ConfigMaps, configMap('get-me'));
    expect((await throughProxy.get(ConfigMaps, { namespace: ns, name: 'get-me' }))?.metadata.name).toBe('get-me');
    expect(proxy.freeze()).toBeGreaterThan(0);
    const started = performance.now();
    await expect(throughProxy.get(ConfigMaps, { namespace: ns, name: 'get-me' })).rejects.toThrow(/timed out/);
    expect(performance.now() - started).toBeLessThan(4_000);
    // The request's connection was dropped at its deadline; a fresh one answers.
    await eventually(
      async () => (await throughProxy.get(ConfigMaps, { namespace: ns, name: 'get-me' }))?.metadata.name === 'get-me',
      'a read on a new connection',
      15_000,
    );
  });
});

describe('idle pooled connections that died together', () => {
  it('are all dropped when a request on one of them meets its deadline: the next request does not wait out another', async () => {
    const c = ownClient();
    await admin.create(ConfigMaps, configMap('siblings'));
    // Three requests at once leave three idle connections in the pool.
    await Promise.all([1, 2, 3].map(() => c.get(ConfigMaps, { namespace: ns, name: 'siblings' })));
    expect(proxy.freeze()).toBeGreaterThanOrEqual(3);
    await expect(c.get(ConfigMaps, { namespace: ns, name: 'siblings' })).rejects.toThrow(/timed out/);
    const started = performance.now();
    expect((await c.get(ConfigMaps, { namespace: ns, name: 'siblings' }))?.metadata.name).toBe('siblings');
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('are all dropped when one of them is reset: a read sent again goes out on a new connection, not on the next forgotten one', async () => {
    const c = ownClient();
    await admin.create(ConfigMaps, configMap('reset'));
    // Eight requests at once leave eight idle connections in the pool: more than a read's attempts.
    await Promise.all([1, 2, 3, 4, 5, 6, 7, 8].map(() => c.get(ConfigMaps, { namespace: ns, name: 'reset' })));
    expect(proxy.forget()).toBeGreaterThanOrEqual(8);
    expect((await c.get(ConfigMaps, { namespace: ns, name: 'reset' }))?.metadata.name).toBe('reset');
  });
});
