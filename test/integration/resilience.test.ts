// Outages, crashes and leaks: a target that goes away, a create interrupted between the target
// write and recording it, and a managed resource removed behind our back.
import { createServer as createNetServer, type Socket } from 'node:net';
import { describe, expect, it } from '@jest/globals';
import { start, stop, type LocalCluster } from '../kit/cluster.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { ObjectStore } from '../../src/backends/rook-minio/api.ts';
import type { Provider } from '../../src/apis/provider.ts';
import { minioObjectStore, RookObjectStores } from '../../src/backends/rook-minio/objectstore.ts';
import type { KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Namespaces, Secrets } from '../../src/kit/kube/resources.ts';
import { Providers } from '../../src/runtime/system/provider-status.ts';
import { kubeconfigFileAccess } from '../../src/kit/kube/config.ts';
import { TargetInformers } from '../../src/runtime/providers/target-informers.ts';
import { KubeClient } from '../../src/kit/kube/client.ts';
import { silentLogger } from '../../src/kit/logger.ts';
import { OwnershipMarks } from '../../src/runtime/ownership/marks.ts';
import { loadOwnershipKey, OwnershipKey } from '../../src/runtime/ownership/key.ts';
import { DEFAULT_OWNERSHIP_KEY_SECRET } from '../../src/runtime/system/provider-system.ts';
import { TargetWatches } from '../../src/runtime/native/watches.ts';
import { testCluster, uniqueName } from '../kit/env.ts';
import { eventsFor, providerSecretKeys, startTestApp, writeSecret } from '../kit/provider.ts';
import { FakeMinioOperator } from '../fakes/fake-minio-operator.ts';
import { eventually } from '../kit/eventually.ts';
import { cond } from '../kit/conditions.ts';

const OUTAGE = `it-outage-${process.pid}`;
let outage: LocalCluster;
let control: KubeClient;
let target: KubeClient;
let operator: FakeMinioOperator;
let ns: string;

function store(name: string, targetNamespace = uniqueName('minio')) {
  return {
    apiVersion: kinds.ObjectStore.apiVersion,
    kind: 'ObjectStore',
    metadata: { name, namespace: ns },
    spec: {
      forProvider: { scope: { nodeCount: 4 } },
      targetNamespace,
      providerRef: { name: 'outage' },
      writeConnectionSecretToRef: { name: `${name}-conn` },
    },
  };
}

const rook = withProviderRook({
  cluster: OUTAGE,
  namespaces: { ns: 'res' },
  provider: { name: 'outage', in: 'ns' },
  // The operator's stand-in is this file's own: it stops and starts with its target.
  standIns: () => [],
  before: async (f) => {
    ({ control, target, cluster: outage } = f);
    ns = f.ns.ns;
    operator = new FakeMinioOperator(target);
    await operator.start();
  },
  app: { pollIntervalMs: 1_000 },
  after: () => operator?.stop(),
});

describe('resilience', () => {
  it('reports an unreachable target and recovers when it comes back', async () => {
    const name = uniqueName('outage');
    await control.create(kinds.ObjectStore, store(name));
    await eventually(
      async () => cond(await control.get<ObjectStore>(kinds.ObjectStore, { namespace: ns, name }), 'Ready')?.status === 'True',
      'the store to be Ready',
    );
    const provider = await eventually(async () => {
      const p = await control.get<Provider>(Providers, { namespace: ns, name: 'outage' });
      return cond(p, 'Ready')?.status === 'True' ? p : undefined;
    }, 'the Provider to be reachable');
    expect(provider.status?.serverVersion).toMatch(/^v1\.\d+\.\d+/);

    await operator.stop();
    await stop(OUTAGE);
    const down = await eventually(
      async () => {
        const mr = await control.get<ObjectStore>(kinds.ObjectStore, { namespace: ns, name });
        return cond(mr, 'Synced')?.reason === 'Unreachable' ? mr : undefined;
      },
      'Synced=False/Unreachable',
      30_000,
    );
    // The endpoint came from a Secret: it is not echoed, only the failure's code.
    expect(cond(down, 'Synced')).toMatchObject({
      status: 'False',
      message: expect.stringMatching(/cannot reach the target cluster \(ECONNREFUSED\)/),
    });
    expect(cond(down, 'Synced')?.message).not.toMatch(/127\.0\.0\.1/);
    await eventually(
      async () => cond(await control.get<Provider>(Providers, { namespace: ns, name: 'outage' }), 'Ready')?.reason === 'Unreachable',
      'the Provider to say Unreachable',
      30_000,
    );

    await start(OUTAGE);
    operator = new FakeMinioOperator(target);
    await operator.start();
    // Recovery without restarting anything: the target's return requeues its resources.
    await eventually(
      async () => cond(await control.get<ObjectStore>(kinds.ObjectStore, { namespace: ns, name }), 'Synced')?.status === 'True',
      'recovery after the target is back',
      90_000,
    );
  }, 180_000);

  it('requeues the resources of a target when it becomes unreachable and as soon as it is reachable again, not at their next poll or after their backoff', async () => {
    // The target watches alone, with a recording queue: the mechanism, without the timing of a real backoff.
    const enqueued: string[] = [];
    const watches = new TargetWatches(
      minioObjectStore,
      new OwnershipMarks(rook.app.controlPlaneId, new OwnershipKey(Buffer.alloc(32))),
      (key) => enqueued.push(key),
      silentLogger,
      { usedBy: (fp) => (fp === 'outage-target' ? [`${ns}/waits-a`, `${ns}/waits-b`] : []) },
    );
    const kc = kubeconfigFileAccess(outage.kubeconfig);
    let watching = false;
    const client = new KubeClient(kc, {
      fieldManager: 'resilience-test',
      trusted: false,
      name: 'the target cluster',
      onRequest: (method) => {
        if (method === 'WATCH') watching = true;
      },
    });
    const target = { fingerprint: 'outage-target', server: outage.server, client, informers: new TargetInformers(client, silentLogger) };
    watches.started(target);
    const waiting = [`${ns}/waits-a`, `${ns}/waits-b`];
    const requeued = (): boolean => waiting.every((k) => enqueued.includes(k));
    try {
      await eventually(() => watching, 'the target watch to be open');
      expect(requeued()).toBe(false);
      await stop(OUTAGE); // the watch's stream ends at once; its informer retries with backoff
      await eventually(requeued, "the target's resources to be rechecked when it goes away", 15_000);
      enqueued.length = 0;
      await start(OUTAGE);
      await eventually(requeued, "the target's resources to be requeued when it is back", 45_000);
    } finally {
      await start(OUTAGE); // a no-op when it runs
      await target.informers.stop();
      await client.close();
    }
  }, 120_000);

  it('a target that accepts connections but never answers costs the other targets little', async () => {
    const sockets: Socket[] = [];
    const blackHole = createNetServer((socket) => {
      sockets.push(socket);
    }); // accepts, never answers (not even TLS)
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
    try {
      const { endpoint: _e, ...keys } = providerSecretKeys(outage);
      await writeSecret(
        control,
        { namespace: ns, name: 'blackhole-creds' },
        {
          ...keys,
          endpoint: `https://127.0.0.1:${(blackHole.address() as { port: number }).port}`,
        },
      );
      await control.apply(Providers, {
        apiVersion: Providers.apiVersion,
        kind: 'Provider',
        metadata: { name: 'blackhole', namespace: ns },
        spec: { credentialsSecretRef: { name: 'blackhole-creds' } },
      });
      const dead = Array.from({ length: 9 }, () => uniqueName('dead'));
      await Promise.all(
        dead.map((n) => control.create(kinds.ObjectStore, { ...store(n), spec: { ...store(n).spec, providerRef: { name: 'blackhole' } } })),
      );
      await eventually(async () => sockets.length > 0, 'provider-rook to be stuck on the black hole');
      const started = Date.now();
      const healthy = uniqueName('healthy');
      await control.create(kinds.ObjectStore, store(healthy));
      await eventually(
        async () => cond(await control.get<ObjectStore>(kinds.ObjectStore, { namespace: ns, name: healthy }), 'Ready')?.status === 'True',
        "the healthy target's store to be Ready",
        60_000,
      );
      const seconds = (Date.now() - started) / 1000;
      // Without isolation the shared workers wait out one timeout after another (55 s was measured).
      expect(seconds).toBeLessThan(20);
      for (const n of dead) await control.delete(kinds.ObjectStore, { namespace: ns, name: n });
    } finally {
      for (const socket of sockets) socket.destroy();
      blackHole.close();
    }
  }, 120_000);

  it('does not duplicate a store when a create was interrupted after the target write', async () => {
    const name = uniqueName('crash');
    const mr = store(name);
    // The moment of the crash: "pending" recorded, the store written in the target with our marks,
    // "succeeded" never recorded. Built with a Provider that does not exist yet, so nothing runs early.
    const created = await control.create<ObjectStore>(kinds.ObjectStore, {
      ...mr,
      spec: { ...mr.spec, providerRef: { name: 'later' } },
    } as unknown as ObjectStore);
    await eventually(
      async () => cond(await control.get<ObjectStore>(kinds.ObjectStore, { namespace: ns, name }), 'Synced')?.reason === 'ProviderNotFound',
      'the resource to wait for its Provider',
    );
    await control.mergePatch(
      kinds.ObjectStore,
      { namespace: ns, name },
      {
        metadata: {
          finalizers: ['finalizer.managedresource.crossplane.io'],
          annotations: {
            'crossplane.io/external-name': name,
            'crossplane.io/external-create-pending': new Date().toISOString().replace(/\.\d+Z/, 'Z'),
          },
        },
      },
    );
    await target.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: mr.spec.targetNamespace } });
    // What the crashed provider-rook wrote: its signed marks (the key is the control cluster's).
    const marks = new OwnershipMarks(rook.app.controlPlaneId, await loadOwnershipKey(control, DEFAULT_OWNERSHIP_KEY_SECRET));
    const owner = {
      resource: 'objectstores.minio.rook.crossplane.io',
      namespace: ns,
      name,
      uid: created.metadata.uid!,
      reclaimPolicy: 'Delete',
    };
    // A create writes the access keys before the store.
    await target.create(
      Secrets,
      marks.mark(
        Secrets,
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: `${name}-access-keys`, namespace: mr.spec.targetNamespace },
          data: { username: Buffer.from('crashuser').toString('base64'), password: Buffer.from('crashpassword').toString('base64') },
        } as KubeObjectLike,
        owner,
      ),
    );
    await target.create(
      RookObjectStores,
      marks.mark(
        RookObjectStores,
        {
          apiVersion: RookObjectStores.apiVersion,
          kind: 'ObjectStore',
          metadata: { name, namespace: mr.spec.targetNamespace },
          spec: { scope: { nodeCount: 4 }, credentials: { name: `${name}-access-keys`, namespace: mr.spec.targetNamespace } },
        } as KubeObjectLike,
        owner,
      ),
    );
    // The "restart": the Provider appears and reconciliation resumes.
    await writeSecret(control, { namespace: ns, name: 'later-creds' }, providerSecretKeys(outage));
    await control.apply(Providers, {
      apiVersion: Providers.apiVersion,
      kind: 'Provider',
      metadata: { name: 'later', namespace: ns },
      spec: { credentialsSecretRef: { name: 'later-creds' } },
    });
    await eventually(
      async () => cond(await control.get<ObjectStore>(kinds.ObjectStore, { namespace: ns, name }), 'Ready')?.status === 'True',
      'the resumed store to be Ready',
      60_000,
    );
    const { items } = await target.list(RookObjectStores, { namespace: mr.spec.targetNamespace });
    expect(items.map((i) => i.metadata.name)).toEqual([name]);
    const events = await eventsFor(control, { namespace: ns, name });
    expect(events.some((e) => e.reason === 'CreatedExternalResource')).toBe(false);
  }, 120_000);

  it('finds and deletes the target objects of a managed resource removed behind its back', async () => {
    const name = uniqueName('leak');
    const mr = store(name);
    await control.create(kinds.ObjectStore, mr);
    await eventually(
      async () => cond(await control.get<ObjectStore>(kinds.ObjectStore, { namespace: ns, name }), 'Ready')?.status === 'True',
      'the store to be Ready',
    );
    // Someone strips the finalizer and deletes the resource while the provider is not looking.
    await rook.stop();
    await control.mergePatch(kinds.ObjectStore, { namespace: ns, name }, { metadata: { finalizers: null } });
    await control.delete(kinds.ObjectStore, { namespace: ns, name });
    await eventually(async () => (await control.get(kinds.ObjectStore, { namespace: ns, name })) === undefined, 'the resource to be gone');
    expect(await target.get(RookObjectStores, { namespace: mr.spec.targetNamespace, name })).toBeDefined();

    const reporting = await startTestApp(testCluster('control'), {
      namespaces: [ns],
      controlPlaneId: rook.app.controlPlaneId,
      leakReportOnly: true,
    });
    const reported = await reporting.leaks.sweep();
    await reporting.stop();
    expect(reported.filter((r) => r.owner === `${ns}/${name}`).map((r) => [r.kind, r.deleted])).toEqual([
      ['ObjectStore', false],
      ['Secret', false],
      ['Service', false],
      ['Namespace', false],
    ]);
    expect(await target.get(RookObjectStores, { namespace: mr.spec.targetNamespace, name })).toBeDefined();

    // Objects of live resources are never touched: every one of them keeps its uid (a sweeper that
    // deleted them would see them recreated within a second, with new uids).
    const live = async (type: typeof Secrets) =>
      (await target.list<KubeObjectLike>(type, { labelSelector: `rook.crossplane.io/control-plane=${rook.app.controlPlaneId}` })).items
        .filter((o) => o.metadata.namespace !== mr.spec.targetNamespace)
        .map((o) => o.metadata.uid)
        .sort();
    const before = { stores: await live(RookObjectStores), secrets: await live(Secrets) };
    expect(before.stores.length).toBeGreaterThan(0);

    // A provider restarted sweeps at once, and deletes once a second sweep finds the owner still gone.
    await rook.restart();
    await rook.app.leaks.sweep();
    await rook.app.leaks.sweep();
    await eventually(
      async () => (await target.get(RookObjectStores, { namespace: mr.spec.targetNamespace, name })) === undefined,
      'the leaked store to be deleted',
    );
    await eventually(
      async () => (await target.get(Secrets, { namespace: mr.spec.targetNamespace, name: `${name}-access-keys` })) === undefined,
      'the leaked access keys to be deleted',
    );
    expect(await live(RookObjectStores)).toEqual(before.stores);
    expect(await live(Secrets)).toEqual(before.secrets);
  }, 120_000);
});
