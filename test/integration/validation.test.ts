// Names and sizes are validated where they enter: the CRD schema refuses what is not a Kubernetes
// name (so ".", ".." and "/" never reach another API path) or out of range, the reconciler refuses an
// external-name that is not a name, and a claim's long name still fits its labels.
import { describe, expect, it } from '@jest/globals';
import { BucketClasses, Buckets } from '../../src/app.ts';
import type { ObjectStore } from '../../src/backends/rook-minio/api.ts';
import type { Bucket } from '../../src/apis/storage.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { KubeObjectLike } from '../../src/kit/kube/client.ts';
import { KubeError } from '../../src/kit/kube/errors.ts';
import { Secrets, resourcePath, type ResourceType } from '../../src/kit/kube/resources.ts';
import { Providers } from '../../src/runtime/providers/provider.ts';
import { testCluster, uniqueName } from '../kit/env.ts';
import { SMALL_POOL } from '../fakes/fake-tenant-operator.ts';
import { providerSecretKeys, writeSecret } from '../kit/provider.ts';
import { eventually } from '../kit/eventually.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { cond } from '../kit/conditions.ts';
import { bucketClass } from '../kit/claims.ts';

const env = withProviderRook({
  namespaces: { platform: 'val-infra', apps: 'val-app' },
  provider: { name: 'target', in: 'platform' },
  before: async () => {
    await writeSecret(env.control, { namespace: env.ns.platform, name: 'target-creds' }, providerSecretKeys(testCluster('target')));
    await env.control.apply(Providers, {
      apiVersion: Providers.apiVersion,
      kind: 'Provider',
      metadata: { name: 'target', namespace: env.ns.platform },
      spec: { credentialsSecretRef: { name: 'target-creds' } },
    } as KubeObjectLike);
    await env.control.apply(kinds.ObjectStoreClass, {
      apiVersion: kinds.ObjectStoreClass.apiVersion,
      kind: 'ObjectStoreClass',
      metadata: { name: 'std', namespace: env.ns.platform },
      spec: { scope: { nodeCount: 4 }, providerRef: { name: 'target' }, targetNamespace: 'valid-minio' },
    } as KubeObjectLike);
    await env.control.apply(
      BucketClasses,
      bucketClass({ name: 'std', namespace: env.ns.apps }, kinds.ObjectStoreClass, { name: 'std', namespace: env.ns.platform }),
    );
  },
});

const store = (name: string, over: Record<string, unknown> = {}, annotations?: Record<string, string>) =>
  ({
    apiVersion: kinds.ObjectStore.apiVersion,
    kind: 'ObjectStore',
    metadata: { name, namespace: env.ns.platform, ...(annotations ? { annotations } : {}) },
    spec: { forProvider: { scope: { nodeCount: 4 } }, targetNamespace: 'valid-minio', providerRef: { name: 'target' }, ...over },
  }) as unknown as KubeObjectLike;

async function refused(obj: KubeObjectLike, field: RegExp, type: ResourceType = kinds.ObjectStore): Promise<void> {
  const err = await env.control.create(type, obj).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(KubeError);
  expect((err as KubeError).code).toBe(422);
  expect((err as KubeError).message).toMatch(field);
}

describe('names and sizes', () => {
  it('the API refuses names that are not names, naming the field', async () => {
    for (const bad of ['..', '.', 'a/b', 'UPPER', 'x'.repeat(64)])
      await refused(store(uniqueName('v'), { targetNamespace: bad }), /spec\.targetNamespace/);
    await refused(store(uniqueName('v'), { providerRef: { name: '..' } }), /spec\.providerRef\.name/);
    await refused(
      store(uniqueName('v'), { writeConnectionSecretToRef: { name: '../secrets/x' } }),
      /spec\.writeConnectionSecretToRef\.name/,
    );
    await refused(
      store(uniqueName('v'), { forProvider: { scope: { nodeCount: 4 }, credentials: { name: 'x'.repeat(254) } } }),
      /spec\.forProvider\.credentials\.name/,
    );
    const claim = await env.control
      .create(Buckets, {
        apiVersion: Buckets.apiVersion,
        kind: 'Bucket',
        metadata: { name: uniqueName('v'), namespace: env.ns.apps },
        spec: { classRef: { name: '..' } },
      } as KubeObjectLike)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect((claim as KubeError).message).toMatch(/spec\.classRef\.name/);
  });

  it("the API takes a Provider's allowed namespaces by name or by a prefix and *, and refuses anything else, naming the field", async () => {
    const provider = (allowedNamespaces: string[]) =>
      ({
        apiVersion: Providers.apiVersion,
        kind: 'Provider',
        metadata: { name: uniqueName('allow'), namespace: env.ns.platform },
        spec: { credentialsSecretRef: { name: 'target-creds' }, allowedNamespaces },
      }) as KubeObjectLike;
    const taken = provider(['apps', 'rook-minio-*', 'seaweedfs-*']);
    await env.control.create(Providers, taken);
    await env.control.delete(Providers, { namespace: env.ns.platform, name: taken.metadata.name });
    for (const bad of ['*', '-x*', 'a*b', 'Apps*', 'a/b', 'x'.repeat(64)])
      await refused(provider(['apps', bad]), /spec\.allowedNamespaces\[1\]/, Providers);
  });

  it("the API refuses a class's namespace prefix that could not begin a namespace, naming the field", async () => {
    for (const bad of ['-x-', 'UP-', 'a.b-', 'x'.repeat(12)])
      await refused(
        {
          apiVersion: kinds.ObjectStoreClass.apiVersion,
          kind: 'ObjectStoreClass',
          metadata: { name: uniqueName('prefix'), namespace: env.ns.platform },
          spec: { scope: { nodeCount: 4 }, providerRef: { name: 'target' }, namespacePrefix: bad },
        } as KubeObjectLike,
        /spec\.namespacePrefix/,
        kinds.ObjectStoreClass,
      );
  });

  it('the API refuses bucket names S3 refuses, and access modes that do not exist, naming the field', async () => {
    const bucket = (bucketName: string, access = 'ReadWrite') =>
      ({
        apiVersion: kinds.MinioBucket.apiVersion,
        kind: 'MinioBucket',
        metadata: { name: uniqueName('v'), namespace: env.ns.platform },
        spec: {
          forProvider: {
            bucketName,
            access,
            store: {
              kind: 'ObjectStore',
              name: 's',
              endpoint: 'http://s-s3.ns.svc:9000',
              rootSecret: { name: 's-access-keys', format: 'username-password' },
            },
          },
          targetNamespace: 'ns',
          providerRef: { name: 'target' },
        },
      }) as unknown as KubeObjectLike;
    // Too long, upper case, shaped like an IP address, too short, S3's reserved prefix and suffix, "..".
    for (const bad of ['b'.repeat(64), 'My-Bucket', '192.168.10.1', 'ab', 'xn--bucket', 'data-s3alias', 'a..b', '-lead', 'trail-'])
      await refused(bucket(bad), /spec\.forProvider\.bucketName/, kinds.MinioBucket);
    await refused(bucket('fine-name', 'Admin'), /spec\.forProvider\.access/, kinds.MinioBucket);
    await refused(store(uniqueName('v'), { bucket: { name: '10.0.0.1' } }), /spec\.bucket\.name/);
    // A name S3 takes passes (then waits for its store, which does not exist here).
    const ok = bucket('team-data.2026');
    await env.control.create(kinds.MinioBucket, ok);
    await env.control.delete(kinds.MinioBucket, { namespace: env.ns.platform, name: ok.metadata.name });
  });

  it('the API refuses a nodeCount out of range (2147483648 would wait forever)', async () => {
    for (const nodeCount of [2147483648, 64, 2])
      await refused(store(uniqueName('v'), { forProvider: { scope: { nodeCount } } }), /spec\.forProvider\.scope\.nodeCount/);
  });

  it('an external-name that is no name gets its own reason, and reaches no API path', async () => {
    for (const [i, bad] of ['..', 'x'.repeat(100_000)].entries()) {
      const name = uniqueName(`ext${i}`);
      await env.control.create(kinds.ObjectStore, store(name, {}, { 'crossplane.io/external-name': bad }));
      const synced = await eventually(async () => {
        const mr = await env.control.get<ObjectStore>(kinds.ObjectStore, { namespace: env.ns.platform, name });
        const c = cond(mr, 'Synced');
        return c?.status === 'False' ? c : undefined;
      }, 'Synced=False');
      expect(synced).toMatchObject({
        reason: 'InvalidExternalName',
        message: expect.stringMatching(/crossplane\.io\/external-name must be a lower-case DNS-1123 subdomain/),
      });
      expect(synced.message!.length).toBeLessThan(300);
    }
  });

  it('the API refuses a malformed PersistentVolumeClaim template, naming the field, and takes a well-formed one', async () => {
    const pvc = { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '8Gi' } } };
    const bad: [Record<string, unknown>, string][] = [
      [{ resources: pvc.resources }, '.accessModes: Required value'],
      [{ ...pvc, accessModes: [] }, '.accessModes: Invalid value'],
      [{ ...pvc, accessModes: ['ReadWriteSometimes'] }, '.accessModes[0]: Unsupported value: "ReadWriteSometimes"'],
      [{ accessModes: pvc.accessModes }, '.resources: Required value'],
      [{ ...pvc, resources: { requests: {} } }, '.resources.requests.storage: Required value'],
      [{ ...pvc, resources: { requests: { storage: 'lots' } } }, '.resources.requests.storage: Invalid value: "lots"'],
      [{ ...pvc, storageClassName: 'Fast_SSD' }, '.storageClassName: Invalid value: "Fast_SSD"'],
      [{ ...pvc, volumeMode: 'Tape' }, '.volumeMode: Unsupported value: "Tape"'],
      ['not an object' as unknown as Record<string, unknown>, ': Invalid value: "string"'],
    ];
    const field = (prefix: string, what: string) => new RegExp(`${prefix}${what}`.replace(/[.[\]()]/g, '\\$&'));
    const scope = (spec: unknown) => ({ nodeCount: 4, volumeClaimTemplates: [{ metadata: { name: 'data' }, spec }] });
    const tenantPools = (spec: unknown) => [{ name: 'pool-0', servers: 4, volumesPerServer: 1, volumeClaimTemplate: { spec } }];
    for (const [spec, what] of bad) {
      await refused(
        store(uniqueName('pvc'), { forProvider: { scope: scope(spec) } }),
        field('spec.forProvider.scope.volumeClaimTemplates[0].spec', what),
      );
      await refused(
        {
          apiVersion: kinds.ObjectStoreClass.apiVersion,
          kind: 'ObjectStoreClass',
          metadata: { name: uniqueName('pvc'), namespace: env.ns.platform },
          spec: { scope: scope(spec), providerRef: { name: 'target' } },
        } as KubeObjectLike,
        field('spec.scope.volumeClaimTemplates[0].spec', what),
        kinds.ObjectStoreClass,
      );
      await refused(
        {
          apiVersion: kinds.Tenant.apiVersion,
          kind: 'Tenant',
          metadata: { name: uniqueName('pvc'), namespace: env.ns.platform },
          spec: { forProvider: { pools: tenantPools(spec) }, targetNamespace: 't', providerRef: { name: 'target' } },
        } as KubeObjectLike,
        field('spec.forProvider.pools[0].volumeClaimTemplate.spec', what),
        kinds.Tenant,
      );
      await refused(
        {
          apiVersion: kinds.TenantClass.apiVersion,
          kind: 'TenantClass',
          metadata: { name: uniqueName('pvc'), namespace: env.ns.platform },
          spec: { pools: tenantPools(spec), providerRef: { name: 'target' } },
        } as KubeObjectLike,
        field('spec.pools[0].volumeClaimTemplate.spec', what),
        kinds.TenantClass,
      );
    }
    // Kubernetes' own forms: a quantity as a number or a string, no storage class (""), a selector.
    for (const spec of [
      pvc,
      { ...pvc, resources: { requests: { storage: 1073741824 } }, storageClassName: '' },
      {
        accessModes: ['ReadWriteOnce', 'ReadOnlyMany'],
        resources: { requests: { storage: '1.5Gi' }, limits: { storage: '2Gi' } },
        storageClassName: 'fast.ssd',
        volumeMode: 'Filesystem',
        selector: { matchLabels: { tier: 'gold' } },
      },
    ]) {
      const name = uniqueName('pvc');
      await env.control.create(kinds.ObjectStore, store(name, { forProvider: { scope: scope(spec) } }, { 'crossplane.io/paused': 'true' }));
      const made = await env.control.get<ObjectStore>(kinds.ObjectStore, { namespace: env.ns.platform, name });
      expect(made?.spec.forProvider.scope.volumeClaimTemplates?.[0]?.spec).toEqual(spec);
    }
  });

  it("the API refuses an exposed Tenant that serves TLS with the cluster signer's certificate, naming spec.exposure", async () => {
    const pools = [SMALL_POOL];
    const tenant = (requestAutoCert: boolean) =>
      ({
        apiVersion: kinds.Tenant.apiVersion,
        kind: 'Tenant',
        metadata: { name: uniqueName('tls'), namespace: env.ns.platform, annotations: { 'crossplane.io/paused': 'true' } },
        spec: {
          forProvider: { pools, requestAutoCert },
          targetNamespace: 't',
          providerRef: { name: 'target' },
          exposure: { multiCluster: {} },
        },
      }) as KubeObjectLike;
    const tenantClass = (requestAutoCert: boolean) =>
      ({
        apiVersion: kinds.TenantClass.apiVersion,
        kind: 'TenantClass',
        metadata: { name: uniqueName('tls'), namespace: env.ns.platform },
        spec: { pools, requestAutoCert, providerRef: { name: 'target' }, exposure: { loadBalancer: {} } },
      }) as KubeObjectLike;
    await refused(tenant(true), /spec\.exposure: Invalid value.*cluster-internal host names/, kinds.Tenant);
    await refused(tenantClass(true), /spec\.exposure: Invalid value.*cluster-internal host names/, kinds.TenantClass);
    // Plain HTTP exposed, and TLS kept inside the cluster, are both taken.
    await env.control.create(kinds.Tenant, tenant(false));
    await env.control.create(kinds.TenantClass, tenantClass(false));
    const inside = tenant(true) as KubeObjectLike & { spec: Record<string, unknown> };
    delete inside.spec.exposure;
    await env.control.create(kinds.Tenant, inside);
  });

  it("the API refuses a Tenant's cluster domain that is not a DNS name, naming the field, and a change of it after creation", async () => {
    const pools = [SMALL_POOL];
    const tenant = (clusterDomain: string) =>
      ({
        apiVersion: kinds.Tenant.apiVersion,
        kind: 'Tenant',
        metadata: { name: uniqueName('dom'), namespace: env.ns.platform, annotations: { 'crossplane.io/paused': 'true' } },
        spec: { forProvider: { pools, clusterDomain }, targetNamespace: 't', providerRef: { name: 'target' } },
      }) as KubeObjectLike & { spec: { forProvider: { clusterDomain: string } } };
    await refused(tenant('cluster local'), /spec\.forProvider\.clusterDomain: Invalid value/, kinds.Tenant);
    await refused(
      {
        apiVersion: kinds.TenantClass.apiVersion,
        kind: 'TenantClass',
        metadata: { name: uniqueName('dom'), namespace: env.ns.platform },
        spec: { pools, clusterDomain: 'x/y', providerRef: { name: 'target' } },
      } as KubeObjectLike,
      /spec\.clusterDomain: Invalid value/,
      kinds.TenantClass,
    );
    // Empty is the default domain, as before it was checked.
    await env.control.create(kinds.Tenant, tenant(''));
    const made = await env.control.create(kinds.Tenant, tenant('corp.example'));
    const at = { namespace: env.ns.platform, name: made.metadata.name };
    // A merge patch: nothing else written meanwhile (a status) makes it a conflict.
    const err = await env.control.mergePatch(kinds.Tenant, at, { spec: { forProvider: { clusterDomain: 'other.example' } } }).then(
      () => undefined,
      (e: unknown) => e as KubeError,
    );
    expect(err?.message).toMatch(/clusterDomain cannot change after creation/);
  });

  it("the API refuses a class's Gateway host name that every store made from it would share, naming the field; a store's own may be fixed", async () => {
    const gateway = (hostname: string) => ({ gateway: { gatewayRef: { name: 'edge', namespace: 'gw' }, hostname } });
    const cls = (hostname: string) =>
      ({
        apiVersion: kinds.ObjectStoreClass.apiVersion,
        kind: 'ObjectStoreClass',
        metadata: { name: uniqueName('host'), namespace: env.ns.platform },
        spec: { scope: { nodeCount: 4 }, providerRef: { name: 'target' }, exposure: gateway(hostname) },
      }) as KubeObjectLike;
    await refused(cls('s3.example.com'), /spec\.exposure\.gateway\.hostname: Invalid value.*must start with \*\./, kinds.ObjectStoreClass);
    await env.control.create(kinds.ObjectStoreClass, cls('*.s3.example.com'));
    await env.control.create(kinds.ObjectStore, {
      apiVersion: kinds.ObjectStore.apiVersion,
      kind: 'ObjectStore',
      metadata: { name: uniqueName('host'), namespace: env.ns.platform, annotations: { 'crossplane.io/paused': 'true' } },
      spec: {
        forProvider: { scope: { nodeCount: 4 } },
        targetNamespace: 't',
        providerRef: { name: 'target' },
        exposure: gateway('s3.example.com'),
      },
    } as KubeObjectLike);
  });

  it('the API refuses an exposure URL that is not one, and a caBundle that is not only certificates, naming the field', async () => {
    const ca = providerSecretKeys(testCluster('target')).clusterCA!;
    const cls = (exposure: Record<string, unknown>) =>
      ({
        apiVersion: kinds.CephBucketClass.apiVersion,
        kind: 'CephBucketClass',
        metadata: { name: uniqueName('url'), namespace: env.ns.platform },
        spec: { storageClassName: 'rook-ceph-bucket', providerRef: { name: 'target' }, exposure },
      }) as KubeObjectLike;
    for (const url of ['http://a:b:c', 'http://s3.example.com:99999', 'http://s3.example.com:0', 'ftp://s3.example.com'])
      await refused(cls({ url }), /spec\.exposure\.url/, kinds.CephBucketClass);
    const key = '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n';
    await refused(cls({ url: 'https://s3.example.com', caBundle: `${ca}${key}` }), /spec\.exposure\.caBundle/, kinds.CephBucketClass);
    await refused(
      cls({ url: 'https://s3.example.com', caBundle: 'not a certificate -----BEGIN CERTIFICATE-----' }),
      /spec\.exposure\.caBundle/,
      kinds.CephBucketClass,
    );
    // What is one is taken: a host and port, an IPv6 literal, certificates.
    for (const url of ['https://s3.example.com:8443', 'http://[fd00::1]:9000', 'http://10.0.0.1'])
      await env.control.create(kinds.CephBucketClass, cls({ url, ...(url.startsWith('https') ? { caBundle: `${ca}${ca}` } : {}) }));
  });

  it('the client refuses "." and ".." as a path segment, whatever reaches it', () => {
    expect(() => resourcePath(Secrets, 'ns', '..')).toThrow(/'..' is not an object or namespace name/);
    expect(() => resourcePath(Secrets, '.', 'x')).toThrow(/'.' is not an object or namespace name/);
    expect(resourcePath(Secrets, 'ns', 'a.b')).toBe('/api/v1/namespaces/ns/secrets/a.b');
  });

  it('a claim with a 100-character name binds (its labels stay within 63 characters)', async () => {
    const name = `long-${'n'.repeat(95)}`;
    await env.control.create(Buckets, {
      apiVersion: Buckets.apiVersion,
      kind: 'Bucket',
      metadata: { name, namespace: env.ns.apps },
      spec: { classRef: { name: 'std' }, writeConnectionSecretToRef: { name: 'long' } },
    } as KubeObjectLike);
    const claim = await eventually(
      async () => {
        const b = await env.control.get<Bucket>(Buckets, { namespace: env.ns.apps, name });
        return b?.status?.bindingPhase === 'Bound' ? b : undefined;
      },
      'the long-named claim to be Bound',
      45_000,
    );
    const mr = (await env.control.get<ObjectStore>(kinds.ObjectStore, { namespace: env.ns.platform, name: claim.spec.resourceRef!.name }))!;
    const label = mr.metadata.labels?.['crossplane.io/claim-name'] ?? '';
    expect(label.length).toBeLessThanOrEqual(63);
    expect(label.startsWith('long-nnn')).toBe(true);
  });
});
