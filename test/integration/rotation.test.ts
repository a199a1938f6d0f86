// A rotated Provider Secret: seen through its watch within seconds, and the client made from the
// old credentials (with its watches) is closed at once instead of idling for half an hour.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ManagedObjectStores, type App } from '../../src/app.ts';
import type { ObjectStore } from '../../src/apis/objectstore.ts';
import type { KubeClient } from '../../src/kit/kube/client.ts';
import { Providers } from '../../src/runtime/system/provider-status.ts';
import { adminClient, testCluster, uniqueName } from '../kit/env.ts';
import {
  createNamespace,
  installCrds,
  ourCrds,
  preinstallOperator,
  providerSecretKeys,
  startTestApp,
  writeSecret,
} from '../kit/provider.ts';
import { FakeMinioOperator } from '../fakes/fake-minio-operator.ts';
import { targetClients } from '../../src/runtime/managed-metrics.ts';
import { eventually } from '../kit/eventually.ts';

let control: KubeClient;
let app: App;
let operator: FakeMinioOperator;
let ns: string;
const openClients = async (): Promise<number> => (await targetClients.get()).values[0]?.value ?? 0;

const synced = async (name: string): Promise<{ status: string; reason?: string } | undefined> =>
  (await control.get<ObjectStore>(ManagedObjectStores, name, ns))?.status?.conditions?.find((c) => c.type === 'Synced');

beforeAll(async () => {
  control = adminClient(testCluster('control'));
  const target = adminClient(testCluster('target'));
  await installCrds(control, ourCrds());
  await preinstallOperator(target);
  operator = new FakeMinioOperator(target);
  await operator.start();
  ns = await createNamespace(control, 'rotate');
  await writeSecret(control, ns, 'creds', providerSecretKeys(testCluster('target')));
  await control.apply(Providers, {
    apiVersion: Providers.apiVersion,
    kind: 'Provider',
    metadata: { name: 'target', namespace: ns },
    spec: { credentialsSecretRef: { name: 'creds' } },
  });
  app = await startTestApp(testCluster('control'), { namespaces: [ns], pollIntervalMs: 1_000 });
}, 60_000);

afterAll(async () => {
  await app?.stop();
  await operator?.stop();
});

describe('Provider Secret rotation', () => {
  it('is picked up within seconds, and the superseded client is closed at once', async () => {
    const name = uniqueName('rot');
    await control.create(ManagedObjectStores, {
      apiVersion: ManagedObjectStores.apiVersion,
      kind: 'ObjectStore',
      metadata: { name, namespace: ns },
      spec: { forProvider: { scope: { nodeCount: 4 } }, targetNamespace: uniqueName('t'), providerRef: { name: 'target' } },
    });
    await eventually(async () => (await synced(name))?.status === 'True', 'the store to be Synced');
    expect(await openClients()).toBe(1);
    // New credentials that the target refuses: the change is visible in the store's condition.
    const { clientCert: _c, clientKey: _k, ...rest } = providerSecretKeys(testCluster('target'));
    const rotatedAt = Date.now();
    await writeSecret(control, ns, 'creds', { ...rest, token: 'not-a-valid-token' });
    await eventually(
      async () => (await synced(name))?.reason === 'Unauthorized',
      'the store to report the new credentials refused',
      15_000,
    );
    expect(Date.now() - rotatedAt).toBeLessThan(10_000);
    // One client: the new one. The old one's watches and connections are gone.
    expect(await openClients()).toBe(1);
  }, 60_000);
});
