// Placement on real API servers: three target clusters registered as Providers labelled by region,
// classes that name a providerSelector instead of a Provider, and the scheduler choosing among them
// by labels, reachability and capacity. Capacity is tested with two provider-rook replicas
// scheduling at once, so only the API server's arbitration can keep it.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { down, start, stop, up, type LocalCluster } from '../kit/cluster.ts';
import { installOperatorBundle } from '../kit/manifests.ts';
import { BucketClasses, Buckets, type App } from '../../src/app.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { ObjectStore } from '../../src/backends/rook-minio/api.ts';
import type { Provider } from '../../src/apis/provider.ts';
import type { Bucket } from '../../src/apis/storage.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Namespaces } from '../../src/kit/kube/resources.ts';
import { Providers } from '../../src/runtime/providers/provider.ts';
import type { LabelSelector } from '../../src/kit/kube/selector.ts';
import { adminClient, testCluster, uniqueName } from '../kit/env.ts';
import { eventsFor, providerSecretKeys, startTestApp, writeSecret } from '../kit/provider.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { eventually } from '../kit/eventually.ts';
import { cond } from '../kit/conditions.ts';
import { bucketClass } from '../kit/claims.ts';

const EU2 = `it-sched-eu2-${process.pid}`;
const US1 = `it-sched-us1-${process.pid}`;
type Cond = { type: string; status: string; reason: string; message?: string };

let clusters: Record<'eu-1' | 'eu-2' | 'us-1', LocalCluster>;
let control: KubeClient;
let platform: string;
let apps: string;

async function provider(
  name: string,
  cluster: LocalCluster,
  labels: Record<string, string>,
  maxResources?: number,
  allowedNamespaces?: string[],
): Promise<void> {
  await writeSecret(control, { namespace: platform, name: `${name}-creds` }, providerSecretKeys(cluster));
  await control.apply(Providers, {
    apiVersion: Providers.apiVersion,
    kind: 'Provider',
    metadata: { name, namespace: platform, labels },
    spec: {
      credentialsSecretRef: { name: `${name}-creds` },
      ...(maxResources !== undefined ? { capacity: { maxResources } } : {}),
      ...(allowedNamespaces ? { allowedNamespaces } : {}),
    },
  } as KubeObjectLike);
}

/** An ObjectStoreClass that lets the scheduler choose, and its BucketClass of the same name. */
async function selectorClass(name: string, providerSelector: LabelSelector): Promise<void> {
  await control.apply(kinds.ObjectStoreClass, {
    apiVersion: kinds.ObjectStoreClass.apiVersion,
    kind: 'ObjectStoreClass',
    metadata: { name, namespace: platform },
    spec: { scope: { nodeCount: 4 }, providerSelector, targetNamespace: 'rook-minio' },
  } as KubeObjectLike);
  await control.apply(BucketClasses, bucketClass({ name, namespace: apps }, kinds.ObjectStoreClass, { name, namespace: platform }));
}

const claim = (name: string, className: string, providerSelector?: LabelSelector) =>
  ({
    apiVersion: Buckets.apiVersion,
    kind: 'Bucket',
    metadata: { name, namespace: apps },
    spec: { classRef: { name: className }, writeConnectionSecretToRef: { name }, ...(providerSelector ? { providerSelector } : {}) },
  }) as KubeObjectLike;

const stores = async (): Promise<ObjectStore[]> => (await control.list<ObjectStore>(kinds.ObjectStore, { namespace: platform })).items;

/** The managed resource of each named claim, once every one has a Provider. */
async function placed(names: string[], timeoutMs = 60_000): Promise<Map<string, string>> {
  return eventually(
    async () => {
      const byClaim = new Map<string, string>();
      for (const s of await stores()) {
        const claimName = (s.spec.claimRef as { name?: string } | undefined)?.name;
        if (claimName && names.includes(claimName) && s.spec.providerRef) byClaim.set(claimName, s.spec.providerRef.name);
      }
      return byClaim.size === names.length ? byClaim : undefined;
    },
    `${names.length} claims placed`,
    timeoutMs,
  );
}

const tally = (placements: Iterable<string>): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const p of placements) out[p] = (out[p] ?? 0) + 1;
  return out;
};

async function ready(name: string, status: 'True' | 'False' = 'True'): Promise<void> {
  await eventually(
    async () => cond(await control.get<Provider>(Providers, { namespace: platform, name }), 'Ready')?.status === status,
    `Provider ${name} Ready=${status}`,
    60_000,
  );
}

const rook = withProviderRook({
  namespaces: { platform: 'sched-infra', apps: 'sched-app' },
  // No operator plays here: placement is decided before any store is made.
  standIns: () => [],
  before: async (f) => {
    control = f.control;
    ({ platform, apps } = f.ns);
    const [eu2, us1] = await up([EU2, US1]);
    clusters = { 'eu-1': f.cluster, 'eu-2': eu2!, 'us-1': us1! };
    for (const c of [eu2!, us1!]) await installOperatorBundle(adminClient(c), 'rook-minio');
    await provider('eu-1', clusters['eu-1'], { region: 'eu', tier: 'standard' });
    await provider('eu-2', clusters['eu-2'], { region: 'eu', tier: 'standard' });
    await provider('us-1', clusters['us-1'], { region: 'us', tier: 'standard' });
    await selectorClass('anywhere', { matchLabels: { tier: 'standard' } });
  },
  app: { pollIntervalMs: 1_000, maxReconcileRate: 100 },
  after: () => down([EU2, US1]),
});
/** A second replica, for the test of capacity under two schedulers. */
const replicas: App[] = [];

beforeAll(async () => {
  for (const p of ['eu-1', 'eu-2', 'us-1']) await ready(p);
}, 120_000);

afterAll(async () => {
  await Promise.all(replicas.map((a) => a.stop()));
  await control.delete(Namespaces, { name: apps }).catch(() => undefined);
}, 60_000);

describe('scheduling claims onto target clusters', () => {
  it('spreads 30 claims of one selector class evenly over three Providers, and shows the choice on each claim', async () => {
    const names = Array.from({ length: 30 }, (_, i) => `spread-${i}`);
    await Promise.all(names.map((n) => control.create(Buckets, claim(n, 'anywhere'))));
    expect(tally((await placed(names)).values())).toEqual({ 'eu-1': 10, 'eu-2': 10, 'us-1': 10 });
    // In the target the store exists where it was placed, and the claim names the Provider.
    const one = await eventually(async () => {
      const b = await control.get<Bucket>(Buckets, { namespace: apps, name: 'spread-0' });
      return b?.status?.providerRef?.name && cond(b, 'Scheduled')?.status === 'True' ? b : undefined;
    }, 'claim spread-0 Scheduled with its Provider');
    const mr = (await control.get<ObjectStore & { status?: { conditions?: Cond[] } }>(kinds.ObjectStore, {
      namespace: platform,
      name: one.spec.resourceRef!.name,
    }))!;
    expect(mr.spec.providerRef?.name).toBe(one.status!.providerRef!.name);
    expect(cond(mr, 'Scheduled')).toMatchObject({ status: 'True', reason: 'Scheduled' });
    // Events are written without waiting for them.
    const events = await eventually(async () => {
      const found = (await eventsFor(control, { namespace: platform, name: mr.metadata.name })).filter((e) => e.reason === 'Scheduled');
      return found.length ? found : undefined;
    }, 'the Scheduled Event');
    expect(events.map((e) => e.message)).toEqual([
      expect.stringMatching(/^Scheduled on Provider [a-z0-9-]+: the fewest managed resources/),
    ]);
  });

  it('puts a claim that asks for a region only there, and says NoMatchingProvider for a region no Provider has', async () => {
    const names = ['us-only-0', 'us-only-1', 'us-only-2'];
    for (const n of names) await control.create(Buckets, claim(n, 'anywhere', { matchLabels: { region: 'us' } }));
    expect(tally((await placed(names)).values())).toEqual({ 'us-1': 3 });

    await control.create(Buckets, claim('on-mars', 'anywhere', { matchLabels: { region: 'mars' } }));
    const waiting = await eventually(async () => {
      const b = await control.get<Bucket>(Buckets, { namespace: apps, name: 'on-mars' });
      return cond(b, 'Scheduled')?.reason === 'NoMatchingProvider' ? b : undefined;
    }, 'claim on-mars Scheduled=False NoMatchingProvider');
    expect(cond(waiting, 'Scheduled')!.message).toContain('0 of 3 Provider(s) match region=mars, tier=standard');
    expect(cond(waiting, 'Scheduled')!.message).toContain('(providers 3, matching 0, usable 0, with room 0)');
    const mr = (await stores()).find((s) => (s.spec.claimRef as { name?: string }).name === 'on-mars')!;
    expect(mr.spec.providerRef).toBeUndefined();
    await eventually(
      async () =>
        (await eventsFor(control, { namespace: apps, name: 'on-mars' })).some(
          (e) => e.reason === 'NoMatchingProvider' && e.type === 'Warning',
        ),
      'a NoMatchingProvider Event on the claim',
    );
  });

  it('skips a full Provider, says CapacityExhausted when only full ones match, and places the claim once there is room', async () => {
    const usedOnUs = (await stores()).filter((s) => s.spec.providerRef?.name === 'us-1').length;
    await provider('us-1', clusters['us-1'], { region: 'us', tier: 'standard' }, usedOnUs);
    await control.create(Buckets, claim('us-when-full', 'anywhere', { matchLabels: { region: 'us' } }));
    await eventually(
      async () =>
        cond(await control.get<Bucket>(Buckets, { namespace: apps, name: 'us-when-full' }), 'Scheduled')?.reason === 'CapacityExhausted',
      'claim us-when-full CapacityExhausted',
    );
    const msg = cond(await control.get<Bucket>(Buckets, { namespace: apps, name: 'us-when-full' }), 'Scheduled')!.message!;
    expect(msg).toContain(`us-1 ${usedOnUs}/${usedOnUs}`);

    const names = ['after-full-0', 'after-full-1', 'after-full-2', 'after-full-3'];
    for (const n of names) await control.create(Buckets, claim(n, 'anywhere'));
    expect(Object.keys(tally((await placed(names)).values())).sort()).toEqual(['eu-1', 'eu-2']);

    // More room: the waiting claim is placed without being touched.
    await provider('us-1', clusters['us-1'], { region: 'us', tier: 'standard' }, usedOnUs + 1);
    expect((await placed(['us-when-full'])).get('us-when-full')).toBe('us-1');
  });

  it('never places a resource on a Provider that does not allow its target namespace, and says so when only such ones match', async () => {
    // Two Providers of one tier on the same target; one allows only another namespace than the class's.
    await provider('fenced-open', clusters['eu-1'], { tier: 'fenced' });
    await provider('fenced-shut', clusters['eu-1'], { tier: 'fenced', gate: 'shut' }, undefined, ['somewhere-else']);
    await Promise.all([ready('fenced-open'), ready('fenced-shut')]);
    await selectorClass('fenced', { matchLabels: { tier: 'fenced' } });
    const names = ['fenced-0', 'fenced-1', 'fenced-2', 'fenced-3'];
    for (const n of names) await control.create(Buckets, claim(n, 'fenced'));
    expect(tally((await placed(names)).values())).toEqual({ 'fenced-open': 4 });

    // A claim that asks for the shut one alone waits, and says why.
    await control.create(Buckets, claim('fenced-only-shut', 'fenced', { matchLabels: { gate: 'shut' } }));
    const unusable = await eventually(async () => {
      const c = cond(await control.get<Bucket>(Buckets, { namespace: apps, name: 'fenced-only-shut' }), 'Scheduled');
      return c?.reason === 'NoUsableProvider' ? c : undefined;
    }, 'claim fenced-only-shut NoUsableProvider');
    expect(unusable.message).toContain('fenced-shut: it does not allow namespace rook-minio (see its spec.allowedNamespaces)');
  });

  it('gives a stopped target no new resources, and moves none of those it has', async () => {
    const before = new Map(
      (await stores()).filter((s) => s.spec.providerRef?.name === 'eu-2').map((s) => [s.metadata.name, s.metadata.uid]),
    );
    expect(before.size).toBeGreaterThan(0);
    await stop(EU2);
    try {
      await ready('eu-2', 'False');
      const names = ['eu-while-down-0', 'eu-while-down-1', 'eu-while-down-2'];
      for (const n of names) await control.create(Buckets, claim(n, 'anywhere', { matchLabels: { region: 'eu' } }));
      expect(tally((await placed(names)).values())).toEqual({ 'eu-1': 3 });
      const after = (await stores()).filter((s) => before.has(s.metadata.name));
      expect(after.map((s) => [s.metadata.name, s.metadata.uid, s.spec.providerRef?.name])).toEqual(
        [...before].map(([n, uid]) => [n, uid, 'eu-2']),
      );
    } finally {
      await start(EU2);
    }
    await ready('eu-2');
  });

  it('moves nothing off a Provider that loses its labels; it only stops receiving new resources', async () => {
    const before = (await stores())
      .filter((s) => s.spec.providerRef?.name === 'eu-1')
      .map((s) => s.metadata.uid)
      .sort();
    await provider('eu-1', clusters['eu-1'], { region: 'retired' });
    try {
      const names = ['after-relabel-0', 'after-relabel-1'];
      for (const n of names) await control.create(Buckets, claim(n, 'anywhere', { matchLabels: { region: 'eu' } }));
      expect(tally((await placed(names)).values())).toEqual({ 'eu-2': 2 });
      expect(
        (await stores())
          .filter((s) => s.spec.providerRef?.name === 'eu-1')
          .map((s) => s.metadata.uid)
          .sort(),
      ).toEqual(before);
    } finally {
      await provider('eu-1', clusters['eu-1'], { region: 'eu', tier: 'standard' });
    }
  });

  it('keeps 40 claims created at once within a capacity of 20 + 20, with two replicas scheduling, and frees a place on delete', async () => {
    // Two Providers of their own (capacity counts every resource on a Provider), and a second replica.
    const labels = { pool: 'capped' };
    await provider('cap-a', clusters['eu-1'], labels, 20);
    await provider('cap-b', clusters['us-1'], labels, 20);
    await selectorClass('capped', { matchLabels: labels });
    await ready('cap-a');
    await ready('cap-b');
    replicas.push(
      await startTestApp(testCluster('control'), {
        namespaces: [platform, apps],
        pollIntervalMs: 1_000,
        maxReconcileRate: 100,
        controlPlaneId: rook.app.controlPlaneId,
      }),
    );

    const names = Array.from({ length: 40 }, (_, i) => `capped-${i}`);
    await Promise.all(names.map((n) => control.create(Buckets, claim(n, 'capped'))));
    expect(tally((await placed(names, 90_000)).values())).toEqual({ 'cap-a': 20, 'cap-b': 20 });
    // Each Provider's reservations end up naming exactly the resources on it: a place one replica took
    // for a resource the other placed elsewhere first is given back.
    for (const p of ['cap-a', 'cap-b']) {
      const on = new Set((await stores()).filter((s) => s.spec.providerRef?.name === p).map((s) => s.metadata.uid));
      await eventually(async () => {
        const uids = (await control.get<Provider>(Providers, { namespace: platform, name: p }))!.status!.reservations!.map((r) => r.uid);
        return uids.length === 20 && uids.every((u) => on.has(u));
      }, `the reservations of ${p} to name its 20 resources`);
    }

    await control.create(Buckets, claim('capped-extra', 'capped'));
    const waiting = await eventually(async () => {
      const b = await control.get<Bucket>(Buckets, { namespace: apps, name: 'capped-extra' });
      return cond(b, 'Scheduled')?.reason === 'CapacityExhausted' ? b : undefined;
    }, 'claim capped-extra CapacityExhausted');
    expect(cond(waiting, 'Scheduled')!.message).toContain('cap-a 20/20; cap-b 20/20');

    // A claim deleted (reclaim policy Delete) gives its place to the one waiting.
    const freed = (await placed(['capped-7'])).get('capped-7')!;
    await control.delete(Buckets, { namespace: apps, name: 'capped-7' });
    expect((await placed(['capped-extra'], 60_000)).get('capped-extra')).toBe(freed);
    const total = tally(
      (await stores())
        .filter((s) => (s.spec.claimRef as { name?: string }).name?.startsWith('capped-'))
        .map((s) => s.spec.providerRef!.name),
    );
    expect(total).toEqual({ 'cap-a': 20, 'cap-b': 20 });
    await eventually(
      async () => (await control.get<Provider>(Providers, { namespace: platform, name: freed }))!.status!.reservations!.length === 20,
      `${freed} holding 20 reservations`,
    );
  }, 180_000);

  it('refuses a class that names both providerRef and providerSelector, and a resource whose Provider is changed', async () => {
    const both = {
      ...claim('x', 'x'),
      apiVersion: kinds.ObjectStoreClass.apiVersion,
      kind: 'ObjectStoreClass',
      metadata: { name: uniqueName('both'), namespace: platform },
      spec: { scope: { nodeCount: 4 }, providerRef: { name: 'eu-1' }, providerSelector: { matchLabels: { region: 'eu' } } },
    } as KubeObjectLike;
    await expect(control.create(kinds.ObjectStoreClass, both)).rejects.toThrow(/exactly one of providerRef/);
    const mr = (await stores()).find((s) => s.spec.providerRef?.name === 'eu-1')!;
    await expect(control.update(kinds.ObjectStore, { ...mr, spec: { ...mr.spec, providerRef: { name: 'us-1' } } })).rejects.toThrow(
      /providerRef cannot change once set/,
    );
  });
});
