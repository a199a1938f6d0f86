// Steady state costs nothing: once every store is Ready, several polls later neither API server has
// served a single write, and provider-rook has sent no request but its open watches: every poll is
// answered from the watch caches. Runs on its own pair of clusters so no other test's writes count.
import { describe, expect, it } from '@jest/globals';
import { BucketClasses, BucketPolicies, Buckets } from '../../src/app.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { Bucket } from '../../src/apis/storage.ts';
import { applyManifests } from '../kit/manifests.ts';
import type { ObjectStore } from '../../src/backends/rook-minio/api.ts';
import { uniqueName } from '../kit/env.ts';
import { difference, writeCounts } from '../kit/apiserver-metrics.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { eventually } from '../kit/eventually.ts';

const pollMs = 1_000;
// Every request provider-rook sends, by "METHOD path" (watches open and reopen: they are not reads).
let requests: string[] = [];
const rook = withProviderRook({
  controlCluster: `quiet-control-${process.pid}`,
  cluster: `quiet-target-${process.pid}`,
  namespaces: { ns: 'quiet', appNs: 'quiet-app' },
  provider: { name: 'target', in: 'ns' },
  app: {
    pollIntervalMs: pollMs,
    onRequest: (_server, method, path) => {
      if (method !== 'WATCH') requests.push(`${method} ${path}`);
    },
  },
});

describe('steady state', () => {
  it('makes zero write requests to either API server once everything is reconciled', async () => {
    const { control, controlCluster, cluster: targetCluster } = rook;
    const { ns, appNs } = rook.ns;

    // Two claims as well (one naming its class, one defaulted by a policy): all three claim-side
    // controllers must come to rest too.
    await applyManifests(control, [
      {
        apiVersion: kinds.ObjectStoreClass.apiVersion,
        kind: 'ObjectStoreClass',
        metadata: { name: 'standard', namespace: ns },
        spec: { scope: { nodeCount: 4 }, providerRef: { name: 'target' } },
      },
      {
        apiVersion: BucketClasses.apiVersion,
        kind: 'BucketClass',
        metadata: { name: 'standard', namespace: appNs },
        classRef: { apiVersion: kinds.ObjectStoreClass.apiVersion, kind: 'ObjectStoreClass', name: 'standard', namespace: ns },
      },
      {
        apiVersion: BucketPolicies.apiVersion,
        kind: 'BucketPolicy',
        metadata: { name: 'default', namespace: appNs },
        spec: { defaultClassRef: { name: 'standard' } },
      },
      {
        apiVersion: Buckets.apiVersion,
        kind: 'Bucket',
        metadata: { name: 'named', namespace: appNs },
        spec: { classRef: { name: 'standard' }, writeConnectionSecretToRef: { name: 'named' } },
      },
      {
        apiVersion: Buckets.apiVersion,
        kind: 'Bucket',
        metadata: { name: 'defaulted', namespace: appNs },
        spec: { writeConnectionSecretToRef: { name: 'defaulted' } },
      },
    ]);

    const stores = Array.from({ length: 3 }, () => uniqueName('quiet'));
    for (const name of stores) {
      await control.create(kinds.ObjectStore, {
        apiVersion: kinds.ObjectStore.apiVersion,
        kind: 'ObjectStore',
        metadata: { name, namespace: ns },
        spec: {
          forProvider: { scope: { nodeCount: 4 } },
          targetNamespace: uniqueName('t'),
          providerRef: { name: 'target' },
          writeConnectionSecretToRef: { name: `${name}-conn` },
        },
      });
    }
    await eventually(async () => {
      const { items } = await control.list<ObjectStore>(kinds.ObjectStore, { namespace: ns });
      const claims = (await control.list<Bucket>(Buckets, { namespace: appNs })).items;
      return (
        items.length === 5 &&
        items.every((mr) => mr.status?.conditions?.every((c) => c.status === 'True') && mr.status.conditions.length === 2) &&
        claims.every((c) => c.status?.bindingPhase === 'Bound' && c.status.conditions?.every((cond) => cond.status === 'True'))
      );
    }, 'all stores Ready and Synced, all claims Bound');
    // Let in-flight follow-ups (the pass after create, the connection Secret) settle.
    await new Promise((r) => setTimeout(r, 3 * pollMs));

    const before = await Promise.all([writeCounts(controlCluster), writeCounts(targetCluster)]);
    requests = [];
    await new Promise((r) => setTimeout(r, 6 * pollMs)); // six polls of every store (3 direct, 2 claimed) and the Provider
    const after = await Promise.all([writeCounts(controlCluster), writeCounts(targetCluster)]);
    const writes = { control: difference(after[0], before[0]), target: difference(after[1], before[1]) };
    const sent = requests;
    console.log(
      `during 6 polls of 5 stores and 2 bound claims: writes at the API servers ${JSON.stringify(writes)}; provider-rook's requests: ${sent.length}`,
    );
    expect(writes).toEqual({ control: {}, target: {} });
    expect(sent).toEqual([]);
  }, 120_000);
});
