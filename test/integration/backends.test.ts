// One Bucket claim, four backends: Rook MinIO ObjectStores, MinIO Operator Tenants, Rook Ceph bucket
// claims and SeaweedFS stores, all live in one provider-rook with two targets. Target A has the operators
// installed by its admin; target B starts empty and gets each operator from provider-rook. The
// stand-ins run real S3 servers, so a Bound claim is proven usable with its Secret alone.
import { describe, expect, it } from '@jest/globals';
import { CreateBucketCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { down, up, type LocalCluster } from '../kit/cluster.ts';
import { BucketClasses, BucketPolicies, Buckets } from '../../src/app.ts';
import type { Provider } from '../../src/apis/provider.ts';
import type { Bucket } from '../../src/apis/storage.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Namespaces, resourcePath, Secrets, Services, StatefulSets } from '../../src/kit/kube/resources.ts';
import { secretText } from '../../src/runtime/providers/credentials.ts';
import { Providers } from '../../src/runtime/providers/provider.ts';
import { ObjectBucketClaims } from '../../src/backends/rook-ceph/bucket.ts';
import { adminClient, testCluster } from '../kit/env.ts';
import { createNamespace, eventsFor, providerSecretKeys, startTestApp, writeSecret } from '../kit/provider.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { operatorsUnderTest, ownStoreBackends, standInsFor, type OwnStoreBackend } from '../fakes/backends.ts';
import { resolveS3Endpoint } from '../fakes/s3-stores.ts';
import { refusal, roundTrip, s3Client } from '../kit/s3.ts';
import { S3_KEY_NAMES } from '../kit/s3-keys.ts';
import { eventually } from '../kit/eventually.ts';
import { cond } from '../kit/conditions.ts';
import { bucketClass } from '../kit/claims.ts';

const FRESH = `it-fresh-${process.pid}`;
// Target A is this file's own too: the stand-ins with S3 servers must be the only ones to play its Jobs.
const OWN_A = `it-be-a-${process.pid}`;
type Obj = KubeObjectLike & {
  metadata: KubeObjectLike['metadata'] & { deletionTimestamp?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
};
type Cond = { type: string; status: string; reason: string };

let fresh: LocalCluster;
let clusterA: LocalCluster;
let control: KubeClient;
let targetA: KubeClient;
let targetB: KubeClient;
// provider-rook's writes to target A (method and path), for the tests that count them.
const targetWrites: string[] = [];
let platform: string;
let apps: string;
const standInsB: { stop(): Promise<void> }[] = [];
/** Status writes provider-rook sent for claims, by claim name. */
const claimStatusWrites = new Map<string, number>();

/** The backends that make a store of a claim's own: a class of each, the managed kind, the object kept in the target. */
const backends = ownStoreBackends;
const named = (name: string): OwnStoreBackend => backends.find((b) => b.name === name)!;

async function provider(name: string, cluster: LocalCluster, spec: Partial<Provider['spec']> = {}): Promise<void> {
  await writeSecret(control, { namespace: platform, name: `${name}-creds` }, providerSecretKeys(cluster));
  await control.apply(Providers, {
    apiVersion: Providers.apiVersion,
    kind: 'Provider',
    metadata: { name, namespace: platform },
    spec: { credentialsSecretRef: { name: `${name}-creds` }, ...spec },
  } as KubeObjectLike);
}

async function classes(suffix: string, providerName: string): Promise<void> {
  for (const b of backends) {
    await control.apply(b.class, {
      apiVersion: b.class.apiVersion,
      kind: b.class.kind,
      metadata: { name: `${b.name}${suffix}`, namespace: platform },
      spec: b.classSpec(providerName),
    } as KubeObjectLike);
    await control.apply(
      BucketClasses,
      bucketClass({ name: `${b.name}${suffix}`, namespace: apps }, b.class, { name: `${b.name}${suffix}`, namespace: platform }),
    );
  }
}

/** The same Bucket YAML for every backend: only classRef.name changes (or nothing, with a policy). */
const bucket = (name: string, className: string | undefined, namespace = apps) =>
  ({
    apiVersion: Buckets.apiVersion,
    kind: 'Bucket',
    metadata: { name, namespace },
    spec: { ...(className ? { classRef: { name: className } } : {}), writeConnectionSecretToRef: { name: `${name}-s3` } },
  }) as KubeObjectLike;

const bound = (name: string, namespace = apps) =>
  eventually(
    async () => {
      const b = await control.get<Bucket>(Buckets, { namespace, name });
      return b?.status?.bindingPhase === 'Bound' && cond(b, 'Ready')?.status === 'True' ? b : undefined;
    },
    `Bucket ${namespace}/${name} to be Bound and Ready`,
    {
      timeoutMs: 60_000,
      explain: async () => JSON.stringify((await control.get<Bucket>(Buckets, { namespace, name }))?.status?.conditions ?? []),
    },
  );

/** Target B's stand-ins: each waits (retrying) until provider-rook installs its operator's CRD. */
async function standInsOn(client: KubeClient): Promise<void> {
  for (const s of await standInsFor(client, operatorsUnderTest, { s3: true })) {
    void s.start();
    standInsB.push(s);
  }
}

const rook = withProviderRook({
  cluster: OWN_A,
  namespaces: { platform: 'be-infra', apps: 'be-app' },
  // Target A: its admin installed every operator. Target B: only the platform team's StorageClass.
  operators: operatorsUnderTest,
  s3: true,
  before: async (f) => {
    ({ control, target: targetA, cluster: clusterA } = f);
    ({ platform, apps } = f.ns);
    fresh = (await up([FRESH]))[0]!;
    targetB = adminClient(fresh);
    await standInsOn(targetB);
    await provider('a', clusterA);
    await provider('b', fresh, {
      operators: operatorsUnderTest.map((name) => ({ name, install: true })),
    });
    await classes('', 'a');
    await classes('-b', 'b');
  },
  app: {
    pollIntervalMs: 1_000,
    maxReconcileRate: 100,
    onRequest: (server, method, p) => {
      if (server === targetA.server && !['GET', 'WATCH'].includes(method)) targetWrites.push(`${method} ${p.split('?')[0]}`);
      const m = /\/buckets\/([^/]+)\/status$/.exec(p);
      if (method === 'PUT' && m) claimStatusWrites.set(m[1]!, (claimStatusWrites.get(m[1]!) ?? 0) + 1);
    },
  },
  after: async () => {
    await Promise.all(standInsB.map((s) => s.stop()));
    await down([FRESH]);
  },
});

describe('four backends behind one Bucket claim', () => {
  it('binds the same Bucket through each backend, with the same Secret keys, and no two controllers write one claim', async () => {
    for (const b of backends) await control.create(Buckets, bucket(`same-${b.name}`, b.name));
    for (const b of backends) {
      const claim = await bound(`same-${b.name}`);
      expect(claim.spec.resourceRef).toMatchObject({ kind: b.managed.kind, apiVersion: b.managed.apiVersion });
      const keys = secretText((await control.get<Obj>(Secrets, { namespace: apps, name: `same-${b.name}-s3` }))!.data);
      expect(Object.keys(keys)).toEqual(expect.arrayContaining(S3_KEY_NAMES));
      expect([keys.AWS_ACCESS_KEY_ID, keys.AWS_SECRET_ACCESS_KEY, keys.AWS_ENDPOINT_URL]).toEqual([
        keys.username,
        keys.password,
        keys.endpoint,
      ]);
      expect(keys.endpoint).toMatch(/^http:\/\/[a-z0-9.-]+:\d+$/);
      if (b.name === 'rook-ceph') expect([keys.bucket, keys.BUCKET_NAME]).toEqual([expect.stringMatching(/^[a-z0-9-]+$/), keys.bucket]);
      const mr = claim.spec.resourceRef!.name;
      expect(await targetA.get(b.target, { namespace: b.targetNamespace(mr), name: mr })).toBeDefined();
    }
    // Settled: no controller keeps writing a claim that is not its own (and none ever said UnsupportedClass).
    const settled = new Map(claimStatusWrites);
    await eventually(
      async () => (await control.get<Provider>(Providers, { namespace: platform, name: 'a' }))?.status?.users === 4,
      'four users of Provider a',
    );
    await new Promise((r) => setTimeout(r, 3_000)); // three poll intervals with nothing to do
    for (const b of backends) {
      expect([b.name, claimStatusWrites.get(`same-${b.name}`)]).toEqual([b.name, settled.get(`same-${b.name}`)]);
      expect((await eventsFor(control, { namespace: apps, name: `same-${b.name}` })).map((e) => e.reason)).not.toContain(
        'UnsupportedClass',
      );
    }
  }, 120_000);

  it("is usable once Bound: an S3 round trip through each backend with the claim's Secret alone", async () => {
    for (const b of backends) {
      const { endpoint, username, password, bucket } = secretText(
        (await control.get<Obj>(Secrets, { namespace: apps, name: `same-${b.name}-s3` }))!.data,
      );
      // As an app in target A: the Secret's host name leads to the store (see s3-stores.ts).
      const local = await resolveS3Endpoint(endpoint!, targetA);
      const creds = { accessKey: username!, secretKey: password! };
      // Every backend's Secret names the claim's bucket, made already, and holds a user of it alone.
      expect(bucket).toBeTruthy();
      await roundTrip(local, creds, bucket!);
      const s3 = s3Client(local, creds);
      const other = await refusal(s3.send(new CreateBucketCommand({ Bucket: `other-${b.name}` })));
      s3.destroy();
      expect(other).toBe('AccessDenied');
    }
  }, 120_000);

  it("repairs drift in each backend's target object, writing only that object", async () => {
    for (const b of backends) {
      const mr = (await control.get<Bucket>(Buckets, { namespace: apps, name: `same-${b.name}` }))!.spec.resourceRef!.name;
      targetWrites.length = 0;
      await targetA.mergePatch(b.target, { namespace: b.targetNamespace(mr), name: mr }, b.drift.patch);
      await eventually(async () => {
        const o = await targetA.get<Obj>(b.target, { namespace: b.targetNamespace(mr), name: mr });
        return o !== undefined && b.drift.repaired(o);
      }, `${b.name}: the drifted ${b.target.kind} to be repaired`);
      // Its companions are as their kind builds them: none is written again.
      expect([b.name, [...new Set(targetWrites)]]).toEqual([b.name, [`PATCH ${resourcePath(b.target, b.targetNamespace(mr), mr)}`]]);
    }
  }, 60_000);

  it("a claim's quota reaches Rook as its ObjectBucketClaim's maxSize; what Rook lacks is refused", async () => {
    await control.create(Buckets, {
      ...bucket('capped-ceph', 'rook-ceph'),
      spec: {
        classRef: { name: 'rook-ceph' },
        writeConnectionSecretToRef: { name: 'capped-ceph-s3' },
        features: { quota: { size: '1Mi' } },
      },
    } as KubeObjectLike);
    const mr = (await bound('capped-ceph')).spec.resourceRef!.name;
    const obc = await targetA.get<Obj>(ObjectBucketClaims, { namespace: 'rook-ceph-buckets', name: mr });
    expect(obc?.spec?.additionalConfig).toEqual({ maxObjects: '1000', maxSize: '1Mi' });
    await control.create(Buckets, {
      ...bucket('versioned-ceph', 'rook-ceph'),
      spec: {
        classRef: { name: 'rook-ceph' },
        writeConnectionSecretToRef: { name: 'versioned-ceph-s3' },
        features: { versioning: 'Enabled' },
      },
    } as KubeObjectLike);
    const refused = await eventually(async () => {
      const c = cond(await control.get<Bucket>(Buckets, { namespace: apps, name: 'versioned-ceph' }), 'Synced');
      return c?.status === 'False' ? (c as Cond & { message?: string }) : undefined;
    }, 'the claim asking Rook for versioning to be refused');
    expect([refused.reason, refused.message]).toEqual([
      'FeatureNotSupported',
      expect.stringMatching(/^spec\.features\.versioning: the backend of CephBucketClass /),
    ]);
    await control.delete(Buckets, { namespace: apps, name: 'versioned-ceph' });
  }, 120_000);

  it("never remakes a Tenant's root credentials: losing them is reported", async () => {
    const mr = (await control.get<Bucket>(Buckets, { namespace: apps, name: 'same-minio-operator' }))!.spec.resourceRef!.name;
    const ns = named('minio-operator').targetNamespace(mr);
    const saved = (await targetA.get<Obj>(Secrets, { namespace: ns, name: `${mr}-env-configuration` }))!;
    await targetA.delete(Secrets, { namespace: ns, name: `${mr}-env-configuration` });
    const lost = await eventually(async () => {
      const m = await control.get<Obj & { status?: { conditions?: (Cond & { message?: string })[] } }>(kinds.Tenant, {
        namespace: platform,
        name: mr,
      });
      return cond(m, 'Synced')?.reason === 'RootCredentialsLost' ? cond(m, 'Synced') : undefined;
    }, 'Synced=False/RootCredentialsLost');
    expect((lost as { message?: string }).message).toMatch(/MINIO_ROOT_USER/);
    expect(await targetA.get(Secrets, { namespace: ns, name: `${mr}-env-configuration` })).toBeUndefined();
    // The remedy it names: the same config.env put back. The Tenant is Synced again.
    const {
      uid: _u,
      resourceVersion: _r,
      creationTimestamp: _c,
      managedFields: _m,
      ...metadata
    } = saved.metadata as Record<string, unknown>;
    await targetA.create(Secrets, { ...saved, metadata } as Obj);
    await eventually(async () => {
      const m = await control.get<Obj & { status?: { conditions?: Cond[] } }>(kinds.Tenant, { namespace: platform, name: mr });
      return cond(m, 'Synced')?.status === 'True';
    }, 'Synced=True once the Secret is back');
  }, 60_000);

  it("a Tenant whose minio Service someone repointed is not Ready and publishes no endpoint, until it is the operator's again", async () => {
    const claimKey = { namespace: apps, name: 'same-minio-operator' };
    const mr = (await control.get<Bucket>(Buckets, claimKey))!.spec.resourceRef!.name;
    const ns = named('minio-operator').targetNamespace(mr);
    const minio = { namespace: ns, name: 'minio' };
    const tenantOf = () =>
      control.get<Obj & { status?: { conditions?: (Cond & { message?: string })[] } }>(kinds.Tenant, { namespace: platform, name: mr });
    // Whoever may edit Services there leads the endpoint to pods of theirs.
    await targetA.mergePatch(Services, minio, { spec: { selector: { 'v1.min.io/tenant': null, app: 'mine' } } });
    const unproven = await eventually(async () => {
      const c = cond(await tenantOf(), 'Ready');
      return c?.reason === 'EndpointNotProven' ? c : undefined;
    }, 'Ready=False/EndpointNotProven');
    expect((unproven as { message?: string }).message).toMatch(
      /not the one the MinIO Operator made for this Tenant \(it does not select the Tenant's pods\)/,
    );
    await eventually(
      async () =>
        !(
          'endpoint' in
          secretText(
            (await control.get<Obj & { data?: Record<string, string> }>(Secrets, { namespace: apps, name: 'same-minio-operator-s3' }))
              ?.data,
          )
        ),
      'the endpoint withheld',
    );
    await targetA.mergePatch(Services, minio, { spec: { selector: { 'v1.min.io/tenant': mr, app: null } } });
    await eventually(async () => cond(await tenantOf(), 'Ready')?.status === 'True', "Ready once the Service is the operator's again");
  }, 60_000);

  it('fills a classless claim from a BucketPolicy, whichever backend the default is', async () => {
    for (const b of backends) {
      const ns = await createNamespace(control, `be-pol-${b.name}`);
      await control.apply(BucketClasses, bucketClass({ name: 'default', namespace: ns }, b.class, { name: b.name, namespace: platform }));
      await control.apply(BucketPolicies, {
        apiVersion: BucketPolicies.apiVersion,
        kind: 'BucketPolicy',
        metadata: { name: 'default', namespace: ns },
        spec: { defaultClassRef: { name: 'default' } },
      } as KubeObjectLike);
      const scoped = await startTestApp(testCluster('control'), {
        namespaces: [platform, ns],
        controlPlaneId: rook.app.controlPlaneId,
        pollIntervalMs: 1_000,
      });
      try {
        await control.create(Buckets, bucket('defaulted', undefined, ns));
        const claim = await bound('defaulted', ns);
        expect([b.name, claim.spec.resourceRef?.kind]).toEqual([b.name, b.managed.kind]);
      } finally {
        await scoped.stop();
      }
    }
  }, 180_000);

  it("installs each backend's operator on a fresh target, and binds through it", async () => {
    for (const b of backends) await control.create(Buckets, bucket(`fresh-${b.name}`, `${b.name}-b`));
    for (const b of backends) {
      const mr = (await bound(`fresh-${b.name}`)).spec.resourceRef!.name;
      expect(await targetB.get(b.target, { namespace: b.targetNamespace(mr), name: mr })).toBeDefined();
    }
    const operators = await eventually(async () => {
      const p = await control.get<Provider>(Providers, { namespace: platform, name: 'b' });
      const ops = p?.status?.operators ?? [];
      return ops.length === operatorsUnderTest.length && ops.every((o) => o.present && o.installedBy === 'provider-rook') ? ops : undefined;
    }, 'Provider b to report every operator installed by provider-rook');
    expect(operators.map((o) => o.name).sort()).toEqual([...operatorsUnderTest].sort());
    // Nothing was installed on target A, where its admin had put the operators already.
    const a = await eventually(
      async () => (await control.get<Provider>(Providers, { namespace: platform, name: 'a' }))?.status?.operators,
      "Provider a's operators",
    );
    expect(a.map((o) => [o.name, o.present, o.installedBy])).toEqual(
      expect.arrayContaining(operatorsUnderTest.map((name) => [name, true, 'other'])),
    );
  }, 120_000);

  it('deletes through each backend: the claim, its managed resource and the target object go', async () => {
    const mrs = new Map<string, string>();
    for (const b of backends)
      mrs.set(b.name, (await control.get<Bucket>(Buckets, { namespace: apps, name: `same-${b.name}` }))!.spec.resourceRef!.name);
    const ceph = secretText((await control.get<Obj>(Secrets, { namespace: apps, name: 'same-rook-ceph-s3' }))!.data);
    const gateway = await resolveS3Endpoint(ceph.endpoint!, targetA);
    for (const b of backends) await control.delete(Buckets, { namespace: apps, name: `same-${b.name}` });
    for (const b of backends) {
      const mr = mrs.get(b.name)!;
      await eventually(
        async () => (await control.get(b.managed, { namespace: platform, name: mr })) === undefined,
        `${b.name}: the managed resource to be gone`,
      );
      await eventually(
        async () => (await targetA.get(b.target, { namespace: b.targetNamespace(mr), name: mr })) === undefined,
        `${b.name}: the ${b.target.kind} to be gone`,
      );
    }
    // Rook's provisioner deletes the claim's gateway user: its keys are refused from then on.
    const s3 = s3Client(gateway, { accessKey: ceph.username!, secretKey: ceph.password! });
    expect(await refusal(s3.send(new ListObjectsV2Command({ Bucket: ceph.bucket! })))).toBe('InvalidAccessKeyId');
    s3.destroy();
    // What the operators made goes too: the Rook MinIO operator's by provider-rook (the collector cannot
    // map its owner references), the MinIO Operator's with the Tenant's own namespace.
    expect(await targetA.get(StatefulSets, { namespace: 'rook-minio', name: mrs.get('rook-minio')! })).toBeUndefined();
    const tenantNs = named('minio-operator').targetNamespace(mrs.get('minio-operator')!);
    await eventually(async () => {
      const ns = await targetA.get<Obj>(Namespaces, { name: tenantNs });
      return ns === undefined || ns.metadata.deletionTimestamp !== undefined;
    }, "the Tenant's namespace to be deleted");
  }, 120_000);
});
