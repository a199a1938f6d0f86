// The Rook Ceph backend's pure functions, table-driven (crossplane-runtime's reconciler_modern_test.go
// style): the target ObjectBucketClaim, readiness and connection details from what the bucket
// provisioner wrote for it (and only for it), and how a CephBucketClass configures a CephBucket.
import { testContext } from '../../../kit/kind-context.ts';
import type { ObjectKey } from '../../../../src/kit/kube/object-key.ts';
import { describe, expect, it } from '@jest/globals';
import type { CephBucket, CephBucketClass } from '../../../../src/backends/rook-ceph/api.ts';
import { cephBucket, configureCephBucket, rookCeph } from '../../../../src/backends/rook-ceph/bucket.ts';
import { featuresFor } from '../../../../src/runtime/claims/features.ts';
import type { Claim } from '../../../../src/runtime/claims/claim.ts';
import type { KubeClient, KubeObjectLike } from '../../../../src/kit/kube/client.ts';
import type { ResourceType } from '../../../../src/kit/kube/resources.ts';
import type { Inspection, TargetObject } from '../../../../src/runtime/native/kind.ts';
import { s3Keys } from '../../../kit/s3-keys.ts';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

function bucket(forProvider: Partial<CephBucket['spec']['forProvider']> = {}): CephBucket {
  return {
    apiVersion: 'ceph.rook.crossplane.io/v1alpha1',
    kind: 'CephBucket',
    metadata: { name: 'mr', namespace: 'infra' },
    spec: {
      forProvider: { storageClassName: 'rook-ceph-bucket', ...forProvider },
      targetNamespace: 'buckets',
      providerRef: { name: 'p' },
      reclaimPolicy: 'Delete',
    },
  } as CephBucket;
}

describe('Rook Ceph: desired', () => {
  const obc = (spec: object): TargetObject => ({
    apiVersion: 'objectbucket.io/v1alpha1',
    kind: 'ObjectBucketClaim',
    metadata: { name: 'ext', namespace: 'buckets' },
    spec,
  });
  const cases: { name: string; mr: CephBucket; want: TargetObject }[] = [
    {
      name: "a generated bucket name, from the claim's name",
      mr: bucket(),
      want: obc({ storageClassName: 'rook-ceph-bucket', generateBucketName: 'ext' }),
    },
    {
      name: 'the bucket name asked for',
      mr: bucket({ bucketName: 'photos' }),
      want: obc({ storageClassName: 'rook-ceph-bucket', bucketName: 'photos' }),
    },
    {
      name: 'quotas as additional config',
      mr: bucket({ additionalConfig: { maxObjects: '1000', maxSize: '2G' } }),
      want: obc({
        storageClassName: 'rook-ceph-bucket',
        generateBucketName: 'ext',
        additionalConfig: { maxObjects: '1000', maxSize: '2G' },
      }),
    },
    {
      name: "the claim's quota as maxSize",
      mr: bucket({ features: { quota: { size: '500Mi' } } }),
      want: obc({ storageClassName: 'rook-ceph-bucket', generateBucketName: 'ext', additionalConfig: { maxSize: '500Mi' } }),
    },
    {
      name: "the claim's quota, below the class's maxSize",
      mr: bucket({ additionalConfig: { maxObjects: '1000', maxSize: '2G' }, features: { quota: { size: '1Gi' } } }),
      want: obc({
        storageClassName: 'rook-ceph-bucket',
        generateBucketName: 'ext',
        additionalConfig: { maxObjects: '1000', maxSize: '1Gi' },
      }),
    },
    {
      name: "the class's maxSize, when the claim's quota is above it (the smaller holds)",
      mr: bucket({ additionalConfig: { maxSize: '2G' }, features: { quota: { size: '2Gi' } } }),
      want: obc({ storageClassName: 'rook-ceph-bucket', generateBucketName: 'ext', additionalConfig: { maxSize: '2G' } }),
    },
  ];
  it.each(cases)('$name', ({ mr, want }) => {
    expect(cephBucket.desired(mr, 'ext', testContext)).toEqual(want);
  });

  it('makes no companions (the provisioner writes the keys) and initializes nothing late', () => {
    expect(cephBucket.companions).toBeUndefined();
    expect(cephBucket.lateInitialize).toBeUndefined();
  });
});

describe('Rook Ceph: inspect', () => {
  const uid = 'obc-uid';
  const mine = [{ apiVersion: 'objectbucket.io/v1alpha1', kind: 'ObjectBucketClaim', name: 'ext', uid, controller: true }];
  const theirs = [{ ...mine[0]!, uid: 'someone-else' }];
  const secret = (owners = mine, data = { AWS_ACCESS_KEY_ID: b64('key'), AWS_SECRET_ACCESS_KEY: b64('secret') }) => ({
    metadata: { name: 'ext', namespace: 'buckets', ownerReferences: owners },
    data,
  });
  // The provisioner's ObjectBucket (cluster-scoped), naming the claim back by uid.
  const objectBucket = (
    endpoint: Record<string, unknown> = { bucketHost: 'rgw.rook-ceph.svc', bucketPort: 80, bucketName: 'ext-1234' },
    claimUid = uid,
  ) => ({
    metadata: { name: 'obc-buckets-ext' },
    spec: { claimRef: { namespace: 'buckets', name: 'ext', uid: claimUid }, endpoint },
  });
  // A ConfigMap beside the claim, as a tenant of the namespace could write it: never read.
  const hostile = {
    metadata: { name: 'ext', namespace: 'buckets', ownerReferences: mine },
    data: { BUCKET_HOST: 'exfil.intruder.example', BUCKET_PORT: '80', BUCKET_NAME: 'theirs' },
  };
  const written = (s?: object, ob?: object) => ({
    'ConfigMap/buckets/ext': hostile,
    ...(s ? { 'Secret/buckets/ext': s } : {}),
    ...(ob ? { 'ObjectBucket/undefined/obc-buckets-ext': ob } : {}),
  });
  const at = { namespace: 'buckets', name: 'ext' };
  const waiting = "waiting for the provisioner's ObjectBucket and Secret for this claim";
  const cases: { name: string; phase?: string; objects?: Record<string, object>; want: Inspection }[] = [
    {
      name: 'not seen by a provisioner yet',
      want: {
        ready: false,
        atProvider: at,
        message: "not yet seen by a bucket provisioner: is the StorageClass Rook's, and is Rook running?",
      },
    },
    {
      name: 'Pending',
      phase: 'Pending',
      want: { ready: false, atProvider: { ...at, phase: 'Pending' }, message: 'ObjectBucketClaim is Pending' },
    },
    {
      name: 'another phase: not Bound',
      phase: 'Failed',
      want: { ready: false, atProvider: { ...at, phase: 'Failed' }, message: 'ObjectBucketClaim is not Bound' },
    },
    {
      name: 'Bound, nothing written yet',
      phase: 'Bound',
      objects: {},
      want: { ready: false, atProvider: { ...at, phase: 'Bound' }, message: waiting },
    },
    {
      name: 'Bound, only the Secret',
      phase: 'Bound',
      objects: written(secret()),
      want: { ready: false, atProvider: { ...at, phase: 'Bound' }, message: waiting },
    },
    {
      name: 'Bound, a Secret written for another claim: not read',
      phase: 'Bound',
      objects: written(secret(theirs), objectBucket()),
      want: { ready: false, atProvider: { ...at, phase: 'Bound' }, message: waiting },
    },
    {
      name: 'Bound, an ObjectBucket naming another claim: not read',
      phase: 'Bound',
      objects: written(secret(), objectBucket(undefined, 'someone-else')),
      want: { ready: false, atProvider: { ...at, phase: 'Bound' }, message: waiting },
    },
    {
      name: "Bound, both written for it: Ready, with the ObjectBucket's endpoint and bucket (never the ConfigMap's) and the keys",
      phase: 'Bound',
      objects: written(secret(), objectBucket()),
      want: {
        ready: true,
        message: undefined,
        connectionDetails: s3Keys(
          'http://rgw.rook-ceph.svc:80',
          { host: 'rgw.rook-ceph.svc', port: '80' },
          { user: 'key', pass: 'secret', bucket: 'ext-1234' },
        ),
        atProvider: { ...at, phase: 'Bound', bucketName: 'ext-1234', endpoint: 'http://rgw.rook-ceph.svc:80' },
      },
    },
    {
      name: 'port 443 is https',
      phase: 'Bound',
      objects: written(secret(), objectBucket({ bucketHost: 'rgw', bucketPort: 443, bucketName: 'b' })),
      want: {
        ready: true,
        message: undefined,
        connectionDetails: s3Keys('https://rgw:443', { host: 'rgw', port: '443' }, { user: 'key', pass: 'secret', bucket: 'b' }),
        atProvider: { ...at, phase: 'Bound', bucketName: 'b', endpoint: 'https://rgw:443' },
      },
    },
    {
      name: 'no port: 80',
      phase: 'Bound',
      objects: written(secret(), objectBucket({ bucketHost: 'rgw', bucketName: 'b' })),
      want: {
        ready: true,
        message: undefined,
        connectionDetails: s3Keys('http://rgw:80', { host: 'rgw', port: '80' }, { user: 'key', pass: 'secret', bucket: 'b' }),
        atProvider: { ...at, phase: 'Bound', bucketName: 'b', endpoint: 'http://rgw:80' },
      },
    },
    {
      name: 'no host: not ready, said',
      phase: 'Bound',
      objects: written(secret(), objectBucket({ bucketName: 'b' })),
      want: {
        ready: false,
        message: 'ObjectBucket obc-buckets-ext has no spec.endpoint.bucketHost',
        connectionDetails: {},
        atProvider: { ...at, phase: 'Bound', bucketName: 'b' },
      },
    },
    {
      name: 'no secret key: not ready',
      phase: 'Bound',
      objects: written(secret(mine, { AWS_ACCESS_KEY_ID: b64('key') } as never), objectBucket()),
      want: {
        ready: false,
        message: undefined,
        connectionDetails: s3Keys(
          'http://rgw.rook-ceph.svc:80',
          { host: 'rgw.rook-ceph.svc', port: '80' },
          { user: undefined, pass: undefined, bucket: 'ext-1234' },
        ),
        atProvider: { ...at, phase: 'Bound', bucketName: 'ext-1234', endpoint: 'http://rgw.rook-ceph.svc:80' },
      },
    },
  ];
  it.each(cases)('$name', async ({ phase, objects = {}, want }) => {
    const observed: TargetObject = {
      metadata: { name: 'ext', namespace: 'buckets', uid },
      spec: { objectBucketName: 'obc-buckets-ext' },
      ...(phase ? { status: { phase } } : {}),
    };
    const read = {
      get: async <T extends KubeObjectLike>(type: ResourceType, { namespace, name }: ObjectKey) =>
        objects[`${type.kind}/${namespace}/${name}`] as T | undefined,
    };
    expect(
      await cephBucket.inspect({
        client: {} as KubeClient,
        read,
        mr: bucket(),
        observed,
        companions: [],
        credentials: { generation: 0, outstanding: [], due: [] },
        signal: new AbortController().signal,
      }),
    ).toEqual(want);
  });
});

describe('Rook Ceph: configureCephBucket', () => {
  const claim: Claim = {
    apiVersion: 'storage.crossplane.io/v1alpha1',
    kind: 'Bucket',
    metadata: { name: 'bucket', namespace: 'app', uid: 'u' },
    spec: { classRef: { name: 'std' } },
  };
  const cls = (spec: Partial<CephBucketClass['spec']>): CephBucketClass =>
    ({
      apiVersion: 'ceph.rook.crossplane.io/v1alpha1',
      kind: 'CephBucketClass',
      metadata: { name: 'gold', namespace: 'infra' },
      spec: {
        storageClassName: 'rook-ceph-bucket',
        providerRef: { name: 'p' },
        reclaimPolicy: 'Delete',
        targetNamespace: 'rook-ceph-buckets',
        ...spec,
      },
    }) as CephBucketClass;
  const made = (forProvider: object, targetNamespace = 'rook-ceph-buckets', reclaimPolicy = 'Delete') => ({
    apiVersion: 'ceph.rook.crossplane.io/v1alpha1',
    kind: 'CephBucket',
    metadata: { name: 'app-bucket-xyz', labels: { 'crossplane.io/claim-namespace': 'app', 'crossplane.io/claim-name': 'bucket' } },
    spec: { forProvider, targetNamespace, reclaimPolicy, writeConnectionSecretToRef: { name: 'app-bucket-xyz' } },
  });
  const cases: { name: string; cls: CephBucketClass; want: object }[] = [
    { name: "the class's StorageClass, a bucket name left to Rook", cls: cls({}), want: made({ storageClassName: 'rook-ceph-bucket' }) },
    {
      name: 'quotas, target namespace and reclaim policy',
      cls: cls({ additionalConfig: { maxSize: '2G' }, targetNamespace: 'obcs', reclaimPolicy: 'Retain' }),
      want: made({ storageClassName: 'rook-ceph-bucket', additionalConfig: { maxSize: '2G' } }, 'obcs', 'Retain'),
    },
    { name: 'an allowed namespace', cls: cls({ allowedNamespaces: ['app'] }), want: made({ storageClassName: 'rook-ceph-bucket' }) },
  ];
  it.each(cases)('$name', ({ cls: c, want }) => {
    expect(configureCephBucket(claim, c, 'app-bucket-xyz')).toEqual(want);
  });

  it('refuses a claim from a namespace the class does not allow', () => {
    expect(() => configureCephBucket(claim, cls({ allowedNamespaces: ['ops'] }), 'x')).toThrow(
      expect.objectContaining({
        reason: 'NamespaceNotAllowed',
        message: 'CephBucketClass infra/gold does not allow claims from namespace app (allowed: ops)',
      }),
    );
  });
});

describe('Rook Ceph: bucket features', () => {
  const cls = (additionalConfig?: object) =>
    ({
      metadata: { name: 'ceph', namespace: 'infra' },
      spec: { storageClassName: 'x', ...(additionalConfig ? { additionalConfig } : {}) },
    }) as CephBucketClass;
  const claim = (features: object) => ({ metadata: { name: 'c', namespace: 'app' }, spec: { features } }) as unknown as Claim;

  it("takes a quota, within the class's own maxSize, and refuses what Rook does not take, naming the field", () => {
    const support = rookCeph.features!;
    expect(featuresFor(claim({ quota: { size: '1Gi' } }), cls({ maxSize: '2G' }), support)).toEqual({ quota: { size: '1Gi' } });
    expect(() => featuresFor(claim({ quota: { size: '2Gi' } }), cls({ maxSize: '2G' }), support)).toThrow(
      'spec.features.quota.size: 2Gi is more than class CephBucketClass infra/ceph allows (additionalConfig.maxSize 2G)',
    );
    expect(() => featuresFor(claim({ versioning: 'Enabled' }), cls(), support)).toThrow(
      /^spec\.features\.versioning: .* it supports quota$/,
    );
  });
});
