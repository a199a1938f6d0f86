// Automatic Rook MinIO operator install: only when the Provider opts in, once per target however
// many stores ask, never over someone else's install, and no churn afterwards.
import { describe, expect, it } from '@jest/globals';
import { withProviderRook } from '../kit/fixture.ts';
import { down, repoRoot, up, type LocalCluster } from '../kit/cluster.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { ObjectStore } from '../../src/backends/rook-minio/api.ts';
import type { Tenant } from '../../src/backends/minio-operator/api.ts';
import type { Provider } from '../../src/apis/provider.ts';
import { RookObjectStores } from '../../src/backends/rook-minio/objectstore.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import {
  ClusterRoleBindings,
  ClusterRoles,
  CustomResourceDefinitions,
  Deployments,
  Namespaces,
  ServiceAccounts,
} from '../../src/kit/kube/resources.ts';
import { Providers } from '../../src/runtime/system/provider-status.ts';
import { adminClient, testCluster, uniqueName } from '../kit/env.ts';
import { createNamespace, eventsFor, preinstallOperator, providerSecretKeys, startTestApp, writeSecret } from '../kit/provider.ts';
import { FakeMinioOperator } from '../fakes/fake-minio-operator.ts';
import { eventually } from '../kit/eventually.ts';
import { cond } from '../kit/conditions.ts';
import { installCrds, manifestFiles } from '../kit/manifests.ts';
import { SMALL_POOL } from '../fakes/fake-tenant-operator.ts';
import { bundleDirectory } from '../../src/runtime/operators/operator.ts';
import path from 'node:path';

const FRESH = `it-fresh-${process.pid}`;
const FOUND = `it-found-${process.pid}`;
let fresh: LocalCluster;
let control: KubeClient;
let target: KubeClient;
let ns: string;
/** Write requests provider-rook sent to the fresh target, by "METHOD path" (the server also counts the KCM's). */
const ourWrites: string[] = [];

type Obj = KubeObjectLike & {
  metadata: { name: string; resourceVersion: string; labels?: Record<string, string> };
  spec?: { template?: { spec: { containers: { image: string }[] } } };
};

async function setProvider(name: string, cluster: LocalCluster, spec: Partial<Provider['spec']> = {}) {
  await writeSecret(control, { namespace: ns, name: `${name}-creds` }, providerSecretKeys(cluster));
  await control.apply(Providers, {
    apiVersion: Providers.apiVersion,
    kind: 'Provider',
    metadata: { name, namespace: ns },
    spec: { credentialsSecretRef: { name: `${name}-creds` }, ...spec },
  });
}

const rookMinio = (p: Provider | undefined) => p?.status?.operators?.find((o) => o.name === 'rook-minio');

function store(name: string, provider: string, namespace = ns) {
  return {
    apiVersion: kinds.ObjectStore.apiVersion,
    kind: 'ObjectStore',
    metadata: { name, namespace },
    spec: { forProvider: { scope: { nodeCount: 4 } }, targetNamespace: 'rook-minio', providerRef: { name: provider } },
  };
}

const bundle = [
  [CustomResourceDefinitions, 'objectstores.minio.rook.io', undefined],
  [Namespaces, 'rook-minio-system', undefined],
  [ClusterRoles, 'rook-minio-operator', undefined],
  [ClusterRoleBindings, 'rook-minio-operator', undefined],
  [ServiceAccounts, 'rook-minio-operator', 'rook-minio-system'],
  [Deployments, 'rook-minio-operator', 'rook-minio-system'],
] as const;

const rook = withProviderRook({
  cluster: FRESH,
  namespaces: { ns: 'op' },
  // The target starts empty: no operator installed, none played until a test says so.
  operators: [],
  standIns: () => [],
  before: (f) => {
    ({ control, target, cluster: fresh } = f);
    ns = f.ns.ns;
  },
  app: { pollIntervalMs: 1_000, maxReconcileRate: 100, onRequest: recordWrites },
});

function recordWrites(server: string, method: string, path: string): void {
  if (server === fresh.server && !['GET', 'WATCH'].includes(method)) ourWrites.push(`${method} ${path}`);
}

describe('operator install', () => {
  it('without opt-in, says what is missing and both remedies, and writes nothing to the target', async () => {
    // The first store on a fresh target, at once: its refusal must show without waiting for anything.
    await setProvider('fresh', fresh);
    const name = uniqueName('optout');
    await control.create(kinds.ObjectStore, store(name, 'fresh'));
    const mr = await eventually(
      async () => {
        const o = await control.get<ObjectStore>(kinds.ObjectStore, { namespace: ns, name });
        if (cond(o, 'Synced')?.reason === 'OperatorMissing') return o;
        throw new Error(`Synced is ${JSON.stringify(cond(o, 'Synced') ?? 'not set')}`);
      },
      'Synced=False/OperatorMissing',
      15_000,
    );
    await eventually(
      async () => rookMinio(await control.get<Provider>(Providers, { namespace: ns, name: 'fresh' }))?.present === false,
      'the Provider to report no operator',
    );
    expect(cond(mr, 'Synced')?.message).toMatch(
      /no Rook MinIO operator \(missing CRD objectstores.minio.rook.io, Deployment rook-minio-system\/rook-minio-operator\)/,
    );
    expect(cond(mr, 'Synced')?.message).toMatch(/adding \{name: rook-minio, install: true\} to spec.operators of Provider/);
    expect(ourWrites).toEqual([]);
    // Deleted, it lets go: nothing of its kind is served there to be left behind, and nothing is written.
    await control.delete(kinds.ObjectStore, { namespace: ns, name });
    await eventually(
      async () => (await control.get(kinds.ObjectStore, { namespace: ns, name })) === undefined,
      'the refused store to be gone',
      30_000,
    );
    expect(ourWrites).toEqual([]);
  }, 180_000);

  it('with opt-in, installs the bundle once for 20 concurrent stores, then creates them all', async () => {
    await setProvider('fresh', fresh, {
      operators: [{ name: 'rook-minio', install: true, image: 'example.com/rook/minio:v1.2.7-patched', imageOverride: true }],
    });
    const names = Array.from({ length: 20 }, () => uniqueName('many'));
    await Promise.all(names.map((n) => control.create(kinds.ObjectStore, store(n, 'fresh'))));
    const operator = new FakeMinioOperator(target);
    await eventually(
      async () => {
        await operator.start().catch(() => undefined); // its informer needs the CRD the install brings
        const { items } = await control.list<ObjectStore>(kinds.ObjectStore, { namespace: ns });
        return items.filter((i) => names.includes(i.metadata.name) && cond(i, 'Ready')?.status === 'True').length === 20;
      },
      'all 20 stores Ready',
      90_000,
    );
    await operator.stop();

    for (const [type, name, namespace] of bundle) {
      const obj = await target.get<Obj>(type, { namespace, name });
      expect(obj?.metadata.labels?.['rook.crossplane.io/control-plane']).toBe(rook.app.controlPlaneId);
    }
    const dep = await target.get<Obj>(Deployments, { namespace: 'rook-minio-system', name: 'rook-minio-operator' });
    expect(dep?.spec?.template?.spec.containers[0]?.image).toBe('example.com/rook/minio:v1.2.7-patched');
    // Each bundle object was written exactly once, and the stores' shared namespace created once.
    const writesTo = (type: { plural: string }, name?: string) =>
      ourWrites.filter(
        (w) => w.includes(`/${type.plural}`) && (!name || w.endsWith(`/${type.plural}/${name}`) || w.endsWith(`/${type.plural}`)),
      );
    for (const [type, name] of bundle) expect([type.kind, writesTo(type, name).length]).toEqual([type.kind, type === Namespaces ? 2 : 1]);
    // Both created, never applied: the operator's namespace (an install creates, so it never takes
    // over one made in between) and the stores' shared one.
    expect(ourWrites.filter((w) => /^\w+ \/api\/v1\/namespaces(\/[^/]+)?$/.test(w)).sort()).toEqual([
      'POST /api/v1/namespaces',
      'POST /api/v1/namespaces',
    ]);
    const { items } = await target.list(RookObjectStores, { namespace: 'rook-minio' });
    expect(items).toHaveLength(20);
    await eventually(async () => {
      const op = rookMinio(await control.get<Provider>(Providers, { namespace: ns, name: 'fresh' }));
      return op?.present === true && op.installedBy === 'provider-rook';
    }, 'the Provider to report the operator it installed');
  }, 150_000);

  it('leaves the installed operator unchanged across a provider restart', async () => {
    const versions = await Promise.all(
      bundle.map(([type, name, namespace]) => target.get<Obj>(type, { namespace, name }).then((o) => o?.metadata.resourceVersion)),
    );
    await rook.restart();
    const name = uniqueName('after-restart');
    await control.create(kinds.ObjectStore, store(name, 'fresh'));
    await eventually(
      async () => (await target.get(RookObjectStores, { namespace: 'rook-minio', name })) !== undefined,
      'a new store after the restart',
    );
    const after = await Promise.all(
      bundle.map(([type, n, namespace]) => target.get<Obj>(type, { namespace, name: n }).then((o) => o?.metadata.resourceVersion)),
    );
    expect(after).toEqual(versions);
  }, 60_000);

  it("never touches an operator someone else installed (and still reads v0.1's spec.operatorInstall)", async () => {
    const other = adminClient(testCluster('target'));
    await preinstallOperator(other);
    const versions = await Promise.all(
      bundle.map(([type, name, namespace]) => other.get<Obj>(type, { namespace, name }).then((o) => o?.metadata.resourceVersion)),
    );
    await setProvider('preinstalled', testCluster('target'), { operatorInstall: { enabled: true } });
    const name = uniqueName('pre');
    await control.create(kinds.ObjectStore, store(name, 'preinstalled'));
    await eventually(
      async () => (await other.get(RookObjectStores, { namespace: 'rook-minio', name })) !== undefined,
      'the store in the target',
    );
    const after = await Promise.all(
      bundle.map(([type, n, namespace]) => other.get<Obj>(type, { namespace, name: n }).then((o) => o?.metadata)),
    );
    expect(after.map((m) => m?.resourceVersion)).toEqual(versions);
    expect(after.every((m) => !m?.labels?.['rook.crossplane.io/control-plane'])).toBe(true);
    await eventually(
      async () => rookMinio(await control.get<Provider>(Providers, { namespace: ns, name: 'preinstalled' }))?.installedBy === 'other',
      'the Provider to report a foreign install',
    );
    await eventually(
      async () => (await eventsFor(control, { namespace: ns, name: 'preinstalled' })).some((e) => e.reason === 'DeprecatedField'),
      'an Event saying where operatorInstall belongs now',
    );
  }, 60_000);
});

describe('an operator someone else installed under another name', () => {
  it('installs no second one beside their CRD, says so, and writes nothing to the target; installBesideOthers installs it anyway', async () => {
    // A Helm release names the operator's Deployment and namespace after itself: only its CRD is where provider-rook looks.
    const dir = bundleDirectory(path.join(repoRoot, 'config', 'operators', 'minio-operator'));
    await installCrds(target, manifestFiles(dir));
    await setProvider('elsewhere', fresh, { operators: [{ name: 'minio-operator', install: true }] });
    const name = uniqueName('elsewhere');
    const writesBefore = ourWrites.length;
    await control.create(kinds.Tenant, {
      apiVersion: kinds.Tenant.apiVersion,
      kind: kinds.Tenant.kind,
      metadata: { name, namespace: ns },
      spec: { forProvider: { pools: [SMALL_POOL] }, targetNamespace: 'tenants-elsewhere', providerRef: { name: 'elsewhere' } },
    });
    const synced = await eventually(
      async () => {
        const c = cond(await control.get<Tenant>(kinds.Tenant, { namespace: ns, name }), 'Synced');
        return c?.reason === 'OperatorInstalledElsewhere' ? c : undefined;
      },
      'Synced=False/OperatorInstalledElsewhere',
      30_000,
    );
    expect(synced.message).toMatch(
      /CRD tenants\.minio\.min\.io, which provider-rook did not install, but no Deployment minio-operator\/minio-operator/,
    );
    expect(synced.message).toMatch(/spec\.operators\[0\]\.installBesideOthers to true/);
    expect(ourWrites.slice(writesBefore)).toEqual([]);
    expect(await target.get(Deployments, { namespace: 'minio-operator', name: 'minio-operator' })).toBeUndefined();
    // The Provider says it too, where its platform team looks first.
    const providerSynced = (reason: string) =>
      eventually(
        async () => {
          const c = cond(await control.get<Provider>(Providers, { namespace: ns, name: 'elsewhere' }), 'Synced');
          return c?.reason === reason ? c : undefined;
        },
        `the Provider to say Synced ${reason}`,
        30_000,
      );
    expect((await providerSynced('OperatorInstalledElsewhere')).message).toMatch(/spec\.operators\[0\]\.installBesideOthers to true/);

    await setProvider('elsewhere', fresh, { operators: [{ name: 'minio-operator', install: true, installBesideOthers: true }] });
    const deployment = await eventually(
      () => target.get<Obj>(Deployments, { namespace: 'minio-operator', name: 'minio-operator' }),
      'the operator installed beside their CRD, once the Provider says so',
      30_000,
    );
    expect(deployment.metadata.labels?.['rook.crossplane.io/control-plane']).toBe(rook.app.controlPlaneId);
    const crd = await target.get<Obj>(CustomResourceDefinitions, { name: 'tenants.minio.min.io' });
    expect(crd?.metadata.labels?.['rook.crossplane.io/control-plane']).toBeUndefined();
    await providerSynced('ReconcileSuccess');
  }, 90_000);
});

describe("the Provider's operator status", () => {
  it('says at once that the operator is there when a store finds it, without waiting for the next poll', async () => {
    const found = (await up([FOUND]))[0]!;
    const where = await createNamespace(control, 'op-found');
    await writeSecret(control, { namespace: where, name: 'found-creds' }, providerSecretKeys(found));
    await control.apply(Providers, {
      apiVersion: Providers.apiVersion,
      kind: 'Provider',
      metadata: { name: 'found', namespace: where },
      spec: { credentialsSecretRef: { name: 'found-creds' } },
    });
    // A poll of ten minutes: only the store's finding can refresh the Provider within this test.
    const slow = await startTestApp(testCluster('control'), { namespaces: [where], pollIntervalMs: 600_000, maxReconcileRate: 100 });
    try {
      const reported = async () => rookMinio(await control.get<Provider>(Providers, { namespace: where, name: 'found' }))?.present;
      await eventually(async () => (await reported()) === false, 'the Provider to report no operator');
      await control.create(kinds.ObjectStore, store('finder', 'found', where));
      await eventually(
        async () =>
          cond(await control.get<ObjectStore>(kinds.ObjectStore, { namespace: where, name: 'finder' }), 'Synced')?.reason ===
          'OperatorMissing',
        'the store to miss its operator',
      );
      await preinstallOperator(adminClient(found), 'rook-minio'); // the target's admin installs it
      await eventually(async () => (await reported()) === true, 'the Provider to report the operator the store found', 40_000);
    } finally {
      await slow.stop();
      await down([FOUND]);
    }
  }, 120_000);
});
