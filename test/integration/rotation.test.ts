// A rotated Provider Secret: seen through its watch within seconds, and the client made from the
// old credentials (with its watches) is closed at once instead of idling for half an hour.
import { describe, expect, it } from '@jest/globals';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { ObjectStore } from '../../src/backends/rook-minio/api.ts';
import { testCluster, uniqueName } from '../kit/env.ts';
import { providerSecretKeys, writeSecret } from '../kit/provider.ts';
import { targetClients } from '../../src/runtime/managed-metrics.ts';
import { eventually } from '../kit/eventually.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { cond } from '../kit/conditions.ts';

const env = withProviderRook({
  namespaces: { apps: 'rotate' },
  provider: { name: 'target', in: 'apps' },
});

const openClients = async (): Promise<number> => (await targetClients.get()).values[0]?.value ?? 0;

const synced = async (name: string): Promise<{ status: string; reason?: string } | undefined> =>
  cond(await env.control.get<ObjectStore>(kinds.ObjectStore, { namespace: env.ns.apps, name }), 'Synced');

describe('Provider Secret rotation', () => {
  it('is picked up within seconds, and the superseded client is closed at once', async () => {
    const name = uniqueName('rot');
    await env.control.create(kinds.ObjectStore, {
      apiVersion: kinds.ObjectStore.apiVersion,
      kind: 'ObjectStore',
      metadata: { name, namespace: env.ns.apps },
      spec: { forProvider: { scope: { nodeCount: 4 } }, targetNamespace: uniqueName('t'), providerRef: { name: 'target' } },
    });
    await eventually(async () => (await synced(name))?.status === 'True', 'the store to be Synced');
    expect(await openClients()).toBe(1);
    // New credentials that the target refuses: the change is visible in the store's condition.
    const { clientCert: _c, clientKey: _k, ...rest } = providerSecretKeys(testCluster('target'));
    const rotatedAt = Date.now();
    await writeSecret(env.control, { namespace: env.ns.apps, name: 'target-creds' }, { ...rest, token: 'not-a-valid-token' });
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
