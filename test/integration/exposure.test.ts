// A store of its own, exposed to other clusters as its class says, and used from a cluster that holds
// no store (it-consumer) with what was delivered there: a LoadBalancer (Rook MinIO ObjectStore), a
// Gateway API route (MinIO Tenant), Multi-Cluster Services (ObjectStore), the other pairs of backend
// and exposure, and shared stores exposed by their own resource (MinioBucket) each way. The controllers that give addresses are stand-ins
// (exposure-controllers.ts) that write what the real ones write and carry the traffic on loopback;
// the Gateway API and MCS CRDs are the projects' own. A cluster's Service names resolve only inside it.
import { applyObject } from '../kit/manifests.ts';
import type { ObjectKey } from '../../src/kit/kube/object-key.ts';
import { describe, expect, it } from '@jest/globals';
import { BucketClasses, Buckets } from '../../src/app.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Namespaces, Secrets, Services, type ResourceType } from '../../src/kit/kube/resources.ts';
import { Gateways, HTTPRoutes, ServiceExports } from '../../src/runtime/native/exposure.ts';
import { secretText } from '../../src/runtime/providers/credentials.ts';
import { Providers } from '../../src/runtime/providers/provider.ts';
import { registry } from '../../src/kit/metrics.ts';
import { adminClient, testCluster } from '../kit/env.ts';
import { createNamespace, installCrds, registerProvider } from '../kit/provider.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { roundTrip } from '../kit/s3.ts';
import { FakeGatewayController, FakeLoadBalancerController, FakeMcsController } from '../fakes/exposure-controllers.ts';
import { SMALL_POOL } from '../fakes/fake-tenant-operator.ts';
import { LoopbackIngress } from '../fakes/loopback-ingress.ts';
import { resolveS3Endpoint } from '../fakes/s3-stores.ts';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ListBucketsCommand } from '@aws-sdk/client-s3';
import { repoRoot } from '../kit/cluster.ts';
import { makeCa, makeServingCert } from '../kit/pki.ts';
import { s3Client } from '../kit/s3.ts';
import { countWaitingAfter } from '../../src/runtime/managed-metrics.ts';
import { ANNOTATION_COMPANION_UIDS } from '../../src/runtime/ownership/marks.ts';
import { eventually } from '../kit/eventually.ts';
import { cond } from '../kit/conditions.ts';

const TARGET = `it-exposure-${process.pid}`;
const LB_NS = `exp-lb-${process.pid}`;
const MCS_NS = `exp-mcs-${process.pid}`;
const OS_GW_NS = `exp-osgw-${process.pid}`;
const SHARED_NS = `exp-shared-${process.pid}`;
const SHARED_GW_NS = `exp-shgw-${process.pid}`;
const SHARED_MCS_NS = `exp-shmcs-${process.pid}`;
const GW_NS = `exp-gw-${process.pid}`;
const DOMAIN = `s3-${process.pid}.example.test`;
type Cond = { type: string; status: string; reason: string; message?: string };
type Obj = KubeObjectLike & {
  spec?: Record<string, unknown> & { resourceRef?: { name: string } };
  data?: Record<string, string>;
  status?: {
    conditions?: Cond[];
    bindingPhase?: string;
    deliveries?: { to: string; delivered: boolean; endpoint?: string; reason?: string }[];
    atProvider?: Record<string, unknown>;
  };
};

let control: KubeClient;
let target: KubeClient;
let consumer: KubeClient;
let cephIngress: LoopbackIngress;
let balancer: FakeLoadBalancerController;
let gateway: FakeGatewayController;
let mcs: FakeMcsController;
let platform: string;
let team: string;
let appNs: string;
let pkiDir: string;
let caPem: string;

const fixture = (name: string) => path.join(repoRoot, 'test', 'kit', 'crds', `${name}.yaml`);
const read = (type: ResourceType, { namespace, name }: Required<ObjectKey>) => control.get<Obj>(type, { namespace, name });
const claim = (name: string, cls: string): KubeObjectLike =>
  ({
    apiVersion: Buckets.apiVersion,
    kind: 'Bucket',
    metadata: { name, namespace: team },
    spec: {
      classRef: { name: cls },
      writeConnectionSecretToRef: { name: `${name}-s3` },
      consumers: [{ providerRef: { name: 'c', namespace: platform }, namespace: appNs }],
    },
  }) as KubeObjectLike;
const delivered = (name: string) =>
  eventually(
    async () => {
      const o = await read(Buckets, { namespace: team, name });
      return cond(o, 'Delivered')?.status === 'True' ? o : undefined;
    },
    `Bucket ${team}/${name} to be Delivered`,
    { timeoutMs: 90_000, explain: async () => JSON.stringify((await read(Buckets, { namespace: team, name }))?.status) },
  );

/** The app's-eye round trip: the Secret read in the consumer cluster, the endpoint resolved there, PUT/GET/LIST/DELETE. */
async function useFromConsumer(name: string): Promise<Record<string, string>> {
  const keys = secretText((await consumer.get<Obj>(Secrets, { namespace: appNs, name: `${name}-s3` }))!.data);
  await roundTrip(
    await resolveS3Endpoint(keys.endpoint!, consumer),
    { accessKey: keys.AWS_ACCESS_KEY_ID!, secretKey: keys.AWS_SECRET_ACCESS_KEY! },
    keys.BUCKET_NAME!,
  );
  return keys;
}

withProviderRook({
  cluster: TARGET,
  namespaces: { platform: 'exp-infra', team: 'exp-team' },
  roles: true,
  operators: ['rook-minio', 'minio-operator', 'rook-ceph'],
  s3: true,
  provider: { name: 't', in: 'platform' },
  before: async (f) => {
    ({ control, target } = f);
    ({ platform, team } = f.ns);
    consumer = adminClient(testCluster('consumer'));
    await installCrds(target, ['gateways', 'httproutes', 'serviceexports'].map(fixture));
    await installCrds(consumer, [fixture('serviceimports')]);
    balancer = new FakeLoadBalancerController(target);
    gateway = new FakeGatewayController(target);
    mcs = new FakeMcsController(target, [consumer]);
    for (const s of [balancer, gateway, mcs]) void s.start();
    // Rook Ceph's gateway Service is the platform team's: a URL of its ingress is how a class exposes it.
    cephIngress = new LoopbackIngress('http://rook-ceph-rgw-my-store.rook-ceph.svc:80', target);
    const cephUrl = await cephIngress.listen();
    appNs = await createNamespace(consumer, 'exp-app');
    for (const ns of [GW_NS, MCS_NS]) await target.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    // Namespace sameness: the exported Service's namespace exists where it is imported.
    for (const ns of [MCS_NS, SHARED_MCS_NS])
      await consumer.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await target.create(Gateways, {
      apiVersion: Gateways.apiVersion,
      kind: 'Gateway',
      metadata: { name: 'edge', namespace: GW_NS },
      spec: {
        gatewayClassName: 'loopback',
        listeners: [{ name: 'http', port: 18080, protocol: 'HTTP', allowedRoutes: { namespaces: { from: 'All' } } }],
      },
    } as KubeObjectLike);
    // An HTTPS listener, its certificate signed by a CA of the platform team's own.
    pkiDir = mkdtempSync(path.join(tmpdir(), 'provider-rook-exposure-'));
    const ca = await makeCa(pkiDir, 'platform-ca');
    const serving = await makeServingCert(pkiDir, 'edge-tls', [`*.tls.${DOMAIN}`], ca);
    caPem = readFileSync(ca.cert, 'utf8');
    await target.create(Secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'edge-cert', namespace: GW_NS },
      type: 'kubernetes.io/tls',
      data: { 'tls.crt': readFileSync(serving.cert).toString('base64'), 'tls.key': readFileSync(serving.key).toString('base64') },
    } as KubeObjectLike);
    await target.create(Gateways, {
      apiVersion: Gateways.apiVersion,
      kind: 'Gateway',
      metadata: { name: 'edge-tls', namespace: GW_NS },
      spec: {
        gatewayClassName: 'loopback',
        listeners: [
          {
            name: 'https',
            port: 18443,
            protocol: 'HTTPS',
            hostname: `*.tls.${DOMAIN}`,
            tls: { mode: 'Terminate', certificateRefs: [{ name: 'edge-cert' }] },
            allowedRoutes: { namespaces: { from: 'All' } },
          },
        ],
      },
    } as KubeObjectLike);
    await registerProvider(control, { namespace: platform, name: 'c' }, testCluster('consumer'));
    await control.mergePatch(
      Providers,
      { namespace: platform, name: 'c' },
      { spec: { consumers: [{ claimNamespace: team, namespaces: [appNs] }] } },
    );
    const apply = (type: ResourceType, key: Required<ObjectKey>, body: object) => applyObject(control, type, key, body);
    const store = { scope: { nodeCount: 4 }, providerRef: { name: 't' } };
    await apply(
      kinds.ObjectStoreClass,
      { namespace: platform, name: 'lb' },
      { spec: { ...store, targetNamespace: LB_NS, exposure: { loadBalancer: {} } } },
    );
    await apply(
      kinds.ObjectStoreClass,
      { namespace: platform, name: 'mcs' },
      { spec: { ...store, targetNamespace: MCS_NS, exposure: { multiCluster: {} } } },
    );
    // The other pairs of backend and exposure: a Rook MinIO store on the Gateway, a Tenant exported to the clusterset.
    await apply(
      kinds.ObjectStoreClass,
      { namespace: platform, name: 'os-gw' },
      {
        spec: {
          ...store,
          targetNamespace: OS_GW_NS,
          exposure: { gateway: { gatewayRef: { name: 'edge', namespace: GW_NS }, hostname: `*.os.${DOMAIN}` } },
        },
      },
    );
    await apply(
      kinds.TenantClass,
      { namespace: platform, name: 'tenant-lb' },
      {
        spec: { pools: [SMALL_POOL], providerRef: { name: 't' }, exposure: { loadBalancer: {} } },
      },
    );
    await apply(
      kinds.TenantClass,
      { namespace: platform, name: 'tenant-mcs' },
      {
        spec: { pools: [SMALL_POOL], providerRef: { name: 't' }, exposure: { multiCluster: {} } },
      },
    );
    await apply(
      kinds.TenantClass,
      { namespace: platform, name: 'gw' },
      {
        spec: {
          pools: [SMALL_POOL],
          providerRef: { name: 't' },
          exposure: { gateway: { gatewayRef: { name: 'edge', namespace: GW_NS }, hostname: `*.${DOMAIN}` } },
        },
      },
    );
    await apply(
      kinds.TenantClass,
      { namespace: platform, name: 'gw-tls' },
      {
        spec: {
          pools: [SMALL_POOL],
          providerRef: { name: 't' },
          exposure: { gateway: { gatewayRef: { name: 'edge-tls', namespace: GW_NS }, hostname: `*.tls.${DOMAIN}` }, caBundle: caPem },
        },
      },
    );
    // A shared store exposed by its own resource; its class sets no URL, so its buckets follow the store.
    await apply(
      kinds.ObjectStore,
      { namespace: platform, name: 'shared' },
      {
        spec: {
          forProvider: { scope: { nodeCount: 4 } },
          targetNamespace: SHARED_NS,
          providerRef: { name: 't' },
          exposure: { loadBalancer: {} },
        },
      },
    );
    await apply(
      kinds.MinioBucketClass,
      { namespace: platform, name: 'shared' },
      { spec: { store: { kind: 'ObjectStore', name: 'shared' } } },
    );
    // Shared stores on the other exposures: a Tenant on the Gateway under one host name, an ObjectStore exported to the clusterset.
    await apply(
      kinds.Tenant,
      { namespace: platform, name: 'shared-gw' },
      {
        spec: {
          forProvider: { pools: [SMALL_POOL] },
          targetNamespace: SHARED_GW_NS,
          providerRef: { name: 't' },
          exposure: { gateway: { gatewayRef: { name: 'edge', namespace: GW_NS }, hostname: `shared.${DOMAIN}` } },
        },
      },
    );
    await apply(
      kinds.MinioBucketClass,
      { namespace: platform, name: 'shared-gw' },
      { spec: { store: { kind: 'Tenant', name: 'shared-gw' } } },
    );
    await apply(
      kinds.ObjectStore,
      { namespace: platform, name: 'shared-mcs' },
      {
        spec: {
          forProvider: { scope: { nodeCount: 4 } },
          targetNamespace: SHARED_MCS_NS,
          providerRef: { name: 't' },
          exposure: { multiCluster: {} },
        },
      },
    );
    await apply(
      kinds.MinioBucketClass,
      { namespace: platform, name: 'shared-mcs' },
      { spec: { store: { kind: 'ObjectStore', name: 'shared-mcs' } } },
    );
    await apply(
      kinds.CephBucketClass,
      { namespace: platform, name: 'ceph' },
      {
        spec: { storageClassName: 'rook-ceph-bucket', providerRef: { name: 't' }, exposure: { url: cephUrl } },
      },
    );
    for (const [name, kind] of [
      ['lb', kinds.ObjectStoreClass],
      ['mcs', kinds.ObjectStoreClass],
      ['gw', kinds.TenantClass],
      ['os-gw', kinds.ObjectStoreClass],
      ['tenant-lb', kinds.TenantClass],
      ['tenant-mcs', kinds.TenantClass],
      ['gw-tls', kinds.TenantClass],
      ['shared', kinds.MinioBucketClass],
      ['shared-gw', kinds.MinioBucketClass],
      ['shared-mcs', kinds.MinioBucketClass],
      ['ceph', kinds.CephBucketClass],
    ] as const)
      await apply(
        BucketClasses,
        { namespace: team, name },
        { classRef: { apiVersion: kind.apiVersion, kind: kind.kind, name, namespace: platform } },
      );
  },
  app: { pollIntervalMs: 1_000 },
  after: async () => {
    for (const s of [balancer, gateway, mcs]) await s?.stop();
    await cephIngress?.close();
    if (pkiDir) rmSync(pkiDir, { recursive: true, force: true });
  },
  timeoutMs: 240_000,
});

describe('a store exposed to other clusters is usable from a cluster that holds none', () => {
  it('a LoadBalancer: its address from status.loadBalancer.ingress, delivered and used from the consumer cluster', async () => {
    await control.create(Buckets, claim('lb', 'lb'));
    const c = await delivered('lb');
    const keys = await useFromConsumer('lb');
    const mr = await read(kinds.ObjectStore, { namespace: platform, name: c.spec!.resourceRef!.name });
    const exposure = mr!.status!.atProvider!.exposure as { via: string; endpoint: string };
    expect(exposure.via).toBe('LoadBalancer');
    expect(keys.endpoint).toBe(exposure.endpoint);
    expect(new URL(keys.endpoint!).hostname).toMatch(/^127\.0\.78\./);
    // Made by provider-rook beside the store's own Service, and read back: the address the cloud wrote.
    const lb = await target.get<Obj & { status?: { loadBalancer?: { ingress?: { ip: string }[] } } }>(Services, {
      namespace: LB_NS,
      name: `${c.spec!.resourceRef!.name}-s3-external`,
    });
    expect(lb?.status?.loadBalancer?.ingress?.[0]?.ip).toBe(new URL(keys.endpoint!).hostname);
    // The claim's own copy (control cluster) keeps the cluster DNS name, which the consumer cannot resolve.
    const own = secretText((await control.get<Obj>(Secrets, { namespace: team, name: 'lb-s3' }))!.data);
    await expect(resolveS3Endpoint(own.endpoint!, consumer)).rejects.toThrow(/no Service/);
  }, 150_000);

  it('a LoadBalancer a platform team takes off its store goes from the target, and from its record', async () => {
    await control.create(Buckets, claim('lb-off', 'lb'));
    const c = await delivered('lb-off');
    const key = { namespace: platform, name: c.spec!.resourceRef!.name };
    const lbKey = { namespace: LB_NS, name: `${key.name}-s3-external` };
    const recorded = async () =>
      ((await read(kinds.ObjectStore, key))?.metadata as { annotations?: Record<string, string> } | undefined)?.annotations?.[
        ANNOTATION_COMPANION_UIDS
      ] ?? '';
    expect(await target.get(Services, lbKey)).toBeDefined();
    expect(await recorded()).toContain(lbKey.name);
    await control.mergePatch(kinds.ObjectStore, key, { spec: { exposure: null } });
    // Still there, the store would stay reachable from outside its cluster for as long as it lives.
    await eventually(async () => ((await target.get(Services, lbKey)) === undefined ? true : undefined), 'the LoadBalancer Service to go', {
      timeoutMs: 30_000,
    });
    await eventually(async () => (!(await recorded()).includes(lbKey.name) ? true : undefined), 'its record to go');
    expect(await target.get(Services, { namespace: LB_NS, name: `${key.name}-s3` })).toBeDefined();
  }, 150_000);

  it('a Gateway API route: published under its host name, signed with it, and proxied by Host to the Tenant', async () => {
    await control.create(Buckets, claim('gw', 'gw'));
    const c = await delivered('gw');
    const keys = await useFromConsumer('gw');
    const mrName = c.spec!.resourceRef!.name;
    expect(keys.endpoint).toBe(`http://${mrName}.${DOMAIN}:18080`);
    const route = await target.get<Obj & { spec?: { hostnames?: string[] } }>(HTTPRoutes, { namespace: `minio-${mrName}`, name: 'minio' });
    expect(route?.spec?.hostnames).toEqual([`${mrName}.${DOMAIN}`]);
  }, 150_000);

  it('an HTTPS Gateway listener: https, and the CA that verifies it in the Secret (ca.crt), which alone makes it trusted', async () => {
    await control.create(Buckets, claim('tls', 'gw-tls'));
    const c = await delivered('tls');
    const keys = secretText((await consumer.get<Obj>(Secrets, { namespace: appNs, name: 'tls-s3' }))!.data);
    expect(keys.endpoint).toBe(`https://${c.spec!.resourceRef!.name}.tls.${DOMAIN}:18443`);
    expect(keys['ca.crt']?.trim()).toBe(caPem.trim()); // secretText trims
    const creds = { accessKey: keys.AWS_ACCESS_KEY_ID!, secretKey: keys.AWS_SECRET_ACCESS_KEY! };
    const endpoint = await resolveS3Endpoint(keys.endpoint!, consumer);
    await roundTrip(endpoint, creds, keys.BUCKET_NAME!, { ca: keys['ca.crt'] });
    // Without the delivered CA, the listener's certificate is not trusted.
    const untrusting = s3Client(endpoint, creds);
    try {
      const err = await untrusting.send(new ListBucketsCommand({})).then(
        () => undefined,
        (e: Error & { code?: string }) => e,
      );
      expect(err?.code ?? err?.message).toMatch(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED|unable to verify|issuer certificate/i);
    } finally {
      untrusting.destroy();
    }
  }, 150_000);

  it('a Rook MinIO store on the Gateway, under its own host name', async () => {
    await control.create(Buckets, claim('osgw', 'os-gw'));
    const c = await delivered('osgw');
    const keys = await useFromConsumer('osgw');
    expect(keys.endpoint).toBe(`http://${c.spec!.resourceRef!.name}.os.${DOMAIN}:18080`);
  }, 150_000);

  it('a Tenant behind a LoadBalancer, on the port its Service serves (80)', async () => {
    await control.create(Buckets, claim('tlb', 'tenant-lb'));
    const c = await delivered('tlb');
    const keys = await useFromConsumer('tlb');
    const mrName = c.spec!.resourceRef!.name;
    const lb = await target.get<
      Obj & { spec?: { ports?: { port: number }[] }; status?: { loadBalancer?: { ingress?: { ip: string }[] } } }
    >(Services, { namespace: `minio-${mrName}`, name: 'minio-external' });
    expect(lb?.spec?.ports?.map((p) => p.port)).toEqual([80]);
    expect(keys.endpoint).toBe(`http://${lb!.status!.loadBalancer!.ingress![0]!.ip}`); // port 80 is the default
  }, 150_000);

  it("a Tenant exported to the clusterset: imported once its namespace exists in the consumer's cluster", async () => {
    await control.create(Buckets, claim('tmcs', 'tenant-mcs'));
    const mr = await eventually(
      async () => (await read(Buckets, { namespace: team, name: 'tmcs' }))?.spec?.resourceRef?.name,
      'a Tenant for the claim',
      {
        timeoutMs: 30_000,
      },
    );
    // Namespace sameness: the consumer's cluster holds the Tenant's namespace; the MCS controller imports there then.
    await consumer.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: `minio-${mr}` } });
    await eventually(
      async () => ((await target.get(ServiceExports, { namespace: `minio-${mr}`, name: 'minio' })) ? true : undefined),
      'the export made',
      {
        timeoutMs: 60_000,
      },
    );
    await eventually(
      async () => ((await target.get(Services, { namespace: `minio-${mr}`, name: 'minio' })) ? true : undefined),
      "the operator's Service",
      {
        timeoutMs: 60_000,
      },
    );
    await mcs.resync();
    await delivered('tmcs');
    const keys = await useFromConsumer('tmcs');
    expect(keys.endpoint).toBe(`http://minio.minio-${mr}.svc.clusterset.local`); // port 80 is the default
  }, 150_000);

  it('Multi-Cluster Services: a ServiceExport, published as its clusterset name, which resolves where it is imported', async () => {
    await control.create(Buckets, claim('mcs', 'mcs'));
    const c = await delivered('mcs');
    const keys = await useFromConsumer('mcs');
    const svc = `${c.spec!.resourceRef!.name}-s3`;
    expect(keys.endpoint).toBe(`http://${svc}.${MCS_NS}.svc.clusterset.local:9000`);
    expect(await target.get(ServiceExports, { namespace: MCS_NS, name: svc })).toBeDefined();
    // Not where nothing imports it: the control cluster holds no ServiceImport.
    await expect(resolveS3Endpoint(keys.endpoint!, control)).rejects.toThrow(/does not resolve/);
  }, 150_000);

  it("a Rook Ceph bucket, through the URL of the platform team's ingress in front of its gateway", async () => {
    await control.create(Buckets, claim('ceph', 'ceph'));
    await delivered('ceph');
    const keys = await useFromConsumer('ceph');
    expect(keys.endpoint).toBe(cephIngress.url);
    const own = secretText((await control.get<Obj>(Secrets, { namespace: team, name: 'ceph-s3' }))!.data);
    await expect(resolveS3Endpoint(own.endpoint!, consumer)).rejects.toThrow();
  }, 150_000);

  it("a bucket in a shared store gets the store's own exposure", async () => {
    await control.create(Buckets, claim('bucket', 'shared'));
    await delivered('bucket');
    const keys = await useFromConsumer('bucket');
    const store = await read(kinds.ObjectStore, { namespace: platform, name: 'shared' });
    expect(keys.endpoint).toBe((store!.status!.atProvider!.exposure as { endpoint: string }).endpoint);
  }, 150_000);
});

describe("a bucket in a shared store follows the store's exposure, each way", () => {
  it("a shared Tenant on the Gateway: the bucket is reached under the store's host name", async () => {
    await control.create(Buckets, claim('shgw', 'shared-gw'));
    await delivered('shgw');
    const keys = await useFromConsumer('shgw');
    expect(keys.endpoint).toBe(`http://shared.${DOMAIN}:18080`);
    const store = await read(kinds.Tenant, { namespace: platform, name: 'shared-gw' });
    expect((store!.status!.atProvider!.exposure as { via: string }).via).toBe('Gateway');
  }, 150_000);

  it('a shared ObjectStore exported to the clusterset: the bucket is reached by its clusterset name', async () => {
    await control.create(Buckets, claim('shmcs', 'shared-mcs'));
    await delivered('shmcs');
    const keys = await useFromConsumer('shmcs');
    expect(keys.endpoint).toBe(`http://shared-mcs-s3.${SHARED_MCS_NS}.svc.clusterset.local:9000`);
  }, 150_000);
});

describe('an exposure that never gets an address', () => {
  it('a LoadBalancer left pending: the store waits with WaitingForExposure, counted as waiting; nothing is delivered to the consumer', async () => {
    await balancer.stop();
    const pending = new FakeLoadBalancerController(target, { pending: true });
    void pending.start();
    try {
      await control.create(Buckets, claim('pending', 'lb'));
      const mrName = await eventually(
        async () => (await read(Buckets, { namespace: team, name: 'pending' }))?.spec?.resourceRef?.name,
        'a resource for the claim',
        { timeoutMs: 30_000 },
      );
      const ready = await eventually(
        async () => {
          const c = cond(await read(kinds.ObjectStore, { namespace: platform, name: mrName }), 'Ready');
          return c?.reason === 'WaitingForExposure' ? c : undefined;
        },
        'the store to wait for its exposure',
        {
          timeoutMs: 60_000,
          explain: async () => JSON.stringify((await read(kinds.ObjectStore, { namespace: platform, name: mrName }))?.status),
        },
      );
      expect(ready.message).toContain('has no address yet (status.loadBalancer.ingress)');
      countWaitingAfter(0);
      const waiting = ((await registry.getSingleMetric('provider_rook_managed_resource_waiting')?.get())?.values ?? [])
        .filter((v) => v.labels.reason === 'WaitingForExposure')
        .reduce((n, v) => n + v.value, 0);
      expect(waiting).toBeGreaterThanOrEqual(1);
      expect(await consumer.get(Secrets, { namespace: appNs, name: 'pending-s3' })).toBeUndefined();
    } finally {
      countWaitingAfter(300_000);
      await pending.stop();
    }
  }, 150_000);
});
