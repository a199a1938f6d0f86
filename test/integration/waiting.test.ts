// Stuck work is visible and ends: a managed resource whose deletion waits on a finalizer someone else
// added says so (what, and since when), is counted in the waiting gauge, and finishes by itself once
// that finalizer goes; nothing is deleted in the target meanwhile. An object in the target held by
// someone else's finalizer is asked to go once, not again on every pass that waits for it.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ManagedObjectStores, type App } from '../../src/app.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { registry } from '../../src/kit/metrics.ts';
import { RookObjectStores } from '../../src/backends/rook-minio/objectstore.ts';
import { Events } from '../../src/kit/kube/resources.ts';
import { adminClient, testCluster, uniqueName } from '../kit/env.ts';
import { createNamespace, installCrds, ourCrds, preinstallOperator, registerProvider, startTestApp } from '../kit/provider.ts';
import { FakeMinioOperator } from '../fakes/fake-minio-operator.ts';
import { countWaitingAfter } from '../../src/runtime/managed-metrics.ts';
import { eventually } from '../kit/eventually.ts';

type Cond = { type: string; status: string; reason: string; message?: string };
let control: KubeClient;
let target: KubeClient;
let app: App;
let operator: FakeMinioOperator;
let ns: string;
const HOLD = 'example.com/backup-in-progress';

beforeAll(async () => {
  control = adminClient(testCluster('control'));
  target = adminClient(testCluster('target'));
  await installCrds(control, ourCrds());
  await preinstallOperator(target);
  operator = new FakeMinioOperator(target);
  await operator.start();
  ns = await createNamespace(control, 'waiting');
  await registerProvider(control, ns, 'target', testCluster('target'));
  countWaitingAfter(0);
  app = await startTestApp(testCluster('control'), { namespaces: [ns], pollIntervalMs: 1_000 });
}, 60_000);

afterAll(async () => {
  countWaitingAfter(300_000);
  await app?.stop();
  await operator?.stop();
});

const waiting = async (): Promise<number> =>
  ((await registry.getSingleMetric('provider_rook_managed_resource_waiting')?.get())?.values ?? [])
    .filter((v) => v.labels.reason === 'WaitingForFinalizers')
    .reduce((n, v) => n + v.value, 0);

describe('a deletion that waits on a finalizer someone else added', () => {
  it('says what it waits for and since when, is counted, and ends by itself once the finalizer goes', async () => {
    const name = uniqueName('held');
    const targetNamespace = uniqueName('t');
    await control.create(ManagedObjectStores, {
      apiVersion: ManagedObjectStores.apiVersion,
      kind: 'ObjectStore',
      metadata: { name, namespace: ns, finalizers: [HOLD] },
      spec: { forProvider: { scope: { nodeCount: 4 } }, targetNamespace, providerRef: { name: 'target' } },
    });
    await eventually(async () => Boolean(await target.get(RookObjectStores, name, targetNamespace)), 'the store in the target');
    await control.delete(ManagedObjectStores, name, ns);
    const synced = await eventually(async () => {
      const mr = await control.get<{ metadata: { name: string }; status?: { conditions?: Cond[] } }>(ManagedObjectStores, name, ns);
      const c = mr?.status?.conditions?.find((x) => x.type === 'Synced');
      return c?.reason === 'WaitingForFinalizers' ? c : undefined;
    }, 'the store to say what its deletion waits for');
    expect(synced.status).toBe('False');
    expect(synced.message).toMatch(
      new RegExp(`^waiting since \\d{4}-\\d\\d-\\d\\dT[0-9:]+Z for finalizers provider-rook does not own to go first: ${HOLD}$`),
    );
    // The gauge reads the informer's cache, which sees the condition once its watch event arrives.
    await eventually(async () => (await waiting()) >= 1, 'the waiting gauge to count it');
    // Nothing is deleted in the target while others clean up first.
    expect(await target.get(RookObjectStores, name, targetNamespace)).toBeDefined();

    const mr = (await control.get<{ metadata: { name: string; finalizers?: string[] } }>(ManagedObjectStores, name, ns))!;
    await control.update(ManagedObjectStores, {
      ...mr,
      metadata: { ...mr.metadata, finalizers: mr.metadata.finalizers!.filter((f) => f !== HOLD) },
    });
    await eventually(async () => (await control.get(ManagedObjectStores, name, ns)) === undefined, 'the store to be gone', 30_000);
    expect(await target.get(RookObjectStores, name, targetNamespace)).toBeUndefined();
  }, 60_000);
});

const counted = async (name: string, match: (labels: Partial<Record<string, string | number>>) => boolean): Promise<number> =>
  ((await registry.getSingleMetric(name)?.get())?.values ?? []).filter((v) => match(v.labels)).reduce((n, v) => n + v.value, 0);

describe('a deletion that waits on a finalizer someone else added in the target', () => {
  it('asks the object to go once and says so once, however many passes wait for it', async () => {
    const name = uniqueName('held-there');
    const targetNamespace = uniqueName('t');
    const targetHost = new URL(testCluster('target').server).host;
    const deletes = () => counted('rest_client_requests_total', (l) => l.host === targetHost && l.method === 'DELETE');
    const passes = () => counted('controller_runtime_reconcile_total', (l) => String(l.controller).startsWith('managed/objectstore'));
    await control.create(ManagedObjectStores, {
      apiVersion: ManagedObjectStores.apiVersion,
      kind: 'ObjectStore',
      metadata: { name, namespace: ns },
      spec: { forProvider: { scope: { nodeCount: 4 } }, targetNamespace, providerRef: { name: 'target' } },
    });
    await eventually(async () => Boolean(await target.get(RookObjectStores, name, targetNamespace)), 'the store in the target');
    // A backup tool in the target holds the store until it is done.
    await target.mergePatch(RookObjectStores, name, targetNamespace, { metadata: { finalizers: [HOLD] } });
    await control.delete(ManagedObjectStores, name, ns);
    await eventually(
      async () =>
        Boolean(
          (await target.get<KubeObjectLike & { metadata: { deletionTimestamp?: string } }>(RookObjectStores, name, targetNamespace))
            ?.metadata.deletionTimestamp,
        ),
      'the store asked to go',
    );
    await eventually(async () => {
      const mr = await control.get<KubeObjectLike & { status?: { conditions?: Cond[] } }>(ManagedObjectStores, name, ns);
      return mr?.status?.conditions?.some((c) => c.type === 'Ready' && c.reason === 'Deleting');
    }, 'the resource to say Deleting');
    const deletesThen = await deletes();
    const passesThen = await passes();
    // Passes while it waits: each change of the resource brings one at once (its own requeues back off
    // up to a minute).
    for (let touch = 1; touch <= 3; touch++) {
      await control.mergePatch(ManagedObjectStores, name, ns, { metadata: { annotations: { 'example.com/touched': String(touch) } } });
      await eventually(async () => (await passes()) >= passesThen + touch, `pass ${touch} while the store is held`, 30_000);
    }
    expect(await deletes()).toBe(deletesThen);
    const events = (
      await control.list<KubeObjectLike & { reason: string; count?: number; involvedObject: { name: string } }>(Events, { namespace: ns })
    ).items.filter((e) => e.involvedObject.name === name && e.reason === 'DeletedExternalResource');
    expect(events.map((e) => e.count ?? 1)).toEqual([1]);

    await target.mergePatch(RookObjectStores, name, targetNamespace, { metadata: { finalizers: null } });
    await eventually(async () => (await control.get(ManagedObjectStores, name, ns)) === undefined, 'the resource to be gone', 30_000);
    expect(await target.get(RookObjectStores, name, targetNamespace)).toBeUndefined();
  }, 90_000);
});
