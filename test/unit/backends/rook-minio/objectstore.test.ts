// The Rook MinIO backend's pure functions, table-driven (crossplane-runtime's reconciler_modern_test.go
// style: named cases, inputs → wanted output): the target ObjectStore, its companions, late init,
// readiness and connection details from what the operator made, and how a class configures a store.
import { testContext } from '../../../kit/kind-context.ts';
import type { ObjectKey } from '../../../../src/kit/kube/object-key.ts';
import { describe, expect, it } from '@jest/globals';
import type { ObjectStore } from '../../../../src/backends/rook-minio/api.ts';
import type { ObjectStoreClass } from '../../../../src/backends/rook-minio/api.ts';
import { minioObjectStore } from '../../../../src/backends/rook-minio/objectstore.ts';
import { configureObjectStore } from '../../../../src/backends/rook-minio/objectstoreclass.ts';
import type { Claim } from '../../../../src/runtime/claims/claim.ts';
import type { KubeClient, KubeObjectLike } from '../../../../src/kit/kube/client.ts';
import { Secrets, Services, type ResourceType } from '../../../../src/kit/kube/resources.ts';
import type { Inspection, TargetObject } from '../../../../src/runtime/native/kind.ts';
import { s3Keys } from '../../../kit/s3-keys.ts';

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const text = (s: string | undefined): string => Buffer.from(s ?? '', 'base64').toString();

function store(forProvider: Partial<ObjectStore['spec']['forProvider']> = {}, spec: Partial<ObjectStore['spec']> = {}): ObjectStore {
  return {
    apiVersion: 'minio.rook.crossplane.io/v1alpha1',
    kind: 'ObjectStore',
    metadata: { name: 'mr', namespace: 'infra' },
    spec: {
      forProvider: { scope: { nodeCount: 4 }, ...forProvider },
      targetNamespace: 'tns',
      providerRef: { name: 'p' },
      reclaimPolicy: 'Delete',
      ...spec,
    },
  } as ObjectStore;
}

/** inspect()'s reader: a get from these objects, by "Kind/namespace/name". */
function reader(objects: Record<string, object>) {
  return {
    get: async <T extends KubeObjectLike>(type: ResourceType, { namespace, name }: ObjectKey) =>
      objects[`${type.kind}/${namespace}/${name}`] as T | undefined,
  };
}

describe('Rook MinIO: desired', () => {
  const cases: { name: string; mr: ObjectStore; want: TargetObject }[] = [
    {
      name: "the scope, and credentials defaulted to <store>-access-keys in the store's namespace",
      mr: store(),
      want: {
        apiVersion: 'minio.rook.io/v1alpha1',
        kind: 'ObjectStore',
        metadata: { name: 'ext', namespace: 'tns' },
        spec: { scope: { nodeCount: 4 }, credentials: { name: 'ext-access-keys', namespace: 'tns' } },
      },
    },
    {
      name: 'annotations, placement without its empty keys, cluster domain and named credentials (namespace defaulted)',
      mr: store({
        annotations: { a: 'b' },
        placement: { all: { tolerations: null } as never, zone: { nodeAffinity: { x: 1 } } },
        clusterDomain: 'corp.local',
        credentials: { name: 'keys' },
      }),
      want: {
        apiVersion: 'minio.rook.io/v1alpha1',
        kind: 'ObjectStore',
        metadata: { name: 'ext', namespace: 'tns' },
        spec: {
          scope: { nodeCount: 4 },
          annotations: { a: 'b' },
          placement: { all: {}, zone: { nodeAffinity: { x: 1 } } },
          credentials: { name: 'keys', namespace: 'tns' },
          clusterDomain: 'corp.local',
        },
      },
    },
    {
      name: 'credentials in another namespace',
      mr: store({ credentials: { name: 'keys', namespace: 'vault' } }),
      want: {
        apiVersion: 'minio.rook.io/v1alpha1',
        kind: 'ObjectStore',
        metadata: { name: 'ext', namespace: 'tns' },
        spec: { scope: { nodeCount: 4 }, credentials: { name: 'keys', namespace: 'vault' } },
      },
    },
  ];
  it.each(cases)('$name', ({ mr, want }) => {
    expect(minioObjectStore.desired(mr, 'ext', testContext)).toEqual(want);
  });
});

describe('Rook MinIO: lateInitialize', () => {
  const observed = (credentials?: object): TargetObject => ({
    metadata: { name: 'ext', namespace: 'tns' },
    spec: { ...(credentials ? { credentials } : {}) },
  });
  const cases: { name: string; mr: ObjectStore; observed: TargetObject; changed: boolean; credentials?: object }[] = [
    {
      name: 'records the credentials the store uses when the spec has none',
      mr: store(),
      observed: observed({ name: 'ext-access-keys', namespace: 'tns' }),
      changed: true,
      credentials: { name: 'ext-access-keys', namespace: 'tns' },
    },
    {
      name: 'keeps credentials the spec names',
      mr: store({ credentials: { name: 'mine' } }),
      observed: observed({ name: 'other', namespace: 'tns' }),
      changed: false,
      credentials: { name: 'mine' },
    },
    { name: 'nothing to record when the store names none', mr: store(), observed: observed(), changed: false, credentials: undefined },
  ];
  it.each(cases)('$name', ({ mr, observed: o, changed, credentials }) => {
    expect(minioObjectStore.lateInitialize!(mr, o)).toBe(changed);
    expect(mr.spec.forProvider.credentials).toEqual(credentials);
  });
});

describe('Rook MinIO: companions', () => {
  const cases: {
    name: string;
    mr: ObjectStore;
    want: { type: ResourceType; name: string; namespace?: string; purpose: string; irreplaceable?: string }[];
  }[] = [
    {
      name: 'an access-keys Secret (never remade) and an endpoint Service, beside the store',
      mr: store(),
      want: [
        { type: Secrets, name: 'ext-access-keys', namespace: 'tns', purpose: 'access-keys Secret', irreplaceable: 'AccessKeysLost' },
        { type: Services, name: 'ext-s3', namespace: 'tns', purpose: 'endpoint Service' },
      ],
    },
    {
      name: 'the Secret where the credentials say',
      mr: store({ credentials: { name: 'keys', namespace: 'vault' } }),
      want: [
        { type: Secrets, name: 'keys', namespace: 'vault', purpose: 'access-keys Secret', irreplaceable: 'AccessKeysLost' },
        { type: Services, name: 'ext-s3', namespace: 'tns', purpose: 'endpoint Service' },
      ],
    },
  ];
  it.each(cases)('$name', ({ mr, want }) => {
    const companions = minioObjectStore.companions!(mr, 'ext', testContext);
    expect(
      companions.map((c) => ({
        type: c.type,
        name: c.name,
        namespace: c.namespace,
        purpose: c.purpose,
        ...(c.irreplaceable ? { irreplaceable: c.irreplaceable.reason } : {}),
      })),
    ).toEqual(want);
    for (const c of companions) expect(c.build().metadata).toMatchObject({ name: c.name, namespace: c.namespace });
  });

  it('builds strong random keys, different each time, and a Service that reaches only this store', () => {
    const [secret, service] = minioObjectStore.companions!(store(), 'ext', testContext);
    const built = secret!.build() as TargetObject & { data: Record<string, string> };
    expect(text(built.data.username)).toMatch(/^[A-Za-z0-9]{20}$/);
    expect(text(built.data.password)).toMatch(/^[A-Za-z0-9]{40}$/);
    expect((secret!.build() as typeof built).data.password).not.toBe(built.data.password);
    expect(service!.build().spec).toEqual({
      type: 'ClusterIP', // so an ExternalName put in its place is drift
      selector: { app: 'minio', objectstore: 'ext' },
      ports: [{ name: 's3', port: 9000, targetPort: 9000, protocol: 'TCP' }],
    });
  });

  it('names what an imported store brings (its keys) and what the operator makes for it', () => {
    const observed = { metadata: { name: 'ext', namespace: 'tns' }, spec: { credentials: { name: 'theirs' } } };
    expect(minioObjectStore.references!(observed)).toEqual([{ type: Secrets, name: 'theirs', namespace: 'tns' }]);
    expect(minioObjectStore.references!({ metadata: { name: 'ext', namespace: 'tns' }, spec: {} })).toEqual([]);
    expect(minioObjectStore.dependents!.map((d) => [d.type.kind, d.labelSelector(observed)])).toEqual([
      ['StatefulSet', 'app=minio,objectstore=ext'],
      ['Service', 'app=minio,objectstore=ext'],
    ]);
  });
});

describe('Rook MinIO: inspect', () => {
  const observed: TargetObject = { metadata: { name: 'ext', namespace: 'tns' } };
  const root = { metadata: { name: 'ext-access-keys', namespace: 'tns' }, data: { username: b64('root'), password: b64('rootpass') } };
  const user = { metadata: { name: 'ext-user', namespace: 'tns' }, data: { accessKey: b64('user'), secretKey: b64('pass') } };
  const job = (conditions: object[] = []) => ({ metadata: { name: 'ext-access-1', namespace: 'tns' }, status: { conditions } });
  const complete = job([{ type: 'Complete', status: 'True' }]);
  const sts = (readyReplicas?: number) => ({
    [`StatefulSet/tns/ext`]: { metadata: { name: 'ext' }, status: readyReplicas === undefined ? {} : { readyReplicas } },
  });
  const withBucket = store({}, { bucket: { name: 'app-b-1', access: 'ReadWrite' } });
  const endpoint = 'http://ext-s3.tns.svc.cluster.local:9000';
  const host = 'ext-s3.tns.svc.cluster.local';
  const userKeys = s3Keys(endpoint, { host: host, port: '9000' }, { user: 'user', pass: 'pass', bucket: 'app-b-1' });
  const cases: { name: string; mr?: ObjectStore; objects: Record<string, object>; job?: object; want: Inspection }[] = [
    {
      name: 'no StatefulSet yet: waiting for the operator; the endpoint, bucket and user known',
      objects: {},
      want: {
        ready: false,
        message: 'waiting for the MinIO operator to create StatefulSet tns/ext',
        connectionDetails: userKeys,
        atProvider: { namespace: 'tns', name: 'ext', endpoint, readyReplicas: 0 },
      },
    },
    {
      name: 'some servers ready',
      objects: sts(2),
      want: {
        ready: false,
        message: '2/4 MinIO servers ready',
        connectionDetails: userKeys,
        atProvider: { namespace: 'tns', name: 'ext', endpoint, readyReplicas: 2 },
      },
    },
    {
      name: 'a StatefulSet with no status yet counts none ready',
      objects: sts(),
      want: {
        ready: false,
        message: '0/4 MinIO servers ready',
        connectionDetails: userKeys,
        atProvider: { namespace: 'tns', name: 'ext', endpoint, readyReplicas: 0 },
      },
    },
    {
      name: 'every server ready, the access Job still running: waiting for it',
      objects: sts(4),
      job: job(),
      want: {
        ready: false,
        message: 'waiting for Job tns/ext-access-1 to make bucket app-b-1 and its user',
        connectionDetails: userKeys,
        atProvider: { namespace: 'tns', name: 'ext', endpoint, readyReplicas: 4 },
      },
    },
    {
      name: "every server ready and the access Job complete: Ready, with the bucket user's keys, never the root keys",
      objects: sts(4),
      job: complete,
      want: {
        ready: true,
        message: undefined,
        connectionDetails: userKeys,
        atProvider: { namespace: 'tns', name: 'ext', endpoint, readyReplicas: 4 },
      },
    },
    {
      name: "a store without a bucket (a platform team's shared store): the endpoint only, never the root keys",
      mr: store(),
      objects: sts(4),
      want: {
        ready: true,
        message: undefined,
        connectionDetails: s3Keys(endpoint, { host: host, port: '9000' }),
        atProvider: { namespace: 'tns', name: 'ext', endpoint, readyReplicas: 4 },
      },
    },
    {
      name: 'another cluster domain',
      mr: store({ clusterDomain: 'corp.local' }, { bucket: { name: 'app-b-1', access: 'ReadWrite' } }),
      objects: sts(4),
      job: complete,
      want: {
        ready: true,
        message: undefined,
        connectionDetails: s3Keys(
          'http://ext-s3.tns.svc.corp.local:9000',
          { host: 'ext-s3.tns.svc.corp.local', port: '9000' },
          { user: 'user', pass: 'pass', bucket: 'app-b-1' },
        ),
        atProvider: { namespace: 'tns', name: 'ext', endpoint: 'http://ext-s3.tns.svc.corp.local:9000', readyReplicas: 4 },
      },
    },
  ];
  const inspect = (mr: ObjectStore, objects: Record<string, object>, j?: object) =>
    minioObjectStore.inspect({
      client: {} as KubeClient,
      read: reader(objects),
      mr,
      observed,
      companions: [root, undefined, ...(mr.spec.bucket ? [user, j] : [])] as (TargetObject | undefined)[],
      credentials: { generation: 0, outstanding: [], due: [] },
      signal: new AbortController().signal,
    });
  it.each(cases)('$name', async ({ mr, objects, job: j, want }) => {
    expect(await inspect(mr ?? withBucket, objects, j)).toEqual(want);
  });

  it("a failed access Job: Synced=False with the Job controller's reason, never text the target wrote", async () => {
    const failed = job([{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded', message: 'secret=rootpass' }]);
    const err = await inspect(withBucket, sts(4), failed).catch((e: Error) => e);
    expect(err).toMatchObject({
      reason: 'BucketAccessFailed',
      message:
        "Job tns/ext-access-1 could not make bucket app-b-1 and its user: its pod failed every retry (BackoffLimitExceeded); its pod's log says why",
    });
  });
});

describe('Rook MinIO: configureObjectStore', () => {
  const claim: Claim = {
    apiVersion: 'storage.crossplane.io/v1alpha1',
    kind: 'Bucket',
    metadata: { name: 'bucket', namespace: 'app', uid: 'u' },
    spec: { classRef: { name: 'std' } },
  };
  const cls = (spec: Partial<ObjectStoreClass['spec']>): ObjectStoreClass =>
    ({
      apiVersion: 'minio.rook.crossplane.io/v1alpha1',
      kind: 'ObjectStoreClass',
      metadata: { name: 'gold', namespace: 'infra' },
      spec: { scope: { nodeCount: 4 }, providerRef: { name: 'p' }, reclaimPolicy: 'Delete', ...spec },
    }) as ObjectStoreClass;
  const labels = { 'crossplane.io/claim-namespace': 'app', 'crossplane.io/claim-name': 'bucket' };
  const made = (forProvider: object, targetNamespace: string, reclaimPolicy = 'Delete') => ({
    apiVersion: 'minio.rook.crossplane.io/v1alpha1',
    kind: 'ObjectStore',
    metadata: { name: 'app-bucket-xyz', labels },
    spec: {
      forProvider,
      targetNamespace,
      // The claim's own bucket: its namespace and name, and a digest of its uid (sha256("app/bucket/u")).
      bucket: { name: 'app-bucket-41a7cae1', access: 'ReadWrite' },
      reclaimPolicy,
      writeConnectionSecretToRef: { name: 'app-bucket-xyz' },
    },
  });
  const cases: { name: string; cls: ObjectStoreClass; want: object }[] = [
    {
      name: "the class's scope, keys of its own, in a namespace of its own",
      cls: cls({}),
      want: made(
        { scope: { nodeCount: 4 }, credentials: { name: 'app-bucket-xyz-access-keys', namespace: 'rook-minio-app-bucket-xyz' } },
        'rook-minio-app-bucket-xyz',
      ),
    },
    {
      name: "the class's namespace prefix",
      cls: cls({ namespacePrefix: 's3-' }),
      want: made(
        { scope: { nodeCount: 4 }, credentials: { name: 'app-bucket-xyz-access-keys', namespace: 's3-app-bucket-xyz' } },
        's3-app-bucket-xyz',
      ),
    },
    {
      name: "the class's target namespace, shared by its stores",
      cls: cls({ targetNamespace: 'stores', reclaimPolicy: 'Retain' }),
      want: made({ scope: { nodeCount: 4 }, credentials: { name: 'app-bucket-xyz-access-keys', namespace: 'stores' } }, 'stores', 'Retain'),
    },
    {
      // The design's sample names a namespace for its keys: root keys of many stores would share it.
      name: "never the class's credentials Secret, nor its namespace",
      cls: cls({ credentials: { name: 'shared', namespace: 'keys' } }),
      want: made(
        { scope: { nodeCount: 4 }, credentials: { name: 'app-bucket-xyz-access-keys', namespace: 'rook-minio-app-bucket-xyz' } },
        'rook-minio-app-bucket-xyz',
      ),
    },
    {
      name: 'annotations and cluster domain carried, a placement of empty keys dropped',
      cls: cls({ annotations: { a: 'b' }, clusterDomain: 'corp.local', placement: { all: null } as never, targetNamespace: 'stores' }),
      want: made(
        {
          scope: { nodeCount: 4 },
          annotations: { a: 'b' },
          clusterDomain: 'corp.local',
          credentials: { name: 'app-bucket-xyz-access-keys', namespace: 'stores' },
        },
        'stores',
      ),
    },
    {
      name: 'an allowed namespace',
      cls: cls({ allowedNamespaces: ['app'], targetNamespace: 'stores' }),
      want: made({ scope: { nodeCount: 4 }, credentials: { name: 'app-bucket-xyz-access-keys', namespace: 'stores' } }, 'stores'),
    },
  ];
  it.each(cases)('$name', ({ cls: c, want }) => {
    expect(configureObjectStore(claim, c, 'app-bucket-xyz')).toEqual(want);
  });

  it('refuses a claim from a namespace the class does not allow', () => {
    expect(() => configureObjectStore(claim, cls({ allowedNamespaces: ['other'] }), 'x')).toThrow(
      expect.objectContaining({
        reason: 'NamespaceNotAllowed',
        message: 'ObjectStoreClass infra/gold does not allow claims from namespace app (allowed: other)',
      }),
    );
  });
});
