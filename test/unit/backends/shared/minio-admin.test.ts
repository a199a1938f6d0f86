// A bucket and its user in a MinIO store (src/backends/shared/minio-admin.ts, bucket.ts), as pure functions: the
// policy each mode gets, the Job that applies it (the root Secret mounted, never read by us), names
// that fit, keys derived once and the same every time, and how a class's claim finds its shared store.
import type { ObjectKey } from '../../../../src/kit/kube/object-key.ts';
import { describe, expect, it } from '@jest/globals';
import type { MinioBucketClass } from '../../../../src/backends/minio-bucket/api.ts';
import {
  accessJob,
  bucketUserCompanions,
  type AccessMode,
  revokeTeardown,
  userKeys,
  type BucketUser,
} from '../../../../src/backends/shared/minio-admin.ts';
import { policyDocument } from '../../../../src/backends/shared/s3-policy.ts';
import { configureMinioBucket as configureIn, minioGrantors as grantorsIn } from '../../../../src/backends/minio-bucket/bucket.ts';
import { tenantAccess } from '../../../../src/backends/minio-operator/tenant.ts';
import { objectStoreAccess } from '../../../../src/backends/rook-minio/objectstore.ts';
import type { Claim, Lookup } from '../../../../src/runtime/claims/claim.ts';
import type { TargetObject } from '../../../../src/runtime/native/kind.ts';
import { bucketNameFor } from '../../../../src/backends/shared/s3-names.ts';
import { testContext } from '../../../kit/kind-context.ts';
import { testBucketUser } from '../../../kit/bucket-user.ts';

const user = testBucketUser;

type Container = {
  env: { name: string; value?: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }[];
  command: string[];
};
const container = (job: TargetObject): Container =>
  (job.spec as { template: { spec: { containers: Container[] } } }).template.spec.containers[0]!;

describe('the bucket user policy', () => {
  it.each([
    [
      'ReadWrite',
      ['s3:ListBucket', 's3:GetBucketLocation', 's3:ListBucketMultipartUploads'],
      ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'],
    ],
    ['ReadOnly', ['s3:ListBucket', 's3:GetBucketLocation'], ['s3:GetObject']],
    ['WriteOnly', ['s3:GetBucketLocation', 's3:ListBucketMultipartUploads'], ['s3:PutObject']],
  ] as [AccessMode, string[], string[]][])('%s reaches its one bucket and nothing else', (mode, bucketActions, objectActions) => {
    const doc = policyDocument('app-b-1', mode) as { Statement: { Action: string[]; Resource: string[] }[] };
    expect(doc.Statement.map((s) => s.Resource)).toEqual([['arn:aws:s3:::app-b-1'], ['arn:aws:s3:::app-b-1/*']]);
    expect(doc.Statement[0]!.Action).toEqual(bucketActions);
    expect(doc.Statement[1]!.Action).toEqual(expect.arrayContaining([...objectActions]));
    if (mode !== 'ReadWrite') expect(doc.Statement[1]!.Action).not.toContain('s3:DeleteObject');
    if (mode === 'ReadOnly') expect(doc.Statement[1]!.Action).not.toContain('s3:PutObject');
    if (mode === 'WriteOnly') expect(doc.Statement[1]!.Action).not.toContain('s3:GetObject');
  });
});

describe('the user Secret and the access Job', () => {
  it('holds the keys and policy; the Job reads the root user from its Secret in the target, never from us', () => {
    const [secret, job] = bucketUserCompanions(user());
    const built = secret!.build() as TargetObject & { data: Record<string, string> };
    expect(secret!.name).toBe('store-user');
    expect(Buffer.from(built.data.accessKey!, 'base64').toString()).toBe('AK');
    expect(JSON.parse(Buffer.from(built.data['policy.json']!, 'base64').toString())).toEqual(policyDocument('app-b-1', 'ReadWrite'));
    const c = container(job!.build());
    const env = Object.fromEntries(c.env.map((e) => [e.name, e.value ?? e.valueFrom?.secretKeyRef]));
    expect(env).toMatchObject({
      S3_ENDPOINT: 'http://store-s3.tns.svc.cluster.local:9000',
      BUCKET: 'app-b-1',
      OWNS_BUCKET: 'true',
      ROOT_USER: { name: 'store-access-keys', key: 'username' },
      ROOT_PASSWORD: { name: 'store-access-keys', key: 'password' },
      USER_SECRET_KEY: { name: 'store-user', key: 'secretKey' },
    });
    // No secret value is in the Job itself.
    expect(JSON.stringify(job!.build())).not.toContain('SK-secret');
  });

  it("a Tenant's root user comes from its mounted config.env", () => {
    const job = accessJob(user({ root: { name: 't-env-configuration', format: 'config.env' } })).build();
    const spec = (job.spec as { template: { spec: { volumes: { name: string; secret?: { secretName: string } }[] } } }).template.spec;
    expect(spec.volumes.find((v) => v.name === 'root-env')?.secret?.secretName).toBe('t-env-configuration');
    expect(container(job).env.find((e) => e.name === 'ROOT_ENV_FILE')?.value).toBe('/root-env/config.env');
  });

  it('a new secret key or policy makes a new Job (its template cannot change); the same inputs the same Job', () => {
    const name = (u: BucketUser) => accessJob(u).name;
    expect(name(user())).toBe(name(user()));
    expect(name(user({ keys: { accessKey: 'AK', secretKey: 'other' } }))).not.toBe(name(user()));
    expect(name(user({ access: 'ReadOnly' }))).not.toBe(name(user()));
    const long = user({ base: 'x'.repeat(80) });
    for (const c of [...bucketUserCompanions(long), revokeTeardown(long, false).object]) expect(c.name.length).toBeLessThanOrEqual(63);
  });

  it('a bucket without features keeps the Job it had before features existed (no Job runs again on upgrade)', () => {
    // The name an earlier release gave this user's Job: its spec, policy and keys are unchanged.
    expect(accessJob(user()).name).toBe('store-access-cb47460fb3');
    expect(container(accessJob(user()).build()).command[2]).not.toContain('mc version');
  });

  it("applies the owner's features: lock when the bucket is made, versioning, a default retention, a quota, lifecycle rules from the Secret", () => {
    const features = {
      versioning: 'Enabled' as const,
      objectLock: true,
      defaultRetention: { mode: 'Governance' as const, days: 30 },
      quota: { size: '10Gi' },
      lifecycle: {
        rules: [
          { id: 'logs', prefix: 'logs/', expirationDays: 7 },
          { id: 'old', noncurrentVersionExpirationDays: 2 },
        ],
      },
    };
    const [secret, job] = bucketUserCompanions(user({ features }));
    const built = job!.build();
    const env = Object.fromEntries(container(built).env.map((e) => [e.name, e.value]));
    expect(env).toMatchObject({
      OBJECT_LOCK: 'true',
      VERSIONING: 'Enabled',
      RETENTION_MODE: 'GOVERNANCE',
      RETENTION_DAYS: '30',
      QUOTA: '10GiB',
      LIFECYCLE: 'true',
    });
    const script = container(built).command[2]!;
    // The bucket is made with its lock before the user's steps make it without.
    expect(script.indexOf('--with-lock')).toBeGreaterThan(-1);
    expect(script.indexOf('--with-lock')).toBeLessThan(
      script.lastIndexOf('then mc mb --ignore-existing "store/$BUCKET"; fi\n# mc before 2023 names these "policy add"'),
    );
    const data = (secret!.build() as TargetObject & { data: Record<string, string> }).data;
    expect(JSON.parse(Buffer.from(data['lifecycle.json']!, 'base64').toString())).toEqual({
      Rules: [
        { ID: 'logs', Status: 'Enabled', Filter: { Prefix: 'logs/' }, Expiration: { Days: 7 } },
        { ID: 'old', Status: 'Enabled', Filter: { Prefix: '' }, NoncurrentVersionExpiration: { NoncurrentDays: 2 } },
      ],
    });
    // The user reaches its versions and locks, never to bypass one.
    const policy = Buffer.from(data['policy.json']!, 'base64').toString();
    expect(policy).toContain('s3:GetObjectVersion');
    expect(policy).not.toContain('Bypass');
    // A change of rules, read from the Secret, makes a new Job; a grant has no features to apply.
    const other = { ...features, lifecycle: { rules: [{ id: 'logs', expirationDays: 8 }] } };
    expect(accessJob(user({ features: other })).name).not.toBe(job!.name);
    expect(accessJob(user({ features })).name).not.toBe(accessJob(user()).name);
  });

  it('derives the keys once per owner: the same every time, different for another owner, letters and digits', () => {
    const a = userKeys(testContext, 'miniobuckets/uid-1');
    expect(userKeys(testContext, 'miniobuckets/uid-1')).toEqual(a);
    expect(userKeys(testContext, 'miniobuckets/uid-2').secretKey).not.toBe(a.secretKey);
    expect(a.accessKey).toMatch(/^[A-Za-z0-9]{20}$/);
    expect(a.secretKey).toMatch(/^[A-Za-z0-9]{40}$/);
  });
});

describe('the revoke Job outcome', () => {
  const t = revokeTeardown(user(), false);
  const job = (conditions: object[]) => ({ metadata: { name: 'store-revoke' }, status: { conditions } }) as TargetObject;
  it.each([
    ['running', [], { done: false, message: 'waiting for Job tns/store-revoke to remove the user of bucket app-b-1' }],
    ['complete', [{ type: 'Complete', status: 'True' }], { done: true }],
    [
      'failed by its FailJob rule: the bucket holds objects and was kept',
      [{ type: 'Failed', status: 'True', reason: 'PodFailurePolicy' }],
      {
        done: true,
        kept: 'bucket app-b-1 still holds objects or versions of them, so it was kept with them (its user was removed). Empty it and delete it by hand, or let the class delete objects',
      },
    ],
    [
      'failed otherwise: the target wrote nothing we echo',
      [{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded', message: '<script>' }],
      { failed: "its pod failed every retry (BackoffLimitExceeded); its pod's log says why" },
    ],
  ])('%s', (_name, conditions, want) => {
    expect(t.outcome(job(conditions))).toEqual(want);
  });
});

describe('bucket names', () => {
  const claim = ({ namespace, name }: Required<ObjectKey>, uid = 'u') => ({ metadata: { namespace, name, uid } });
  const valid = /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;
  it.each([
    ['a short claim', claim({ namespace: 'app', name: 'data' }), 'app-data-'],
    ['dots in the name become dashes', claim({ namespace: 'app', name: 'my.data' }), 'app-my-data-'],
    ['a long name is cut, the digest kept', claim({ namespace: 'n'.repeat(63), name: 'c'.repeat(253) }), 'n'.repeat(54)],
    ['a namespace S3 would refuse as a start (xn--) gets one it takes', claim({ namespace: 'xn--app', name: 'data' }), 'b-xn--app-data-'],
    ['a start AWS keeps for itself (sthree-) too', claim({ namespace: 'sthree-x', name: 'data' }), 'b-sthree-x-data-'],
    ['a long name so started is still cut to 63', claim({ namespace: `xn--${'n'.repeat(59)}`, name: 'c' }), 'b-xn--'],
  ])('%s', (_n, c, prefix) => {
    const name = bucketNameFor(c);
    expect(name.startsWith(prefix)).toBe(true);
    expect(name).toMatch(valid);
    expect(name).not.toMatch(/^(xn--|sthree-|amzn-s3-demo-)|(-s3alias|--ol-s3)$/);
  });
  it('differs across namespaces and across claims that reuse a name', () => {
    expect(bucketNameFor(claim({ namespace: 'a-b', name: 'c' }))).not.toBe(bucketNameFor(claim({ namespace: 'a', name: 'b-c' })));
    expect(bucketNameFor(claim({ namespace: 'a', name: 'b' }, 'uid-1'))).not.toBe(
      bucketNameFor(claim({ namespace: 'a', name: 'b' }, 'uid-2')),
    );
  });
});

const stores = { ObjectStore: objectStoreAccess, Tenant: tenantAccess };
const configureMinioBucket = configureIn(stores);
const minioGrantors = grantorsIn(stores);

describe('configureMinioBucket', () => {
  const claim: Claim = {
    apiVersion: 'storage.crossplane.io/v1alpha1',
    kind: 'Bucket',
    metadata: { name: 'b', namespace: 'app', uid: 'u' },
    spec: {},
  };
  const cls: MinioBucketClass = {
    apiVersion: 'minio.crossplane.io/v1alpha1',
    kind: 'MinioBucketClass',
    metadata: { name: 'shared', namespace: 'infra' },
    spec: { store: { kind: 'ObjectStore', name: 'team' }, reclaimPolicy: 'Delete', deleteObjects: false },
  };
  const store = (ready: string, providerRef = true) => ({
    metadata: { name: 'team', namespace: 'infra' },
    spec: { forProvider: { scope: { nodeCount: 4 } }, targetNamespace: 'shared', ...(providerRef ? { providerRef: { name: 'p' } } : {}) },
    status: { conditions: [{ type: 'Ready', status: ready, message: ready === 'True' ? undefined : '2/4 MinIO servers ready' }] },
  });
  const lookup = (obj: object | undefined): Lookup => ({ get: <T>() => obj as T | undefined });

  it('puts the bucket in the store, on its Provider and in its namespace, with the class reclaim policy', () => {
    const mr = configureMinioBucket(claim, cls, 'app-b-x', lookup(store('True')));
    expect(mr.spec).toEqual({
      forProvider: {
        bucketName: bucketNameFor(claim),
        access: 'ReadWrite',
        ownsBucket: true,
        store: {
          kind: 'ObjectStore',
          name: 'team',
          endpoint: 'http://team-s3.shared.svc.cluster.local:9000',
          rootSecret: { name: 'team-access-keys', format: 'username-password' },
        },
        deleteObjects: false,
      },
      providerRef: { name: 'p' },
      targetNamespace: 'shared',
      reclaimPolicy: 'Delete',
      writeConnectionSecretToRef: { name: 'app-b-x' },
    });
  });

  it.each([
    [
      'a store that does not exist',
      undefined,
      'SharedStoreNotFound',
      'MinioBucketClass infra/shared shares ObjectStore infra/team, which does not exist',
    ],
    [
      'a store not Ready',
      store('False'),
      'SharedStoreNotReady',
      'MinioBucketClass infra/shared shares ObjectStore infra/team, which is not Ready: 2/4 MinIO servers ready; the bucket is made once it is',
    ],
  ])('refuses %s, saying why', (_n, found, reason, message) => {
    expect(() => configureMinioBucket(claim, cls, 'x', lookup(found))).toThrow(expect.objectContaining({ reason, message }));
  });

  it("grants a read-only user on a dedicated store's bucket, never owning it", () => {
    const grantor = minioGrantors.find((g) => g.managed.kind === 'ObjectStore')!;
    const dedicated = { ...store('True'), kind: 'ObjectStore', spec: { ...store('True').spec, bucket: { name: 'app-b-1' } } };
    const grant = grantor.grant(dedicated as never, 'ReadOnly', 'g') as unknown as {
      spec: { forProvider: Record<string, unknown>; reclaimPolicy: string };
    };
    expect(grant.spec.forProvider).toMatchObject({ bucketName: 'app-b-1', access: 'ReadOnly', ownsBucket: false, deleteObjects: false });
    expect(grant.spec.reclaimPolicy).toBe('Delete');
    expect(() => grantor.grant(store('True') as never, 'ReadOnly', 'g')).toThrow(expect.objectContaining({ reason: 'GrantsNotSupported' }));
  });

  it("lends no more than the lent resource's own user may do: a ReadOnly owner lends ReadOnly only", () => {
    const grantor = minioGrantors.find((g) => g.managed.kind === 'ObjectStore')!;
    const readOnly = {
      ...store('True'),
      kind: 'ObjectStore',
      spec: { ...store('True').spec, bucket: { name: 'app-b-1', access: 'ReadOnly' } },
    };
    expect(() => grantor.grant(readOnly as never, 'ReadWrite', 'g')).toThrow(
      expect.objectContaining({
        reason: 'AccessNotAllowed',
        message: 'ObjectStore infra/team has a ReadOnly user of its bucket: it lends ReadOnly only, not ReadWrite',
      }),
    );
    expect(grantor.grant(readOnly as never, 'ReadOnly', 'g').spec).toMatchObject({ forProvider: { access: 'ReadOnly' } });
    // A bucket in a shared store, whose own user only writes.
    const inShared = configureMinioBucket(
      { apiVersion: 'storage.crossplane.io/v1alpha1', kind: 'Bucket', metadata: { name: 'b', namespace: 'app', uid: 'u' }, spec: {} },
      { ...cls, spec: { ...cls.spec } },
      'app-b-x',
      lookup(store('True')),
    );
    inShared.spec.forProvider.access = 'WriteOnly';
    const bucketGrantor = minioGrantors.find((g) => g.managed.kind === 'MinioBucket')!;
    const lent = { ...inShared, metadata: { name: 'app-b-x', namespace: 'infra' } };
    expect(() => bucketGrantor.grant(lent as never, 'ReadOnly', 'g')).toThrow(expect.objectContaining({ reason: 'AccessNotAllowed' }));
    expect(bucketGrantor.grant(lent as never, 'WriteOnly', 'g').spec).toMatchObject({ forProvider: { access: 'WriteOnly' } });
  });
});
