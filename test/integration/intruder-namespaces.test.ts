// A platform team's real token, with the least roles it has, aims stores, claims and
// operator installs at a target's own machinery (kube-system, an operator's namespace) and at other
// operator images. The Provider decides: anything it does not allow is refused with a reason naming
// the field, and nothing at all is written to the target.
import type { ObjectKey } from '../../src/kit/kube/object-key.ts';
import { describe, expect, it } from '@jest/globals';
import { down, up, type LocalCluster } from '../kit/cluster.ts';
import { BucketClasses, Buckets } from '../../src/app.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { ObjectStore } from '../../src/backends/rook-minio/api.ts';
import type { Provider } from '../../src/apis/provider.ts';
import { RookObjectStores } from '../../src/backends/rook-minio/objectstore.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { CustomResourceDefinitions, Deployments, Namespaces, Secrets, Services, type ResourceType } from '../../src/kit/kube/resources.ts';
import { Providers } from '../../src/runtime/providers/provider.ts';
import { Reasons } from '../../src/runtime/reasons.ts';
import { adminClient, testCluster, uniqueName } from '../kit/env.ts';
import { eventsFor, identityClient, providerSecretKeys, writeSecret } from '../kit/provider.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { eventually } from '../kit/eventually.ts';
import { cond } from '../kit/conditions.ts';
import { bucketClass } from '../kit/claims.ts';

type Cond = { type: string; status: string; reason: string; message?: string };
type Conditioned = KubeObjectLike & { status?: { conditions?: Cond[] } };

const FRESH = `it-intruder-${process.pid}`;
const EVIL_IMAGE = 'registry.example.com/intruder/minio:latest';
let control: KubeClient;
let target: KubeClient;
let fresh: LocalCluster;
let freshTarget: KubeClient;
let platform: string;
let appNs: string;
/** provider-rook:platform-team cluster-wide and provider-rook:provider-admin in its own namespace: no more. */
let platformTeam: KubeClient;
let appTeam: KubeClient;
/** Every write provider-rook sent to a target: "server METHOD path". */
const targetWrites: string[] = [];
const writesTo = (cluster: LocalCluster) => targetWrites.filter((w) => w.startsWith(`${cluster.server} `));

async function provider(name: string, cluster: LocalCluster, spec: Partial<Provider['spec']> = {}): Promise<void> {
  await writeSecret(platformTeam, { namespace: platform, name: `${name}-creds` }, providerSecretKeys(cluster));
  await platformTeam.apply(Providers, {
    apiVersion: Providers.apiVersion,
    kind: 'Provider',
    metadata: { name, namespace: platform },
    spec: { credentialsSecretRef: { name: `${name}-creds` }, ...spec },
  } as KubeObjectLike);
}

function store(name: string, providerName: string, targetNamespace: string): KubeObjectLike {
  return {
    apiVersion: kinds.ObjectStore.apiVersion,
    kind: 'ObjectStore',
    metadata: { name, namespace: platform },
    spec: {
      forProvider: { scope: { nodeCount: 4 } },
      targetNamespace,
      providerRef: { name: providerName },
      writeConnectionSecretToRef: { name: `${name}-conn` },
    },
  } as KubeObjectLike;
}

async function synced<T extends Conditioned>(type: ResourceType, { namespace, name }: Required<ObjectKey>, reason: string): Promise<Cond> {
  let last: T | undefined;
  try {
    return await eventually(
      async () => {
        last = await control.get<T>(type, { namespace, name });
        const c = cond(last, 'Synced');
        return c?.reason === reason ? c : undefined;
      },
      `${type.kind} ${namespace}/${name} to say Synced=False/${reason}`,
      45_000,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last seen: ${JSON.stringify(last?.status)}`, { cause: err });
  }
}

/** What kube-system of the shared target holds of the kinds a store brings. */
const kubeSystem = async () =>
  Promise.all(
    [Secrets, Services, RookObjectStores].map(async (t) =>
      (await target.list(t, { namespace: 'kube-system' })).items.map((o) => o.metadata.name).sort(),
    ),
  );
const namespacesOf = async (client: KubeClient) => (await client.list(Namespaces)).items.map((n) => n.metadata.name);

const rook = withProviderRook({
  namespaces: { platform: 'intr-infra', app: 'intr-app' },
  roles: true,
  before: async (f) => {
    ({ control, target } = f);
    ({ platform, app: appNs } = f.ns);
    fresh = (await up([FRESH]))[0]!;
    freshTarget = adminClient(fresh);
    platformTeam = await identityClient(
      testCluster('control'),
      control,
      { namespace: platform, name: 'platform' },
      { role: 'provider-rook:provider-admin', clusterWide: 'provider-rook:platform-team' },
    );
    appTeam = await identityClient(
      testCluster('control'),
      control,
      { namespace: appNs, name: 'app-team' },
      { role: 'provider-rook:app-team' },
    );
  },
  app: {
    pollIntervalMs: 1_000,
    maxReconcileRate: 100,
    onRequest: (server, method, p) => {
      if (server !== testCluster('control').server && !['GET', 'WATCH'].includes(method)) targetWrites.push(`${server} ${method} ${p}`);
    },
  },
  after: () => down([FRESH]),
});

describe("target namespaces are the Provider's to allow", () => {
  const refusal = (ns: string, field = 'spec\\.targetNamespace') =>
    new RegExp(
      `${field} is ${ns}, a namespace Provider ${platform}/target does not allow: it is a system or operator namespace, used only when the Provider's spec\\.allowedNamespaces lists it`,
    );

  it("a managed resource aimed at kube-system or an operator's namespace is refused, and nothing reaches the target", async () => {
    // An operator namespace the Provider itself configures is protected too.
    const opsNs = uniqueName('ops');
    await provider('target', testCluster('target'), { operators: [{ name: 'rook-ceph', install: false, namespace: opsNs }] });
    const [systemBefore, namespacesBefore] = [await kubeSystem(), await namespacesOf(target)];
    const aimed = ['kube-system', 'kube-public', 'kube-node-lease', 'rook-minio-system', 'minio-operator', 'rook-ceph', opsNs].map(
      (ns) => [uniqueName('intruder'), ns] as const,
    );
    for (const [name, ns] of aimed) await platformTeam.create(kinds.ObjectStore, store(name, 'target', ns));

    for (const [name, ns] of aimed) {
      const c = await synced(kinds.ObjectStore, { namespace: platform, name }, Reasons.TargetNamespaceNotAllowed);
      expect([ns, c.status, c.message]).toEqual([ns, 'False', expect.stringMatching(refusal(ns))]);
      expect(
        (await eventsFor(control, { namespace: platform, name })).filter(
          (e) => e.type === 'Warning' && e.reason === Reasons.TargetNamespaceNotAllowed,
        ),
      ).toHaveLength(1);
      expect(await control.get(Secrets, { namespace: platform, name: `${name}-conn` })).toBeUndefined();
    }
    expect(writesTo(testCluster('target'))).toEqual([]);
    expect(await kubeSystem()).toEqual(systemBefore);
    const refusedNs = aimed.map(([, ns]) => ns);
    expect((await namespacesOf(target)).filter((n) => refusedNs.includes(n) && !namespacesBefore.includes(n))).toEqual([]);

    // A refused resource still goes when deleted: nothing of it was made, and nothing is written.
    for (const [name] of aimed) await platformTeam.delete(kinds.ObjectStore, { namespace: platform, name });
    await eventually(
      async () =>
        (await control.list(kinds.ObjectStore, { namespace: platform })).items.every((o) => !aimed.some(([n]) => n === o.metadata.name)),
      'the refused resources to be deleted',
    );
    expect(writesTo(testCluster('target'))).toEqual([]);
  }, 120_000);

  it("an app team's claim on a class aimed at kube-system is refused through its managed resource, and nothing reaches the target", async () => {
    const systemBefore = await kubeSystem();
    for (const [cls, ns] of [
      ['system', 'kube-system'],
      ['operators', 'rook-minio-system'],
    ] as const) {
      await platformTeam.apply(kinds.ObjectStoreClass, {
        apiVersion: kinds.ObjectStoreClass.apiVersion,
        kind: 'ObjectStoreClass',
        metadata: { name: cls, namespace: platform },
        spec: { scope: { nodeCount: 4 }, providerRef: { name: 'target' }, targetNamespace: ns },
      } as KubeObjectLike);
      await platformTeam.apply(
        BucketClasses,
        bucketClass({ name: cls, namespace: appNs }, kinds.ObjectStoreClass, { name: cls, namespace: platform }),
      );
      await appTeam.create(Buckets, {
        apiVersion: Buckets.apiVersion,
        kind: 'Bucket',
        metadata: { name: cls, namespace: appNs },
        spec: { classRef: { name: cls }, writeConnectionSecretToRef: { name: cls } },
      } as KubeObjectLike);
      const c = await synced(Buckets, { namespace: appNs, name: cls }, Reasons.TargetNamespaceNotAllowed);
      expect(c.message).toMatch(refusal(ns));
      const claim = await control.get<Conditioned & { status?: { bindingPhase?: string } }>(Buckets, { namespace: appNs, name: cls });
      expect([cond(claim, 'Ready')?.status, claim?.status?.bindingPhase]).toEqual(['False', 'Unbound']);
      expect(await control.get(Secrets, { namespace: appNs, name: cls })).toBeUndefined();
    }
    expect(writesTo(testCluster('target'))).toEqual([]);
    expect(await kubeSystem()).toEqual(systemBefore);
  }, 120_000);

  it('a Provider that lists kube-system lets a store live there (and then only the namespaces it lists)', async () => {
    await provider('trusting', testCluster('target'), { allowedNamespaces: ['kube-system'] });
    const name = uniqueName('listed');
    await platformTeam.create(kinds.ObjectStore, store(name, 'trusting', 'kube-system'));
    await eventually(
      async () => {
        const mr = await control.get<ObjectStore>(kinds.ObjectStore, { namespace: platform, name });
        return cond(mr, 'Ready')?.status === 'True' && cond(mr, 'Synced')?.status === 'True';
      },
      'the store in kube-system to be Ready',
      45_000,
    );
    for (const [type, n] of [
      [RookObjectStores, name],
      [Secrets, `${name}-access-keys`],
    ] as const)
      expect(await target.get(type, { namespace: 'kube-system', name: n })).toBeDefined();

    const elsewhere = uniqueName('unlisted');
    await platformTeam.create(kinds.ObjectStore, store(elsewhere, 'trusting', 'rook-minio'));
    const c = await synced(kinds.ObjectStore, { namespace: platform, name: elsewhere }, Reasons.TargetNamespaceNotAllowed);
    expect(c.message).toMatch(
      `spec.targetNamespace is rook-minio, a namespace Provider ${platform}/trusting does not allow: its spec.allowedNamespaces lists only kube-system`,
    );
    expect(await target.get(RookObjectStores, { namespace: 'rook-minio', name: elsewhere })).toBeUndefined();

    await platformTeam.delete(kinds.ObjectStore, { namespace: platform, name });
    await eventually(
      async () =>
        (await target.get(RookObjectStores, { namespace: 'kube-system', name })) === undefined &&
        (await target.get(Secrets, { namespace: 'kube-system', name: `${name}-access-keys` })) === undefined,
      'the store and its keys to leave kube-system',
    );
    expect(await target.get(Namespaces, { name: 'kube-system' })).toBeDefined();
  }, 120_000);
});

describe("operator installs are the Provider's to allow", () => {
  it('into kube-system, or with another image, is refused with the field named until the Provider says so; nothing is installed', async () => {
    const cases = [
      [
        'in-system',
        { operators: [{ name: 'rook-minio', install: true, namespace: 'kube-system' }] },
        Reasons.TargetNamespaceNotAllowed,
        'spec\\.operators\\[0\\]\\.namespace is kube-system, .*spec\\.allowedNamespaces',
      ],
      [
        'other-image',
        { operators: [{ name: 'rook-minio', install: true, image: EVIL_IMAGE }] },
        Reasons.OperatorImageNotAllowed,
        'spec\\.operators\\[0\\]\\.image is registry\\.example\\.com/intruder/minio:latest, .*spec\\.operators\\[0\\]\\.imageOverride is true',
      ],
      [
        'old-field',
        { operatorInstall: { enabled: true, image: EVIL_IMAGE } },
        Reasons.OperatorImageNotAllowed,
        'spec\\.operatorInstall\\.image is .*spec\\.operatorInstall\\.imageOverride is true',
      ],
    ] as const;
    for (const [name, spec] of cases) {
      await provider(name, fresh, spec as Partial<Provider['spec']>);
      await platformTeam.create(kinds.ObjectStore, store(`${name}-store`, name, 'stores'));
    }
    for (const [name, , reason, message] of cases) {
      expect((await synced(kinds.ObjectStore, { namespace: platform, name: `${name}-store` }, reason)).message).toMatch(
        new RegExp(message),
      );
      expect((await synced<Provider>(Providers, { namespace: platform, name }, reason)).message).toMatch(new RegExp(message));
    }
    expect(writesTo(fresh)).toEqual([]);
    for (const ns of ['kube-system', 'rook-minio-system'])
      expect(await freshTarget.get(Deployments, { namespace: ns, name: 'rook-minio-operator' })).toBeUndefined();
    expect(await freshTarget.get(CustomResourceDefinitions, { name: 'objectstores.minio.rook.io' })).toBeUndefined();
    expect(await namespacesOf(freshTarget)).not.toEqual(expect.arrayContaining(['stores']));

    // The Provider's explicit yes: its own image goes in, with our marks.
    await provider('other-image', fresh, { operators: [{ name: 'rook-minio', install: true, image: EVIL_IMAGE, imageOverride: true }] });
    await eventually(
      async () => cond(await control.get<Provider>(Providers, { namespace: platform, name: 'other-image' }), 'Synced')?.status === 'True',
      'the Provider to be Synced',
    );
    await platformTeam.create(kinds.ObjectStore, store('overridden', 'other-image', 'stores'));
    const deployment = await eventually(
      () =>
        freshTarget.get<
          KubeObjectLike & {
            metadata: { labels?: Record<string, string> };
            spec: { template: { spec: { containers: { image: string }[] } } };
          }
        >(Deployments, { namespace: 'rook-minio-system', name: 'rook-minio-operator' }),
      'the operator installed with the overriding image',
      45_000,
    );
    expect(deployment.spec.template.spec.containers.map((c) => c.image)).toEqual([EVIL_IMAGE]);
    expect(deployment.metadata.labels?.['rook.crossplane.io/control-plane']).toBe(rook.app.controlPlaneId);
    expect(await freshTarget.get(Deployments, { namespace: 'kube-system', name: 'rook-minio-operator' })).toBeUndefined();
  }, 150_000);
});
