// The MinIO Operator backend's pure functions, table-driven (crossplane-runtime's
// reconciler_modern_test.go style): the target Tenant, its root-credentials Secret, readiness and
// connection details from the operator's status, and how a TenantClass configures a Tenant.
import { testContext } from '../../../kit/kind-context.ts';
import { describe, expect, it } from '@jest/globals';
import type { Tenant, TenantClass } from '../../../../src/backends/minio-operator/api.ts';
import { configureTenant, minioTenant } from '../../../../src/backends/minio-operator/tenant.ts';
import type { Claim } from '../../../../src/runtime/claims/claim.ts';
import type { KubeClient } from '../../../../src/kit/kube/client.ts';
import { Secrets } from '../../../../src/kit/kube/resources.ts';
import type { Inspection, TargetObject } from '../../../../src/runtime/native/kind.ts';
import { s3Keys } from '../../../kit/s3-keys.ts';

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const pools = [{ name: 'pool-0', servers: 4, volumesPerServer: 1 }];

function tenant(forProvider: Partial<Tenant['spec']['forProvider']> = {}): Tenant {
  return {
    apiVersion: 'minio.crossplane.io/v1alpha1',
    kind: 'Tenant',
    metadata: { name: 'mr', namespace: 'infra' },
    spec: {
      forProvider: { pools, requestAutoCert: false, ...forProvider },
      targetNamespace: 'minio-t',
      providerRef: { name: 'p' },
      reclaimPolicy: 'Delete',
    },
  } as Tenant;
}

describe('MinIO Operator: desired', () => {
  const cases: { name: string; mr: Tenant; want: TargetObject }[] = [
    {
      name: 'the pools, TLS off, and the configuration Secret it reads its root credentials from',
      mr: tenant(),
      want: {
        apiVersion: 'minio.min.io/v2',
        kind: 'Tenant',
        metadata: { name: 'ext', namespace: 'minio-t' },
        spec: { pools, requestAutoCert: false, configuration: { name: 'ext-env-configuration' } },
      },
    },
    {
      name: 'an image and TLS',
      mr: tenant({ image: 'minio/minio:RELEASE', requestAutoCert: true }),
      want: {
        apiVersion: 'minio.min.io/v2',
        kind: 'Tenant',
        metadata: { name: 'ext', namespace: 'minio-t' },
        spec: { pools, image: 'minio/minio:RELEASE', requestAutoCert: true, configuration: { name: 'ext-env-configuration' } },
      },
    },
  ];
  it.each(cases)('$name', ({ mr, want }) => {
    expect(minioTenant.desired(mr, 'ext', testContext)).toEqual(want);
  });

  it('has no late initialization', () => {
    expect(minioTenant.lateInitialize).toBeUndefined();
  });
});

describe('MinIO Operator: companions', () => {
  it('one root-credentials Secret beside the Tenant, never remade', () => {
    const companions = minioTenant.companions!(tenant(), 'ext', testContext);
    expect(
      companions.map((c) => ({
        type: c.type,
        name: c.name,
        namespace: c.namespace,
        purpose: c.purpose,
        irreplaceable: c.irreplaceable?.reason,
      })),
    ).toEqual([
      {
        type: Secrets,
        name: 'ext-env-configuration',
        namespace: 'minio-t',
        purpose: 'root credentials Secret',
        irreplaceable: 'RootCredentialsLost',
      },
    ]);
  });

  it('builds a config.env with strong random root credentials, different each time', () => {
    const [secret] = minioTenant.companions!(tenant(), 'ext', testContext);
    const env = (): string =>
      Buffer.from((secret!.build() as TargetObject & { data: Record<string, string> }).data['config.env']!, 'base64').toString();
    expect(env()).toMatch(/^export MINIO_ROOT_USER="[A-Za-z0-9]{20}"\nexport MINIO_ROOT_PASSWORD="[A-Za-z0-9]{40}"\n$/);
    expect(env()).not.toBe(env());
    expect(secret!.build().metadata).toEqual({ name: 'ext-env-configuration', namespace: 'minio-t' });
  });

  it('names the configuration Secret an imported Tenant brings', () => {
    expect(
      minioTenant.references!({ metadata: { name: 'ext', namespace: 'minio-t' }, spec: { configuration: { name: 'theirs' } } }),
    ).toEqual([{ type: Secrets, name: 'theirs', namespace: 'minio-t' }]);
    expect(minioTenant.references!({ metadata: { name: 'ext', namespace: 'minio-t' }, spec: {} })).toEqual([]);
  });
});

describe('MinIO Operator: inspect', () => {
  const env = (text: string) => ({ metadata: { name: 'ext-env-configuration', namespace: 'minio-t' }, data: { 'config.env': b64(text) } });
  const roots = env('export MINIO_ROOT_USER="user"\nexport MINIO_ROOT_PASSWORD="pass"\n');
  const http = 'http://minio.minio-t.svc.cluster.local:80';
  const at = (more: object = {}, endpoint = http) => ({ namespace: 'minio-t', name: 'ext', endpoint, ...more });
  const user = { metadata: { name: 'ext-user', namespace: 'minio-t' }, data: { accessKey: b64('user'), secretKey: b64('pass') } };
  const job = (conditions: object[] = []) => ({ metadata: { name: 'ext-access-1', namespace: 'minio-t' }, status: { conditions } });
  const complete = job([{ type: 'Complete', status: 'True' }]);
  const withBucket = (forProvider: Partial<Tenant['spec']['forProvider']> = {}): Tenant => ({
    ...tenant(forProvider),
    spec: { ...tenant(forProvider).spec, bucket: { name: 'app-b-1', access: 'ReadWrite' } },
  });
  const keys = () =>
    s3Keys(http, { host: 'minio.minio-t.svc.cluster.local', port: '80' }, { user: 'user', pass: 'pass', bucket: 'app-b-1' });
  const cases: { name: string; mr?: Tenant; status?: object; job?: object; want: Inspection }[] = [
    {
      name: "Initialized and green: Ready, with the bucket user's keys, never the root user",
      status: { currentState: 'Initialized', healthStatus: 'green', availableReplicas: 4 },
      want: {
        ready: true,
        message: undefined,
        connectionDetails: keys(),
        atProvider: at({ currentState: 'Initialized', healthStatus: 'green', availableReplicas: 4 }),
      },
    },
    {
      name: 'TLS: https on 443, in the cluster domain asked for',
      mr: withBucket({ requestAutoCert: true, clusterDomain: 'corp.local' }),
      status: { currentState: 'Initialized', healthStatus: 'green' },
      want: {
        ready: true,
        message: undefined,
        connectionDetails: s3Keys(
          'https://minio.minio-t.svc.corp.local:443',
          { host: 'minio.minio-t.svc.corp.local', port: '443' },
          { user: 'user', pass: 'pass', bucket: 'app-b-1' },
        ),
        atProvider: at({ currentState: 'Initialized', healthStatus: 'green' }, 'https://minio.minio-t.svc.corp.local:443'),
      },
    },
    {
      name: 'Initialized but yellow: not ready, the health said',
      status: { currentState: 'Initialized', healthStatus: 'yellow' },
      want: {
        ready: false,
        message: 'MinIO Operator: Initialized (health yellow)',
        connectionDetails: keys(),
        atProvider: at({ currentState: 'Initialized', healthStatus: 'yellow' }),
      },
    },
    {
      name: 'Initialized with a health it does not know: unknown',
      status: { currentState: 'Initialized', healthStatus: 'purple' },
      want: {
        ready: false,
        message: 'MinIO Operator: Initialized (health unknown)',
        connectionDetails: keys(),
        atProvider: at({ currentState: 'Initialized', healthStatus: 'purple' }),
      },
    },
    {
      name: 'a known state on the way: shown as the operator words it',
      status: { currentState: 'Provisioning MinIO Statefulset' },
      want: {
        ready: false,
        message: 'MinIO Operator: Provisioning MinIO Statefulset',
        connectionDetails: keys(),
        atProvider: at({ currentState: 'Provisioning MinIO Statefulset' }),
      },
    },
    {
      name: 'a state it does not know: not echoed',
      status: { currentState: 'click <here>' },
      want: {
        ready: false,
        message: 'MinIO Operator: a state provider-rook does not know',
        connectionDetails: keys(),
        atProvider: at(),
      },
    },
    {
      name: 'no status yet',
      want: {
        ready: false,
        message: 'MinIO Operator: not yet seen by the operator',
        connectionDetails: keys(),
        atProvider: at(),
      },
    },
    {
      name: 'Initialized and green, the access Job still running: waiting for it',
      status: { currentState: 'Initialized', healthStatus: 'green' },
      job: job(),
      want: {
        ready: false,
        message: 'waiting for Job minio-t/ext-access-1 to make bucket app-b-1 and its user',
        connectionDetails: keys(),
        atProvider: at({ currentState: 'Initialized', healthStatus: 'green' }),
      },
    },
    {
      name: "a Tenant without a bucket (a platform team's shared store): the endpoint only, never the root user",
      mr: tenant(),
      status: { currentState: 'Initialized', healthStatus: 'green' },
      want: {
        ready: true,
        message: undefined,
        connectionDetails: s3Keys(http, { host: 'minio.minio-t.svc.cluster.local', port: '80' }),
        atProvider: at({ currentState: 'Initialized', healthStatus: 'green' }),
      },
    },
  ];
  it.each(cases)('$name', async ({ mr, status, job: j, want }) => {
    const m = mr ?? withBucket();
    const observed: TargetObject = { metadata: { name: 'ext', namespace: 'minio-t' }, ...(status ? { status } : {}) };
    const read = { get: async () => undefined };
    expect(
      await minioTenant.inspect({
        client: {} as KubeClient,
        read,
        mr: m,
        observed,
        companions: [roots, ...(m.spec.bucket ? [user, j ?? complete] : [])] as (TargetObject | undefined)[],
        credentials: { generation: 0, outstanding: [], due: [] },
        signal: new AbortController().signal,
      }),
    ).toEqual(want);
  });
});

describe('MinIO Operator: configureTenant', () => {
  const claim: Claim = {
    apiVersion: 'storage.crossplane.io/v1alpha1',
    kind: 'Bucket',
    metadata: { name: 'bucket', namespace: 'app', uid: 'u' },
    spec: { classRef: { name: 'std' } },
  };
  const cls = (spec: Partial<TenantClass['spec']>): TenantClass =>
    ({
      apiVersion: 'minio.crossplane.io/v1alpha1',
      kind: 'TenantClass',
      metadata: { name: 'gold', namespace: 'infra' },
      spec: { pools, requestAutoCert: false, providerRef: { name: 'p' }, reclaimPolicy: 'Delete', namespacePrefix: 'minio-', ...spec },
    }) as TenantClass;
  const labels = { 'crossplane.io/claim-namespace': 'app', 'crossplane.io/claim-name': 'bucket' };
  const made = (forProvider: object, targetNamespace: string, reclaimPolicy = 'Delete') => ({
    apiVersion: 'minio.crossplane.io/v1alpha1',
    kind: 'Tenant',
    metadata: { name: 'app-bucket-xyz', labels },
    spec: {
      forProvider,
      targetNamespace,
      bucket: { name: 'app-bucket-41a7cae1', access: 'ReadWrite' },
      reclaimPolicy,
      writeConnectionSecretToRef: { name: 'app-bucket-xyz' },
    },
  });
  const cases: { name: string; cls: TenantClass; want: object }[] = [
    {
      name: "the class's pools, in a namespace of its own",
      cls: cls({}),
      want: made({ pools, requestAutoCert: false }, 'minio-app-bucket-xyz'),
    },
    {
      name: 'image, TLS, cluster domain, another prefix and reclaim policy',
      cls: cls({
        image: 'minio/minio:R',
        requestAutoCert: true,
        clusterDomain: 'corp.local',
        namespacePrefix: 't-',
        reclaimPolicy: 'Retain',
      }),
      want: made({ pools, image: 'minio/minio:R', requestAutoCert: true, clusterDomain: 'corp.local' }, 't-app-bucket-xyz', 'Retain'),
    },
    {
      name: 'an allowed namespace',
      cls: cls({ allowedNamespaces: ['app', 'other'] }),
      want: made({ pools, requestAutoCert: false }, 'minio-app-bucket-xyz'),
    },
  ];
  it.each(cases)('$name', ({ cls: c, want }) => {
    expect(configureTenant(claim, c, 'app-bucket-xyz')).toEqual(want);
  });

  it('keeps the namespace a valid label: at most 63 characters, no trailing dash', () => {
    const name = `${'a'.repeat(56)}-bcdfg`;
    const ns = configureTenant(claim, cls({ namespacePrefix: 'minio-tt-' }), name).spec.targetNamespace;
    expect(ns).toBe(`minio-tt-${'a'.repeat(54)}`);
    expect(ns.length).toBeLessThanOrEqual(63);
    expect(configureTenant(claim, cls({ namespacePrefix: 'minio-tt-' }), `${'a'.repeat(53)}-bcdfg`).spec.targetNamespace).toBe(
      `minio-tt-${'a'.repeat(53)}`,
    );
  });

  it('refuses a claim from a namespace the class does not allow', () => {
    expect(() => configureTenant(claim, cls({ allowedNamespaces: [] }), 'x')).toThrow(
      expect.objectContaining({
        reason: 'NamespaceNotAllowed',
        message: 'TenantClass infra/gold does not allow claims from namespace app (allowed: none)',
      }),
    );
  });
});
