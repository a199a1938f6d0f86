// Stuck work is visible and ends: a managed resource whose deletion waits on a finalizer someone else
// added says so (what, and since when), is counted in the waiting gauge, and finishes by itself once
// that finalizer goes; nothing is deleted in the target meanwhile. An object in the target held by
// someone else's finalizer is asked to go once, not again on every pass that waits for it.
import { describe, expect, it } from '@jest/globals';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { KubeObjectLike } from '../../src/kit/kube/client.ts';
import { registry } from '../../src/kit/metrics.ts';
import { RookObjectStores } from '../../src/backends/rook-minio/objectstore.ts';
import { Events } from '../../src/kit/kube/resources.ts';
import { testCluster, uniqueName } from '../kit/env.ts';
import { countWaitingAfter } from '../../src/runtime/managed-metrics.ts';
import { eventually } from '../kit/eventually.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { cond } from '../kit/conditions.ts';

type Cond = { type: string; status: string; reason: string; message?: string };
const env = withProviderRook({
  namespaces: { apps: 'waiting' },
  provider: { name: 'target', in: 'apps' },
  before: async () => {
    countWaitingAfter(0);
  },
  after: async () => {
    countWaitingAfter(300_000);
  },
});
const HOLD = 'example.com/backup-in-progress';

const waiting = async (): Promise<number> =>
  ((await registry.getSingleMetric('provider_rook_managed_resource_waiting')?.get())?.values ?? [])
    .filter((v) => v.labels.reason === 'WaitingForFinalizers')
    .reduce((n, v) => n + v.value, 0);

describe('a deletion that waits on a finalizer someone else added', () => {
  it('says what it waits for and since when, is counted, and ends by itself once the finalizer goes', async () => {
    const name = uniqueName('held');
    const targetNamespace = uniqueName('t');
    await env.control.create(kinds.ObjectStore, {
      apiVersion: kinds.ObjectStore.apiVersion,
      kind: 'ObjectStore',
      metadata: { name, namespace: env.ns.apps, finalizers: [HOLD] },
      spec: { forProvider: { scope: { nodeCount: 4 } }, targetNamespace, providerRef: { name: 'target' } },
    });
    await eventually(
      async () => Boolean(await env.target.get(RookObjectStores, { namespace: targetNamespace, name })),
      'the store in the target',
    );
    await env.control.delete(kinds.ObjectStore, { namespace: env.ns.apps, name });
    const synced = await eventually(async () => {
      const mr = await env.control.get<{ metadata: { name: string }; status?: { conditions?: Cond[] } }>(kinds.ObjectStore, {
        namespace: env.ns.apps,
        name,
      });
      const c = cond(mr, 'Synced');
      return c?.reason === 'WaitingForFinalizers' ? c : undefined;
    }, 'the store to say what its deletion waits for');
    expect(synced.status).toBe('False');
    expect(synced.message).toMatch(
      new RegExp(`^waiting since \\d{4}-\\d\\d-\\d\\dT[0-9:]+Z for finalizers provider-rook does not own to go first: ${HOLD}$`),
    );
    // The gauge reads the informer's cache, which sees the condition once its watch event arrives.
    await eventually(async () => (await waiting()) >= 1, 'the waiting gauge to count it');
    // Nothing is deleted in the target while others clean up first.
    expect(await env.target.get(RookObjectStores, { namespace: targetNamespace, name })).toBeDefined();

    const mr = (await env.control.get<{ metadata: { name: string; finalizers?: string[] } }>(kinds.ObjectStore, {
      namespace: env.ns.apps,
      name,
    }))!;
    await env.control.update(kinds.ObjectStore, {
      ...mr,
      metadata: { ...mr.metadata, finalizers: mr.metadata.finalizers!.filter((f) => f !== HOLD) },
    });
    await eventually(
      async () => (await env.control.get(kinds.ObjectStore, { namespace: env.ns.apps, name })) === undefined,
      'the store to be gone',
      30_000,
    );
    expect(await env.target.get(RookObjectStores, { namespace: targetNamespace, name })).toBeUndefined();
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
    await env.control.create(kinds.ObjectStore, {
      apiVersion: kinds.ObjectStore.apiVersion,
      kind: 'ObjectStore',
      metadata: { name, namespace: env.ns.apps },
      spec: { forProvider: { scope: { nodeCount: 4 } }, targetNamespace, providerRef: { name: 'target' } },
    });
    await eventually(
      async () => Boolean(await env.target.get(RookObjectStores, { namespace: targetNamespace, name })),
      'the store in the target',
    );
    // A backup tool in the target holds the store until it is done.
    await env.target.mergePatch(RookObjectStores, { namespace: targetNamespace, name }, { metadata: { finalizers: [HOLD] } });
    await env.control.delete(kinds.ObjectStore, { namespace: env.ns.apps, name });
    await eventually(
      async () =>
        Boolean(
          (
            await env.target.get<KubeObjectLike & { metadata: { deletionTimestamp?: string } }>(RookObjectStores, {
              namespace: targetNamespace,
              name,
            })
          )?.metadata.deletionTimestamp,
        ),
      'the store asked to go',
    );
    await eventually(async () => {
      const mr = await env.control.get<KubeObjectLike & { status?: { conditions?: Cond[] } }>(kinds.ObjectStore, {
        namespace: env.ns.apps,
        name,
      });
      return cond(mr, 'Ready')?.reason === 'Deleting';
    }, 'the resource to say Deleting');
    const deletesThen = await deletes();
    const passesThen = await passes();
    // Passes while it waits: each change of the resource brings one at once (its own requeues back off
    // up to a minute).
    for (let touch = 1; touch <= 3; touch++) {
      await env.control.mergePatch(
        kinds.ObjectStore,
        { namespace: env.ns.apps, name },
        {
          metadata: { annotations: { 'example.com/touched': String(touch) } },
        },
      );
      await eventually(async () => (await passes()) >= passesThen + touch, `pass ${touch} while the store is held`, 30_000);
    }
    expect(await deletes()).toBe(deletesThen);
    const events = (
      await env.control.list<KubeObjectLike & { reason: string; count?: number; involvedObject: { name: string } }>(Events, {
        namespace: env.ns.apps,
      })
    ).items.filter((e) => e.involvedObject.name === name && e.reason === 'DeletedExternalResource');
    // One Event, however many passes said it (each adds to its count, as client-go's recorder does).
    expect(events).toHaveLength(1);

    await env.target.mergePatch(RookObjectStores, { namespace: targetNamespace, name }, { metadata: { finalizers: null } });
    await eventually(
      async () => (await env.control.get(kinds.ObjectStore, { namespace: env.ns.apps, name })) === undefined,
      'the resource to be gone',
      30_000,
    );
    expect(await env.target.get(RookObjectStores, { namespace: targetNamespace, name })).toBeUndefined();
  }, 90_000);
});
