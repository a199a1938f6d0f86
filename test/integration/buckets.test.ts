// Buckets in shared stores, proven against real S3 servers: a platform team runs one Rook MinIO
// ObjectStore and one MinIO Tenant, each with a MinioBucketClass; app claims get a bucket each and a
// user whose policy reaches only it, and the stores' root credentials never reach the control cluster.
// The target is a cluster of this file's own, so only its stand-ins (with S3) play the Jobs there.
import { applyObject } from '../kit/manifests.ts';
import type { ObjectKey } from '../../src/kit/kube/object-key.ts';
import { beforeAll, describe, expect, it } from '@jest/globals';
import {
  DeleteObjectCommand,
  GetBucketLifecycleConfigurationCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { BucketAccesses, BucketClasses, Buckets } from '../../src/app.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { Bucket } from '../../src/apis/storage.ts';
import type { KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Jobs, Secrets, type ResourceType } from '../../src/kit/kube/resources.ts';
import { objectStoreAccess, RookObjectStores } from '../../src/backends/rook-minio/objectstore.ts';
import type { ObjectStore } from '../../src/backends/rook-minio/api.ts';
import { accessJob, LABEL_ADMIN, userSecret, type BucketUser } from '../../src/backends/shared/minio-admin.ts';
import { resolveS3Endpoint } from '../fakes/s3-stores.ts';
import { secretText } from '../../src/runtime/providers/credentials.ts';
import { eventsFor } from '../kit/provider.ts';
import { answersIn, refusal, roundTrip, s3Client } from '../kit/s3.ts';
import { FakeMinioOperator } from '../fakes/fake-minio-operator.ts';
import { operatorStandIns } from '../fakes/backends.ts';
import { eventually } from '../kit/eventually.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { ANNOTATION_PAUSED } from '../../src/kit/meta.ts';
import { boundBucket, bucketClaim, claimAccess, refusedBucket } from '../kit/claims.ts';
import { cond } from '../kit/conditions.ts';

const TARGET = `it-buckets-${process.pid}`;
type Obj = KubeObjectLike & { spec?: Record<string, unknown>; data?: Record<string, string>; status?: { conditions?: Cond[] } };
type Cond = { type: string; status: string; reason: string; message?: string };

let rookStandIn: FakeMinioOperator;
const env = withProviderRook({
  cluster: TARGET,
  namespaces: { platform: 'bk-infra', appA: 'bk-a', appB: 'bk-b', appIdn: 'xn--bk' },
  provider: { name: 't', in: 'platform' },
  operators: ['rook-minio', 'minio-operator'],
  standIns: (t) => [(rookStandIn = new FakeMinioOperator(t, { s3: true })), operatorStandIns['minio-operator']!.make(t, { s3: true })],
  admission: true,
  timeoutMs: 180_000,
  before: async () => {
    // The platform team's stores, made for no claim, and a class of buckets in each.
    for (const s of stores) {
      await apply(s.type, { namespace: env.ns.platform, name: s.name }, { ...s.spec, providerRef: { name: 't' } });
      await apply(kinds.MinioBucketClass, { namespace: env.ns.platform, name: s.name }, { store: { kind: s.kind, name: s.name } });
    }
    await apply(
      kinds.MinioBucketClass,
      { namespace: env.ns.platform, name: 'missing' },
      { store: { kind: 'ObjectStore', name: 'no-such-store' } },
    );
    await apply(
      kinds.MinioBucketClass,
      { namespace: env.ns.platform, name: 'purge-rook' },
      {
        store: { kind: 'ObjectStore', name: 'shared-rook' },
        deleteObjects: true,
      },
    );
    // One store per claim, for the scan of Secrets in both modes.
    await apply(
      kinds.ObjectStoreClass,
      { namespace: env.ns.platform, name: 'dedicated' },
      {
        scope: { nodeCount: 4 },
        providerRef: { name: 't' },
        targetNamespace: 'dedicated',
      },
    );
    for (const ns of [env.ns.appA, env.ns.appB, env.ns.appIdn]) {
      for (const [name, kind] of [
        ...stores.map((s) => [s.name, kinds.MinioBucketClass] as const),
        ['missing', kinds.MinioBucketClass] as const,
        ['purge-rook', kinds.MinioBucketClass] as const,
        ['dedicated', kinds.ObjectStoreClass] as const,
      ]) {
        await apply(
          BucketClasses,
          { namespace: ns, name },
          { classRef: { apiVersion: kind.apiVersion, kind: kind.kind, name, namespace: env.ns.platform } },
          true,
        );
      }
    }
  },
});
/** A namespace whose name S3 would refuse as a bucket name's start. */

const pool = {
  name: 'pool-0',
  servers: 4,
  volumesPerServer: 1,
  volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
};

/** The two shared stores: where each keeps its root user in the target. */
const stores = [
  {
    kind: 'ObjectStore' as const,
    name: 'shared-rook',
    type: kinds.ObjectStore,
    spec: { forProvider: { scope: { nodeCount: 4 } }, targetNamespace: 'shared-rook' },
    root: async (): Promise<string[]> => {
      const s = secretText((await env.target.get<Obj>(Secrets, { namespace: 'shared-rook', name: 'shared-rook-access-keys' }))?.data);
      return [s.username!, s.password!];
    },
  },
  {
    kind: 'Tenant' as const,
    name: 'shared-tenant',
    type: kinds.Tenant,
    spec: { forProvider: { pools: [pool] }, targetNamespace: 'shared-tenant' },
    root: async (): Promise<string[]> => {
      const config = secretText(
        (await env.target.get<Obj>(Secrets, { namespace: 'shared-tenant', name: 'shared-tenant-env-configuration' }))?.data,
      )['config.env']!;
      return [...config.matchAll(/MINIO_ROOT_(?:USER|PASSWORD)="([^"]+)"/g)].map((m) => m[1]!);
    },
  },
];
const rootOf = async (kind: 'ObjectStore' | 'Tenant'): Promise<{ accessKey: string; secretKey: string }> => {
  const [accessKey, secretKey] = await stores.find((s) => s.kind === kind)!.root();
  return { accessKey: accessKey!, secretKey: secretKey! };
};

const claim = ({ namespace, name }: Required<ObjectKey>, className: string) => bucketClaim({ namespace, name }, className);
const bound = ({ namespace, name }: Required<ObjectKey>) => boundBucket(env.control, { namespace, name });
/** A claim's Secret, and its endpoint as an app in the target reaches it. */
const access = ({ namespace, name }: Required<ObjectKey>) => claimAccess(env.control, env.target, { namespace, name });

async function gone(type: ResourceType, { namespace, name }: Required<ObjectKey>): Promise<void> {
  await eventually(
    async () => (await env.control.get(type, { namespace, name })) === undefined,
    `${type.kind} ${namespace}/${name} to be gone`,
    60_000,
  );
}

/** Applies an object with this spec (or, `top`, these top-level fields). */
const apply = (type: ResourceType, key: Required<ObjectKey>, spec: object, top = false) =>
  applyObject(env.control, type, key, top ? spec : { spec });

describe.each(stores)('claims sharing one $kind', ({ kind, name: store }) => {
  it("each get a bucket of the store and a user that reaches only it: the server refuses A's keys in B's bucket", async () => {
    await env.control.create(Buckets, claim({ namespace: env.ns.appA, name: `a-${store}` }, store));
    await env.control.create(Buckets, claim({ namespace: env.ns.appB, name: `b-${store}` }, store));
    await bound({ namespace: env.ns.appA, name: `a-${store}` });
    await bound({ namespace: env.ns.appB, name: `b-${store}` });
    const a = await access({ namespace: env.ns.appA, name: `a-${store}` });
    const b = await access({ namespace: env.ns.appB, name: `b-${store}` });
    // One store: the same endpoint; two buckets, named from each claim.
    expect(a.keys.endpoint).toBe(b.keys.endpoint);
    expect(a.bucket).toMatch(new RegExp(`^${env.ns.appA}-a-${store}-[0-9a-f]{8}$`));
    expect(b.bucket).toMatch(new RegExp(`^${env.ns.appB}-b-${store}-[0-9a-f]{8}$`));
    expect(a.creds.accessKey).not.toBe(b.creds.accessKey);
    // Each claim's keys work in its own bucket...
    await roundTrip(a.local, a.creds, a.bucket);
    await roundTrip(b.local, b.creds, b.bucket);
    // ...and nowhere else: the real server judges provider-rook's policy.
    expect(await answersIn(a.local, a.creds, b.bucket)).toEqual({ put: 'AccessDenied', list: 'AccessDenied', get: 'AccessDenied' });
    // No claim's Secret holds the store's root user.
    const root = await rootOf(kind);
    expect([a.creds.accessKey, b.creds.accessKey]).not.toContain(root.accessKey);
  }, 120_000);

  it("deleting A removes A's user and bucket, and B keeps working", async () => {
    const a = await access({ namespace: env.ns.appA, name: `a-${store}` });
    const b = await access({ namespace: env.ns.appB, name: `b-${store}` });
    const mr = (await env.control.get<Bucket>(Buckets, { namespace: env.ns.appA, name: `a-${store}` }))!.spec.resourceRef!.name;
    await env.control.delete(Buckets, { namespace: env.ns.appA, name: `a-${store}` });
    await gone(Buckets, { namespace: env.ns.appA, name: `a-${store}` });
    await gone(kinds.MinioBucket, { namespace: env.ns.platform, name: mr });
    const root = s3Client(a.local, await rootOf(kind));
    const s3 = s3Client(a.local, a.creds);
    try {
      expect(await refusal(root.send(new HeadBucketCommand({ Bucket: a.bucket })))).toBe('NotFound');
      expect(await refusal(s3.send(new ListObjectsV2Command({ Bucket: b.bucket })))).toMatch(/InvalidAccessKeyId|AccessDenied/);
      expect(await refusal(s3.send(new PutObjectCommand({ Bucket: a.bucket, Key: 'x', Body: 'x' })))).toBe('InvalidAccessKeyId');
    } finally {
      root.destroy();
      s3.destroy();
    }
    await roundTrip(b.local, b.creds, b.bucket);
  }, 120_000);

  it("a claim whose user's Secret someone deleted in the target still has its user revoked when it goes", async () => {
    const name = `s-${store}`;
    await env.control.create(Buckets, claim({ namespace: env.ns.appA, name }, store));
    const mr = (await bound({ namespace: env.ns.appA, name })).spec.resourceRef!.name;
    const c = await access({ namespace: env.ns.appA, name });
    const at = { namespace: env.ns.platform, name: mr };
    const { targetNamespace } = (await env.control.get<{ spec: { targetNamespace: string } } & KubeObjectLike>(kinds.MinioBucket, at))!
      .spec;
    // Paused, it does not make the Secret again: the claim goes while the Secret is gone.
    await env.control.mergePatch(kinds.MinioBucket, at, { metadata: { annotations: { [ANNOTATION_PAUSED]: 'true' } } });
    await env.target.delete(Secrets, { namespace: targetNamespace, name: mr });
    await env.control.delete(Buckets, { namespace: env.ns.appA, name });
    await eventually(
      async () => Boolean((await env.control.get<Bucket>(kinds.MinioBucket, at))?.metadata.deletionTimestamp),
      'its resource to be deleting',
    );
    await env.control.mergePatch(kinds.MinioBucket, at, { metadata: { annotations: { [ANNOTATION_PAUSED]: null } } });
    await gone(kinds.MinioBucket, at);
    const s3 = s3Client(c.local, c.creds);
    try {
      expect(await refusal(s3.send(new PutObjectCommand({ Bucket: c.bucket, Key: 'x', Body: 'x' })))).toBe('InvalidAccessKeyId');
    } finally {
      s3.destroy();
    }
  }, 120_000);

  it('a bucket that still holds objects is kept with them when its claim goes; its user is revoked', async () => {
    const name = `c-${store}`;
    await env.control.create(Buckets, claim({ namespace: env.ns.appA, name }, store));
    const mr = (await bound({ namespace: env.ns.appA, name })).spec.resourceRef!.name;
    const c = await access({ namespace: env.ns.appA, name });
    const s3 = s3Client(c.local, c.creds);
    const root = s3Client(c.local, await rootOf(kind));
    try {
      await s3.send(new PutObjectCommand({ Bucket: c.bucket, Key: 'keep-me', Body: 'data' }));
      await env.control.delete(Buckets, { namespace: env.ns.appA, name });
      await gone(Buckets, { namespace: env.ns.appA, name });
      await gone(kinds.MinioBucket, { namespace: env.ns.platform, name: mr });
      const kept = await root.send(new GetObjectCommand({ Bucket: c.bucket, Key: 'keep-me' }));
      expect(await kept.Body!.transformToString()).toBe('data');
      expect(await refusal(s3.send(new GetObjectCommand({ Bucket: c.bucket, Key: 'keep-me' })))).toBe('InvalidAccessKeyId');
      const events = await eventsFor(env.control, { namespace: env.ns.platform, name: mr });
      expect(events.find((e) => e.reason === 'KeptInTarget')?.message).toContain(`bucket ${c.bucket} still holds objects`);
    } finally {
      s3.destroy();
      root.destroy();
    }
  }, 120_000);
});

describe('bucket features through the access Job', () => {
  const vault = {
    versioning: 'Enabled',
    objectLock: true,
    defaultRetention: { mode: 'Governance', days: 1 },
    quota: { size: '1Mi' },
    lifecycle: { rules: [{ id: 'logs', prefix: 'logs/', expirationDays: 7 }] },
  };
  const synced = ({ namespace, name }: Required<ObjectKey>) => refusedBucket(env.control, { namespace, name });

  it("versioning, object lock with a default retention, a quota and lifecycle rules, judged by the store's server", async () => {
    await env.control.create(Buckets, bucketClaim({ namespace: env.ns.appA, name: 'vault' }, 'shared-rook', { features: vault }));
    await bound({ namespace: env.ns.appA, name: 'vault' });
    const v = await access({ namespace: env.ns.appA, name: 'vault' });
    const s3 = s3Client(v.local, v.creds);
    try {
      // Versioning: two PUTs of one key leave two versions.
      await s3.send(new PutObjectCommand({ Bucket: v.bucket, Key: 'a.txt', Body: 'one' }));
      const second = await s3.send(new PutObjectCommand({ Bucket: v.bucket, Key: 'a.txt', Body: 'two' }));
      const versions = await s3.send(new ListObjectVersionsCommand({ Bucket: v.bucket, Prefix: 'a.txt' }));
      expect(versions.Versions?.length).toBe(2);
      // The default retention locks a version its writer did not lock: it cannot be deleted, and is still there.
      await expect(s3.send(new DeleteObjectCommand({ Bucket: v.bucket, Key: 'a.txt', VersionId: second.VersionId }))).rejects.toThrow();
      const still = await s3.send(new GetObjectCommand({ Bucket: v.bucket, Key: 'a.txt', VersionId: second.VersionId }));
      expect(await still.Body!.transformToString()).toBe('two');
    } finally {
      s3.destroy();
    }
    // The rules and the quota, as the store's root and its shell see them (no user's policy reads rules).
    const root = s3Client(v.local, await rootOf('ObjectStore'));
    try {
      const rules = (await root.send(new GetBucketLifecycleConfigurationCommand({ Bucket: v.bucket }))).Rules ?? [];
      expect(rules.map((r) => [r.ID, r.Expiration?.Days])).toEqual([['logs', 7]]);
    } finally {
      root.destroy();
    }
    const listing = await rookStandIn.shellAt(v.local, ['s3.bucket.list']);
    expect(listing).toMatch(new RegExp(`${v.bucket}\\b.*quota:${2 ** 20}\\b`));
  }, 120_000);

  it('a claim cannot turn object lock on later (MinIO turns it on only when it makes a bucket): the claim says so, naming the field', async () => {
    await env.control.create(
      Buckets,
      bucketClaim({ namespace: env.ns.appB, name: 'plain' }, 'shared-rook', { features: { versioning: 'Enabled' } }),
    );
    await bound({ namespace: env.ns.appB, name: 'plain' });
    await env.control.mergePatch(Buckets, { namespace: env.ns.appB, name: 'plain' }, { spec: { features: { objectLock: true } } });
    const refused = await synced({ namespace: env.ns.appB, name: 'plain' });
    expect([refused.reason, refused.message]).toEqual([
      'FeatureNotAllowed',
      expect.stringMatching(
        /^spec\.features\.objectLock cannot change after the bucket is made: MinIO turns object lock on only when it makes a bucket/,
      ),
    ]);
    // The claim is not stuck: its other features still reach its resource, whose object lock stays as made.
    await env.control.mergePatch(Buckets, { namespace: env.ns.appB, name: 'plain' }, { spec: { features: { quota: { size: '5Mi' } } } });
    const mr = (await env.control.get<Bucket>(Buckets, { namespace: env.ns.appB, name: 'plain' }))!.spec.resourceRef!.name;
    type Features = { quota?: { size: string }; objectLock?: boolean };
    const features = await eventually(
      async () => {
        const m = await env.control.get<Obj & { spec: { forProvider: { features?: Features } } }>(kinds.MinioBucket, {
          namespace: env.ns.platform,
          name: mr,
        });
        return m?.spec.forProvider.features?.quota?.size === '5Mi' ? m.spec.forProvider.features : undefined;
      },
      "the claim's new quota to reach its MinioBucket",
      30_000,
    );
    expect(features.objectLock ?? false).toBe(false);
  }, 90_000);
});

describe('deleting a claim whose bucket keeps versions', () => {
  /**
   * Binds a claim of `className` with `features`; `use` gets its bucket, an S3 client with its keys
   * and one with the store's root keys (both closed after).
   */
  async function withClaim(
    name: string,
    namespace: string,
    spec: { className: string; features: object },
    use: (bucket: string, s3: S3Client, root: S3Client) => Promise<void>,
  ): Promise<void> {
    await env.control.create(Buckets, bucketClaim({ namespace, name }, spec.className, { features: spec.features }));
    await bound({ namespace, name });
    const c = await access({ namespace, name });
    const [s3, root] = [s3Client(c.local, c.creds), s3Client(c.local, await rootOf('ObjectStore'))];
    try {
      await use(c.bucket, s3, root);
    } finally {
      s3.destroy();
      root.destroy();
    }
  }

  /** Deletes the claim and waits for it and its resource to go; the KeptInTarget Event's message. */
  async function deleteClaim({ namespace, name }: Required<ObjectKey>): Promise<string | undefined> {
    const mr = (await env.control.get<Bucket>(Buckets, { namespace, name }))!.spec.resourceRef!.name;
    await env.control.delete(Buckets, { namespace, name });
    await gone(Buckets, { namespace, name });
    await gone(kinds.MinioBucket, { namespace: env.ns.platform, name: mr });
    return (await eventsFor(env.control, { namespace: env.ns.platform, name: mr })).find((e) => e.reason === 'KeptInTarget')?.message;
  }

  it('a versioned bucket whose objects were all deleted still holds their versions: it is kept with them', async () => {
    const spec = { className: 'shared-rook', features: { versioning: 'Enabled' } };
    await withClaim('history', env.ns.appA, spec, async (bucket, s3, root) => {
      const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'a.txt', Body: 'one' }));
      await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'a.txt' }));
      expect((await s3.send(new ListObjectsV2Command({ Bucket: bucket }))).KeyCount ?? 0).toBe(0);
      expect(await deleteClaim({ namespace: env.ns.appA, name: 'history' })).toMatch(
        new RegExp(`^bucket ${bucket} still holds objects or versions of them`),
      );
      const kept = await root.send(new GetObjectCommand({ Bucket: bucket, Key: 'a.txt', VersionId: put.VersionId }));
      expect(await kept.Body!.transformToString()).toBe('one');
    });
  }, 120_000);

  it('a bucket under object lock that holds objects is kept even where the class deletes objects, and the claim still goes', async () => {
    const features = { versioning: 'Enabled', objectLock: true, defaultRetention: { mode: 'Governance', days: 1 } };
    await withClaim('ledger', env.ns.appB, { className: 'purge-rook', features }, async (bucket, s3, root) => {
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'entry', Body: 'locked' }));
      expect(await deleteClaim({ namespace: env.ns.appB, name: 'ledger' })).toMatch(
        new RegExp(`^bucket ${bucket} holds objects under object lock`),
      );
      const kept = await root.send(new GetObjectCommand({ Bucket: bucket, Key: 'entry' }));
      expect(await kept.Body!.transformToString()).toBe('locked');
    });
  }, 120_000);

  it('a versioned bucket is emptied of every version and removed where the class deletes objects', async () => {
    const spec = { className: 'purge-rook', features: { versioning: 'Enabled' } };
    await withClaim('scratch', env.ns.appB, spec, async (bucket, s3, root) => {
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'a.txt', Body: 'one' }));
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'a.txt', Body: 'two' }));
      await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: 'a.txt' }));
      expect(await deleteClaim({ namespace: env.ns.appB, name: 'scratch' })).toBeUndefined();
      expect(await refusal(root.send(new HeadBucketCommand({ Bucket: bucket })))).toBe('NotFound');
    });
  }, 120_000);
});

describe("the access Job reads the user's Secret", () => {
  it("a Job made before the Secret holds its lifecycle rules waits for them: the rules the server applies are the Job's", async () => {
    const store = await eventually(
      async () => {
        const s = await env.control.get<ObjectStore>(kinds.ObjectStore, { namespace: env.ns.platform, name: 'shared-rook' });
        return cond(s, 'Ready')?.status === 'True' ? s : undefined;
      },
      'the shared store to be Ready',
      60_000,
    );
    const at = objectStoreAccess(store)!;
    const rules = (days: number) => ({ lifecycle: { rules: [{ id: 'logs', prefix: 'logs/', expirationDays: days }] } });
    const u = (days: number): BucketUser => ({
      base: `late-secret-${process.pid}`,
      namespace: at.namespace,
      endpoint: at.endpoint,
      root: at.rootSecret,
      bucket: `late-secret-${process.pid}`,
      access: 'ReadWrite',
      ownsBucket: true,
      keys: { accessKey: 'LATESECRET0000000001', secretKey: 'late-secret-key-late-secret-key-0000000' },
      features: rules(days),
    });
    // The Secret still holds the rules of before (7 days) when the Job for the new ones (30) is made.
    await env.target.create(Secrets, userSecret(u(7)));
    const job = accessJob(u(30));
    await env.target.create(Jobs, job.build());
    type JobView = KubeObjectLike & { status?: { active?: number; conditions?: Cond[] } };
    await eventually(
      async () => ((await env.target.get<JobView>(Jobs, { namespace: at.namespace, name: job.name }))?.status?.active ?? 0) >= 1,
      'its pod to run (and wait, having read the old rules)',
      30_000,
    );
    await env.target.apply(Secrets, userSecret(u(30)));
    await eventually(
      async () => cond(await env.target.get<JobView>(Jobs, { namespace: at.namespace, name: job.name }), 'Complete')?.status === 'True',
      'the Job to complete once the Secret holds its rules',
      30_000,
    );
    const local = await resolveS3Endpoint(at.endpoint, env.target);
    const root = s3Client(local, await rootOf('ObjectStore'));
    try {
      const applied = (await root.send(new GetBucketLifecycleConfigurationCommand({ Bucket: u(30).bucket }))).Rules ?? [];
      expect(applied.map((r) => [r.ID, r.Expiration?.Days])).toEqual([['logs', 30]]);
    } finally {
      root.destroy();
    }
  }, 90_000);
});

describe('shared and dedicated stores', () => {
  it("no Secret in the control cluster holds a store's root credential, in either mode", async () => {
    await env.control.create(Buckets, claim({ namespace: env.ns.appA, name: 'd' }, 'dedicated'));
    await env.control.create(Buckets, claim({ namespace: env.ns.appB, name: 's' }, 'shared-rook'));
    const dedicated = (await bound({ namespace: env.ns.appA, name: 'd' })).spec.resourceRef!.name;
    await bound({ namespace: env.ns.appB, name: 's' });
    const d = await access({ namespace: env.ns.appA, name: 'd' });
    await roundTrip(d.local, d.creds, d.bucket);
    const dedicatedRoot = secretText(
      (await env.target.get<Obj>(Secrets, { namespace: 'dedicated', name: `${dedicated}-access-keys` }))!.data,
    );
    const rook = await rootOf('ObjectStore');
    const tenant = await rootOf('Tenant');
    const roots = [rook.accessKey, rook.secretKey, tenant.accessKey, tenant.secretKey, dedicatedRoot.username!, dedicatedRoot.password!];
    expect(roots.every((r) => r.length >= 20)).toBe(true);
    const { items } = await env.control.list<Obj>(Secrets);
    expect(items.length).toBeGreaterThan(5);
    const holding = items.filter((s) => Object.values(secretText(s.data)).some((v) => roots.some((r) => v.includes(r))));
    expect(holding.map((s) => `${s.metadata.namespace}/${s.metadata.name}`)).toEqual([]);
  }, 120_000);

  it('a store of its own whose bucket holds objects is kept with them, marked Retain, when its claim goes', async () => {
    const mr = (await env.control.get<Bucket>(Buckets, { namespace: env.ns.appA, name: 'd' }))!.spec.resourceRef!.name;
    const d = await access({ namespace: env.ns.appA, name: 'd' });
    const s3 = s3Client(d.local, d.creds);
    await s3.send(new PutObjectCommand({ Bucket: d.bucket, Key: 'keep-me', Body: 'data' }));
    s3.destroy();
    await env.control.delete(Buckets, { namespace: env.ns.appA, name: 'd' });
    await gone(kinds.ObjectStore, { namespace: env.ns.platform, name: mr });
    // The store and its keys are still there, marked Retain: no sweep takes them.
    const store = await env.target.get<Obj & { metadata: { annotations?: Record<string, string> } }>(RookObjectStores, {
      namespace: 'dedicated',
      name: mr,
    });
    expect(store?.metadata.annotations?.['rook.crossplane.io/reclaim-policy']).toBe('Retain');
    const rootKeys = secretText((await env.target.get<Obj>(Secrets, { namespace: 'dedicated', name: `${mr}-access-keys` }))!.data);
    const root = s3Client(d.local, { accessKey: rootKeys.username!, secretKey: rootKeys.password! });
    try {
      const kept = await root.send(new GetObjectCommand({ Bucket: d.bucket, Key: 'keep-me' }));
      expect(await kept.Body!.transformToString()).toBe('data');
    } finally {
      root.destroy();
    }
    // Its user is gone, and the Event says what was kept.
    const again = s3Client(d.local, d.creds);
    expect(await refusal(again.send(new GetObjectCommand({ Bucket: d.bucket, Key: 'keep-me' })))).toBe('InvalidAccessKeyId');
    again.destroy();
    const events = await eventsFor(env.control, { namespace: env.ns.platform, name: mr });
    expect(events.find((e) => e.reason === 'KeptInTarget')?.message).toContain('marked Retain');
  }, 120_000);

  it("a store of its own whose bucket holds objects is kept when its claim goes before its changed spec's access Job ran", async () => {
    await env.control.create(Buckets, claim({ namespace: env.ns.appB, name: 'changed' }, 'dedicated'));
    const mr = (await bound({ namespace: env.ns.appB, name: 'changed' })).spec.resourceRef!.name;
    const c = await access({ namespace: env.ns.appB, name: 'changed' });
    const s3 = s3Client(c.local, c.creds);
    await s3.send(new PutObjectCommand({ Bucket: c.bucket, Key: 'keep-me', Body: 'data' }));
    s3.destroy();
    // A new quota names a new access Job, whose pod does not run yet; the completed one is superseded.
    const accessJobs = async () =>
      (
        await env.target.list<Obj & { metadata: { annotations?: Record<string, string> } }>(Jobs, {
          namespace: 'dedicated',
          labelSelector: `${LABEL_ADMIN}=grant`,
        })
      ).items.filter((j) => j.metadata.annotations?.['rook.crossplane.io/owner']?.endsWith(`/${mr}`));
    await rookStandIn.holdJobs((job) => job.metadata.labels?.[LABEL_ADMIN] === 'grant');
    try {
      await env.control.mergePatch(
        Buckets,
        { namespace: env.ns.appB, name: 'changed' },
        { spec: { features: { quota: { size: '5Mi' } } } },
      );
      await eventually(
        async () => {
          const jobs = await accessJobs();
          return jobs.length === 1 && !cond(jobs[0], 'Complete');
        },
        "the new spec's access Job, not run yet, to be its only one",
        30_000,
      );
      await env.control.delete(Buckets, { namespace: env.ns.appB, name: 'changed' });
      await gone(kinds.ObjectStore, { namespace: env.ns.platform, name: mr });
    } finally {
      await rookStandIn.holdJobs(undefined);
    }
    // A user was made and wrote: the revoke ran, found the object, and the store was kept with it.
    const store = await env.target.get<Obj & { metadata: { annotations?: Record<string, string> } }>(RookObjectStores, {
      namespace: 'dedicated',
      name: mr,
    });
    expect(store?.metadata.annotations?.['rook.crossplane.io/reclaim-policy']).toBe('Retain');
    const rootKeys = secretText((await env.target.get<Obj>(Secrets, { namespace: 'dedicated', name: `${mr}-access-keys` }))!.data);
    const root = s3Client(c.local, { accessKey: rootKeys.username!, secretKey: rootKeys.password! });
    try {
      const kept = await root.send(new GetObjectCommand({ Bucket: c.bucket, Key: 'keep-me' }));
      expect(await kept.Body!.transformToString()).toBe('data');
    } finally {
      root.destroy();
    }
  }, 120_000);

  it('a store of its own whose root keys are gone is kept when its claim goes: nothing proves its bucket empty', async () => {
    await env.control.create(Buckets, claim({ namespace: env.ns.appB, name: 'r' }, 'dedicated'));
    const mr = (await bound({ namespace: env.ns.appB, name: 'r' })).spec.resourceRef!.name;
    await env.target.delete(Secrets, { namespace: 'dedicated', name: `${mr}-access-keys` });
    await env.control.delete(Buckets, { namespace: env.ns.appB, name: 'r' });
    await gone(kinds.ObjectStore, { namespace: env.ns.platform, name: mr });
    const store = await env.target.get<Obj & { metadata: { annotations?: Record<string, string> } }>(RookObjectStores, {
      namespace: 'dedicated',
      name: mr,
    });
    expect(store?.metadata.annotations?.['rook.crossplane.io/reclaim-policy']).toBe('Retain');
    const events = await eventsFor(env.control, { namespace: env.ns.platform, name: mr });
    expect(events.find((e) => e.reason === 'KeptInTarget')?.message).toContain(
      `the store's root credentials Secret dedicated/${mr}-access-keys is gone, so nothing proves its bucket empty`,
    );
  }, 120_000);

  it('a claim in a namespace that starts with xn-- binds: its bucket name is one S3 takes, and it works', async () => {
    await env.control.create(Buckets, claim({ namespace: env.ns.appIdn, name: 'idn' }, 'shared-rook'));
    await bound({ namespace: env.ns.appIdn, name: 'idn' });
    const c = await access({ namespace: env.ns.appIdn, name: 'idn' });
    expect(c.bucket).toMatch(new RegExp(`^b-${env.ns.appIdn}-idn-[0-9a-f]{8}$`));
    await roundTrip(c.local, c.creds, c.bucket);
  }, 120_000);

  it('a class that shares a store that does not exist: the claim says so, and nothing is made', async () => {
    await env.control.create(Buckets, claim({ namespace: env.ns.appA, name: 'm' }, 'missing'));
    const synced = await eventually(async () => {
      const c = cond(await env.control.get<Bucket>(Buckets, { namespace: env.ns.appA, name: 'm' }), 'Synced');
      return c?.status === 'False' ? c : undefined;
    }, 'the claim to say its store is missing');
    expect(synced).toMatchObject({
      reason: 'SharedStoreNotFound',
      message: `MinioBucketClass ${env.ns.platform}/missing shares ObjectStore ${env.ns.platform}/no-such-store, which does not exist`,
    });
    expect(
      (await env.control.list(kinds.MinioBucket, { namespace: env.ns.platform })).items.map((m) => m.metadata.name),
    ).not.toContainEqual(expect.stringContaining('-m-'));
  });
});

describe('access grants (BucketAccess)', () => {
  const grantClaim = ({ namespace, name }: Required<ObjectKey>, bucket: { namespace: string; name: string }, mode: string) =>
    ({
      apiVersion: BucketAccesses.apiVersion,
      kind: 'BucketAccess',
      metadata: { name, namespace },
      spec: { bucketRef: bucket, mode, writeConnectionSecretToRef: { name: `${name}-s3` } },
    }) as KubeObjectLike;
  const accessState = async ({ namespace, name }: Required<ObjectKey>) =>
    env.control.get<Obj & { status?: { bindingPhase?: string } }>(BucketAccesses, { namespace, name });
  const granted = ({ namespace, name }: Required<ObjectKey>) =>
    eventually(
      async () => {
        const a = await accessState({ namespace, name });
        return a?.status?.bindingPhase === 'Bound' && cond(a, 'Ready')?.status === 'True' ? a : undefined;
      },
      `BucketAccess ${namespace}/${name} to be Bound`,
      { timeoutMs: 60_000, explain: async () => JSON.stringify((await accessState({ namespace, name }))?.status?.conditions) },
    );
  const refused = ({ namespace, name }: Required<ObjectKey>) =>
    eventually(async () => {
      const c = cond(await accessState({ namespace, name }), 'Synced');
      return c?.status === 'False' ? c : undefined;
    }, `BucketAccess ${namespace}/${name} to be refused`);

  let owner: Awaited<ReturnType<typeof openBucket>>;
  async function openBucket() {
    await env.control.create(Buckets, {
      ...claim({ namespace: env.ns.appA, name: 'shared-out' }, 'shared-rook'),
      spec: {
        classRef: { name: 'shared-rook' },
        writeConnectionSecretToRef: { name: 'shared-out-s3' },
        shareWith: [{ namespace: env.ns.appB, modes: ['ReadOnly'] }],
      },
    } as KubeObjectLike);
    await bound({ namespace: env.ns.appA, name: 'shared-out' });
    const o = await access({ namespace: env.ns.appA, name: 'shared-out' });
    const s3 = s3Client(o.local, o.creds);
    await s3.send(new PutObjectCommand({ Bucket: o.bucket, Key: 'report.txt', Body: 'numbers' }));
    s3.destroy();
    return o;
  }

  beforeAll(async () => {
    owner = await openBucket();
  }, 120_000);

  it('a read-only grant can GET and is refused on PUT; once it is deleted, its next GET is refused within 10 s', async () => {
    await env.control.create(
      BucketAccesses,
      grantClaim({ namespace: env.ns.appB, name: 'reader' }, { namespace: env.ns.appA, name: 'shared-out' }, 'ReadOnly'),
    );
    await granted({ namespace: env.ns.appB, name: 'reader' });
    const keys = secretText((await env.control.get<Obj>(Secrets, { namespace: env.ns.appB, name: 'reader-s3' }))!.data);
    expect(keys.BUCKET_NAME).toBe(owner.bucket);
    expect(keys.AWS_ACCESS_KEY_ID).not.toBe(owner.creds.accessKey);
    const s3 = s3Client(owner.local, { accessKey: keys.AWS_ACCESS_KEY_ID!, secretKey: keys.AWS_SECRET_ACCESS_KEY! });
    try {
      const got = await s3.send(new GetObjectCommand({ Bucket: owner.bucket, Key: 'report.txt' }));
      expect(await got.Body!.transformToString()).toBe('numbers');
      expect(await refusal(s3.send(new PutObjectCommand({ Bucket: owner.bucket, Key: 'x', Body: 'x' })))).toBe('AccessDenied');
      await env.control.delete(BucketAccesses, { namespace: env.ns.appB, name: 'reader' });
      const started = Date.now();
      await eventually(
        async () => (await refusal(s3.send(new GetObjectCommand({ Bucket: owner.bucket, Key: 'report.txt' })))) === 'InvalidAccessKeyId',
        'the revoked grant to be refused',
        10_000,
      );
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      s3.destroy();
    }
    // The owner's bucket and keys are untouched.
    await roundTrip(owner.local, owner.creds, owner.bucket);
  }, 120_000);

  it('is refused where the bucket does not share: another namespace, or a mode it does not allow', async () => {
    await env.control.create(
      BucketAccesses,
      grantClaim({ namespace: env.ns.appB, name: 'writer' }, { namespace: env.ns.appA, name: 'shared-out' }, 'ReadWrite'),
    );
    expect(await refused({ namespace: env.ns.appB, name: 'writer' })).toMatchObject({
      reason: 'AccessNotAllowed',
      message: `Bucket ${env.ns.appA}/shared-out shares with namespace ${env.ns.appB} in mode ReadOnly only, not ReadWrite`,
    });
    await env.control.create(
      BucketAccesses,
      grantClaim({ namespace: env.ns.appA, name: 'stranger' }, { namespace: env.ns.appB, name: 'b-shared-rook' }, 'ReadOnly'),
    );
    expect(await refused({ namespace: env.ns.appA, name: 'stranger' })).toMatchObject({
      reason: 'AccessNotAllowed',
      message: `Bucket ${env.ns.appB}/b-shared-rook does not exist or does not share with namespace ${env.ns.appA}`,
    });
    expect(
      (await env.control.list(kinds.MinioBucket, { namespace: env.ns.platform })).items.filter(
        (m) => m.metadata.name.includes('writer') || m.metadata.name.includes('stranger'),
      ),
    ).toEqual([]);
  });

  it('a mode that does not exist is refused at admission, naming the field', async () => {
    const err = await env.control
      .create(
        BucketAccesses,
        grantClaim({ namespace: env.ns.appB, name: 'admin' }, { namespace: env.ns.appA, name: 'shared-out' }, 'Admin'),
      )
      .catch((e: Error) => e);
    expect((err as Error).message).toContain('spec.mode');
  });

  it("taking the namespace off the bucket's list revokes the users it allowed", async () => {
    await env.control.create(
      BucketAccesses,
      grantClaim({ namespace: env.ns.appB, name: 'reader2' }, { namespace: env.ns.appA, name: 'shared-out' }, 'ReadOnly'),
    );
    await granted({ namespace: env.ns.appB, name: 'reader2' });
    const keys = secretText((await env.control.get<Obj>(Secrets, { namespace: env.ns.appB, name: 'reader2-s3' }))!.data);
    const s3 = s3Client(owner.local, { accessKey: keys.AWS_ACCESS_KEY_ID!, secretKey: keys.AWS_SECRET_ACCESS_KEY! });
    try {
      await s3.send(new GetObjectCommand({ Bucket: owner.bucket, Key: 'report.txt' }));
      await env.control.mergePatch(Buckets, { namespace: env.ns.appA, name: 'shared-out' }, { spec: { shareWith: null } });
      expect(await refused({ namespace: env.ns.appB, name: 'reader2' })).toMatchObject({ reason: 'AccessNotAllowed' });
      await eventually(
        async () => (await refusal(s3.send(new GetObjectCommand({ Bucket: owner.bucket, Key: 'report.txt' })))) === 'InvalidAccessKeyId',
        'the withdrawn grant to be refused',
        10_000,
      );
      // Its copy of the keys goes too.
      await eventually(
        async () => (await env.control.get(Secrets, { namespace: env.ns.appB, name: 'reader2-s3' })) === undefined,
        'the revoked Secret to be gone',
      );
    } finally {
      s3.destroy();
    }
  }, 120_000);
  it('a Bucket that still has grants cannot be deleted; once they are revoked, it can', async () => {
    await env.control.create(Buckets, {
      ...claim({ namespace: env.ns.appA, name: 'short-lived' }, 'shared-rook'),
      spec: {
        classRef: { name: 'shared-rook' },
        writeConnectionSecretToRef: { name: 'short-lived-s3' },
        shareWith: [{ namespace: env.ns.appB, modes: ['ReadOnly'] }],
      },
    } as KubeObjectLike);
    await bound({ namespace: env.ns.appA, name: 'short-lived' });
    const o = await access({ namespace: env.ns.appA, name: 'short-lived' });
    await env.control.create(
      BucketAccesses,
      grantClaim({ namespace: env.ns.appB, name: 'reader3' }, { namespace: env.ns.appA, name: 'short-lived' }, 'ReadOnly'),
    );
    await granted({ namespace: env.ns.appB, name: 'reader3' });
    // While the grant holds a user, the Bucket carries the label admission judges (put back if taken off).
    const marked = async () =>
      (await env.control.get<Bucket>(Buckets, { namespace: env.ns.appA, name: 'short-lived' }))?.metadata.labels?.[
        'rook.crossplane.io/granted'
      ];
    await eventually(async () => (await marked()) === 'true', 'the Bucket to be marked granted');
    await env.control.mergePatch(
      Buckets,
      { namespace: env.ns.appA, name: 'short-lived' },
      { metadata: { labels: { 'rook.crossplane.io/granted': null } } },
    );
    await eventually(async () => (await marked()) === 'true', 'the mark put back while the grant holds');
    const err = await env.control.delete(Buckets, { namespace: env.ns.appA, name: 'short-lived' }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).toContain(`Bucket ${env.ns.appA}/short-lived still has access grants`);
    const keys = secretText((await env.control.get<Obj>(Secrets, { namespace: env.ns.appB, name: 'reader3-s3' }))!.data);
    const s3 = s3Client(o.local, { accessKey: keys.AWS_ACCESS_KEY_ID!, secretKey: keys.AWS_SECRET_ACCESS_KEY! });
    try {
      await s3.send(new ListObjectsV2Command({ Bucket: o.bucket }));
      // Its owner withdraws the share: the grant is revoked, the mark goes, and the Bucket may be deleted.
      await env.control.mergePatch(Buckets, { namespace: env.ns.appA, name: 'short-lived' }, { spec: { shareWith: null } });
      expect(await refused({ namespace: env.ns.appB, name: 'reader3' })).toMatchObject({ reason: 'AccessNotAllowed' });
      await eventually(
        async () => (await refusal(s3.send(new ListObjectsV2Command({ Bucket: o.bucket })))) === 'InvalidAccessKeyId',
        'the revoked grant to be refused',
        10_000,
      );
      await eventually(async () => (await marked()) === undefined, 'the mark to go with the last grant');
      await env.control.delete(Buckets, { namespace: env.ns.appA, name: 'short-lived' });
      await gone(Buckets, { namespace: env.ns.appA, name: 'short-lived' });
    } finally {
      s3.destroy();
    }
  }, 120_000);
});

describe('a shared store deleted while a bucket lives in it', () => {
  it('waits for the bucket, saying so, with the bucket still working; goes once the bucket is deleted', async () => {
    const store = { namespace: env.ns.platform, name: 'late-rook' };
    await apply(kinds.ObjectStore, store, {
      forProvider: { scope: { nodeCount: 4 } },
      targetNamespace: 'late-rook',
      providerRef: { name: 't' },
    });
    await apply(kinds.MinioBucketClass, store, { store: { kind: 'ObjectStore', name: 'late-rook' } });
    const classRef = {
      apiVersion: kinds.MinioBucketClass.apiVersion,
      kind: kinds.MinioBucketClass.kind,
      name: 'late-rook',
      namespace: env.ns.platform,
    };
    await apply(BucketClasses, { namespace: env.ns.appA, name: 'late-rook' }, { classRef }, true);
    const key = { namespace: env.ns.appA, name: 'lives-in-late' };
    await env.control.create(Buckets, claim(key, 'late-rook'));
    await bound(key);
    const mr = (await env.control.get<Bucket>(Buckets, key))!.spec.resourceRef!.name;

    await env.control.delete(kinds.ObjectStore, store);
    const waiting = await eventually(async () => {
      const s = await env.control.get<Obj>(kinds.ObjectStore, store);
      return cond(s, 'Synced')?.reason === 'StoreInUse' ? s : undefined;
    }, 'the store to say it is in use');
    expect(cond(waiting, 'Synced')?.message).toContain(`MinioBucket ${env.ns.platform}/${mr} lives in this store`);
    expect(await env.target.get(RookObjectStores, { namespace: 'late-rook', name: 'late-rook' })).toBeDefined();
    const a = await access(key);
    await roundTrip(a.local, a.creds, a.bucket);

    await env.control.delete(Buckets, key);
    await gone(Buckets, key);
    await gone(kinds.MinioBucket, { namespace: env.ns.platform, name: mr });
    await gone(kinds.ObjectStore, store);
    await eventually(
      async () => (await env.target.get(RookObjectStores, { namespace: 'late-rook', name: 'late-rook' })) === undefined,
      'the target store to be gone',
    );
  }, 120_000);
});
