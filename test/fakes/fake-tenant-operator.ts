// TEST DOUBLE. Local control planes run no pods, so the MinIO Operator cannot run there. This
// stand-in does to the API what the operator (v7.1.1, pkg/controller/main-controller.go) does for a
// minio.min.io/v2 Tenant, in its order, with its status texts:
// - the credentials from spec.configuration's config.env (missing user or password: "empty tenant
//   credentials"; a missing Secret: no status at all), then validation of the pools;
// - requestAutoCert (on unless false): "Waiting for MinIO TLS Certificate", forever here, as on any
//   cluster without a CSR signer;
// - Services "minio" (port 80, selector v1.min.io/tenant), <t>-console (9090) and <t>-hl (headless,
//   9000); one Tenant per namespace ("Another MinIO Tenant already exists in the namespace");
//   ServiceAccount, Role and RoleBinding; a StatefulSet <t>-<pool> per pool (PoolNotCreated,
//   PoolCreated, PoolInitialized). Everything carries a controller reference to the Tenant.
// - Status is always written whole (PUT /status) with the six fields the CRD requires.
// It also plays MinIO's pods and the operator's health monitor, which with real pods call MinIO over
// HTTP: healthStatus green (unless `healthy` says otherwise), then "Initialized". Never used by src/.
// With { s3: true } it plays MinIO's pods with a real S3 server per Tenant (SeaweedFS: real S3, IAM
// and policy enforcement), its root from config.env (MINIO_ROOT_USER, MINIO_ROOT_PASSWORD) as
// MinIO reads it, started with the pools and before the health check answers, stopped when the
// Tenant goes; tests reach it through resolveS3Endpoint (s3-stores.ts). MinIO's admin API is not played.
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { isAlreadyExists } from '../../src/kit/kube/errors.ts';
import { RoleBindings, Roles, Secrets, ServiceAccounts, Services, StatefulSets, type ResourceType } from '../../src/kit/kube/resources.ts';
import { MinioTenants } from '../../src/backends/minio-operator/tenant.ts';
import { S3Stores } from './s3-stores.ts';
import { FakeMinioClient } from './fake-minio-client.ts';
import { StandIn, type Loose } from './stand-in.ts';

interface Pool {
  name: string;
  servers: number;
  volumesPerServer: number;
  volumeClaimTemplate: { metadata?: { name?: string }; spec: unknown };
}
interface TenantStatus {
  currentState: string;
  availableReplicas: number;
  revision: number;
  syncVersion: string;
  certificates: { autoCertEnabled?: boolean };
  pools: { ssName: string; state: string }[];
  healthStatus?: string;
  drivesOnline?: number;
  drivesOffline?: number;
  drivesHealing?: number;
}
interface TenantObj extends KubeObjectLike {
  metadata: { name: string; namespace: string; uid: string; resourceVersion?: string; deletionTimestamp?: string };
  spec: { pools: Pool[]; configuration?: { name: string }; requestAutoCert?: boolean; image?: string };
  status?: Partial<TenantStatus>;
}

/** One pool of four MinIO servers with a 1 Gi volume each: what the benches and scenarios ask of a Tenant. */
export const SMALL_POOL = {
  name: 'pool-0',
  servers: 4,
  volumesPerServer: 1,
  volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
};

export interface FakeTenantOperatorOptions {
  /** Whether MinIO answers the health check (every Tenant does by default). */
  healthy?: (tenant: TenantObj) => boolean;
  /** Run a real S3 server for each Tenant. Off by default: most tests need no S3, and each server costs about 125 MiB of RSS. */
  s3?: boolean;
}

const MINIO_IMAGE = 'quay.io/minio/minio:RELEASE.2025-04-08T15-41-24Z';

export class FakeTenantOperator extends StandIn<TenantObj> {
  private readonly opts: FakeTenantOperatorOptions;
  private readonly s3?: S3Stores;

  /** MinIO's client in the Jobs aimed at these stores (fake-minio-client.ts). */
  private readonly jobs: FakeMinioClient;

  constructor(client: KubeClient, opts: FakeTenantOperatorOptions = {}) {
    super(client, MinioTenants);
    this.opts = opts;
    if (opts.s3) this.s3 = new S3Stores(client);
    this.jobs = new FakeMinioClient(client, {
      s3: opts.s3,
      plays: (job) => FakeMinioClient.rootFormat(job) === 'config.env',
      shell: (endpoint, commands) => this.s3!.shellAt(endpoint, commands),
    });
  }

  override async start(): Promise<void> {
    await Promise.all([super.start(), this.jobs.start()]);
  }

  override async stop(): Promise<void> {
    await Promise.all([super.stop(), this.jobs.stop()]);
    await this.s3?.stopAll();
  }

  protected override async gone(tenant: TenantObj): Promise<void> {
    await this.s3?.stop(tenant.metadata.uid);
  }

  protected async reconcile(tenant: TenantObj): Promise<void> {
    if (tenant.metadata.deletionTimestamp) return; // "marked for deletion, skipping": the garbage collector does the rest
    const { name, namespace, uid } = tenant.metadata;
    let current = tenant;
    let status: TenantStatus = {
      currentState: '',
      availableReplicas: 0,
      revision: 0,
      syncVersion: '',
      certificates: {},
      pools: [],
      ...tenant.status,
    } as TenantStatus;
    const write = async (change: Partial<TenantStatus>): Promise<void> => {
      const next = { ...status, ...change };
      if (JSON.stringify(next) === JSON.stringify(status)) return;
      status = next;
      current = await this.client.updateStatus<TenantObj>(MinioTenants, { ...current, status });
    };

    const config = tenant.spec.configuration?.name
      ? await this.client.get<KubeObjectLike & { data?: Record<string, string> }>(Secrets, {
          namespace,
          name: tenant.spec.configuration.name,
        })
      : undefined;
    if (!config) return; // a NotFound event and a requeue; no status is written
    const env = Buffer.from(config.data?.['config.env'] ?? '', 'base64').toString();
    const root = { accessKey: envValue(env, 'MINIO_ROOT_USER'), secretKey: envValue(env, 'MINIO_ROOT_PASSWORD') };
    if (!root.accessKey || !root.secretKey) return write({ currentState: 'empty tenant credentials' });
    for (const [i, p] of tenant.spec.pools.entries()) {
      if (p.servers * p.volumesPerServer < 4 && !(p.servers === 1 && p.volumesPerServer === 1)) {
        return write({ currentState: `pool #${i} with ${p.servers} servers must have at least 4 volumes in total` });
      }
    }
    const autoCert = tenant.spec.requestAutoCert !== false;
    await write({ certificates: { ...status.certificates, autoCertEnabled: autoCert } });
    if (autoCert) return write({ currentState: 'Waiting for MinIO TLS Certificate' }); // no CSR signer here

    const ownerReferences = [{ apiVersion: 'minio.min.io/v2', kind: 'Tenant', name, uid, controller: true, blockOwnerDeletion: true }];
    const tenantLabel = { 'v1.min.io/tenant': name };
    const services: [string, string, Record<string, unknown>, Record<string, string>][] = [
      [
        'minio',
        'Provisioning MinIO Cluster IP Service',
        { type: 'ClusterIP', selector: tenantLabel, ports: [{ name: 'http-minio', port: 80, targetPort: 9000 }] },
        tenantLabel,
      ],
      [
        `${name}-console`,
        'Provisioning Console Service',
        { type: 'ClusterIP', selector: tenantLabel, ports: [{ name: 'http-console', port: 9090, targetPort: 9090 }] },
        { 'v1.min.io/console': `${name}-console` },
      ],
      [
        `${name}-hl`,
        'Provisioning MinIO Headless Service',
        { type: 'ClusterIP', clusterIP: 'None', selector: tenantLabel, ports: [{ name: 'http-minio', port: 9000, targetPort: 9000 }] },
        tenantLabel,
      ],
    ];
    for (const [svc, state, spec, labels] of services) {
      if (await this.client.get(Services, { namespace, name: svc })) continue;
      await write({ currentState: state });
      await this.createOwned(Services, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: svc, namespace, labels, ownerReferences },
        spec,
      });
    }

    // One Tenant per namespace: the first listed one that is not Initialized is told so.
    const { items: tenants } = await this.client.list<TenantObj>(MinioTenants, { namespace });
    if (tenants.length > 1) {
      const loser = tenants.find((t) => t.status?.currentState !== 'Initialized');
      if (loser?.metadata.uid === uid) await write({ currentState: 'Another MinIO Tenant already exists in the namespace' });
      return;
    }

    await this.createOwned(ServiceAccounts, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: `${name}-sa`, namespace, ownerReferences },
    });
    await this.createOwned(Roles, {
      apiVersion: Roles.apiVersion,
      kind: 'Role',
      metadata: { name: `${name}-role`, namespace, ownerReferences },
      rules: [
        { apiGroups: [''], resources: ['secrets', 'configmaps'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [''], resources: ['services'], verbs: ['create', 'delete', 'get'] },
        { apiGroups: ['minio.min.io'], resources: ['tenants'], verbs: ['get', 'list', 'watch'] },
      ],
    });
    await this.createOwned(RoleBindings, {
      apiVersion: RoleBindings.apiVersion,
      kind: 'RoleBinding',
      metadata: { name: `${name}-binding`, namespace, ownerReferences },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: `${name}-role` },
      subjects: [{ kind: 'ServiceAccount', name: `${name}-sa`, namespace }],
    });

    for (const pool of tenant.spec.pools) {
      const ssName = `${name}-${pool.name}`;
      const setPool = (state: string) => write({ pools: [...status.pools.filter((p) => p.ssName !== ssName), { ssName, state }] });
      if (!status.pools.some((p) => p.ssName === ssName)) await setPool('PoolNotCreated');
      if (!(await this.client.get(StatefulSets, { namespace, name: ssName }))) {
        await write({ currentState: 'Provisioning MinIO Statefulset' });
        await this.createOwned(StatefulSets, statefulSet(tenant, pool, ownerReferences));
        await setPool('PoolCreated');
      }
      if (status.pools.find((p) => p.ssName === ssName)?.state !== 'PoolInitialized') await setPool('PoolInitialized');
    }

    // MinIO's pods, behind the label every Service of the Tenant selects.
    await this.s3?.run(uid, root, { namespace, labels: tenantLabel, podPort: 9000 });

    // The health gate. With real pods, the operator's monitor asks MinIO over HTTP; here the stand-in answers.
    if (status.healthStatus !== 'green') {
      if (status.currentState !== 'Waiting for Tenant to be healthy')
        await write({ currentState: 'Waiting for Tenant to be healthy', availableReplicas: 0 });
      if (!(this.opts.healthy?.(tenant) ?? true)) return;
      const drives = tenant.spec.pools.reduce((n, p) => n + p.servers * p.volumesPerServer, 0);
      await write({ healthStatus: 'green', drivesOnline: drives, drivesOffline: 0, drivesHealing: 0 });
    }
    await write({ currentState: 'Initialized', availableReplicas: tenant.spec.pools.reduce((n, p) => n + p.servers, 0) });
  }

  private async createOwned(type: ResourceType, obj: Loose): Promise<void> {
    await this.client.create(type, obj).catch((e: unknown) => {
      if (!isAlreadyExists(e)) throw e;
    });
  }
}

/** A variable of config.env ("export MINIO_ROOT_USER=...", quotes optional), as MinIO's entrypoint sources it. */
function envValue(env: string, name: string): string {
  const m = new RegExp(`^(?:export\\s+)?${name}=(.*)$`, 'm').exec(env);
  return (m?.[1] ?? '').trim().replace(/^(["'])(.*)\1$/, '$2');
}

/** The pool's StatefulSet as minio-statefulset.go builds it (the parts the API sees). */
function statefulSet(tenant: TenantObj, pool: Pool, ownerReferences: unknown[]): Loose {
  const { name, namespace } = tenant.metadata;
  const labels = { 'v1.min.io/tenant': name, 'v1.min.io/console': `${name}-console`, 'v1.min.io/pool': pool.name };
  const volume = pool.volumeClaimTemplate.metadata?.name ?? 'data';
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: {
      name: `${name}-${pool.name}`,
      namespace,
      labels: { 'v1.min.io/tenant': name, 'v1.min.io/pool': pool.name },
      ownerReferences,
    },
    spec: {
      replicas: pool.servers,
      serviceName: `${name}-hl`,
      podManagementPolicy: 'Parallel',
      selector: { matchLabels: labels },
      template: {
        metadata: { labels, annotations: { 'min.io/revision': '0' } },
        spec: {
          containers: [
            {
              name: 'minio',
              image: tenant.spec.image ?? MINIO_IMAGE,
              args: ['server', '--certs-dir', '/tmp/certs', '--console-address', ':9090', '--address', ':9000'],
            },
          ],
        },
      },
      volumeClaimTemplates: Array.from({ length: pool.volumesPerServer }, (_, i) => ({
        metadata: { name: `${volume}${i}` },
        spec: pool.volumeClaimTemplate.spec,
      })),
    },
  } as Loose;
}
