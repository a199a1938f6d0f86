// The SeaweedFS backend against real API servers and real SeaweedFS servers: a platform team runs a
// shared SeaweedStore with a SeaweedBucketClass, and a SeaweedStoreClass that gives each claim a
// store of its own. Every check uses only what a claim's Secret holds, against the server that
// plays the claim's Seaweed (the operator is a stand-in: fake-seaweed-operator.ts).
import type { ObjectKey } from '../../src/kit/kube/object-key.ts';
import { describe, expect, it } from '@jest/globals';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetBucketLifecycleConfigurationCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { BucketAccesses, BucketClasses, Buckets } from '../../src/app.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { Bucket } from '../../src/apis/storage.ts';
import type { SeaweedBucket } from '../../src/backends/seaweedfs/api.ts';
import { seaweedNameFor } from '../../src/backends/seaweedfs/seaweed.ts';
import type { KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Namespaces, NetworkPolicies, resourcePath, Secrets, Services, type ResourceType } from '../../src/kit/kube/resources.ts';
import {
  S3CredentialsType,
  S3Identities,
  S3PolicyBindings,
  S3Policies,
  SeaweedBuckets,
  Seaweeds,
  seaweedfsOperator,
} from '../../src/backends/seaweedfs/operator.ts';
import { secretText } from '../../src/runtime/providers/credentials.ts';
import { ANNOTATION_ROTATE } from '../../src/runtime/labels.ts';
import { FakeSeaweedOperator } from '../fakes/fake-seaweed-operator.ts';
import { eventually } from '../kit/eventually.ts';
import { eventsFor } from '../kit/provider.ts';
import { ANNOTATION_COMPANION_UIDS, ANNOTATION_RECLAIM_POLICY } from '../../src/runtime/ownership/marks.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { boundBucket, bucketClaim, claimAccess, refusedBucket } from '../kit/claims.ts';
import { repoRoot } from '../kit/cluster.ts';
import { applyObject, loadManifests } from '../kit/manifests.ts';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { startS3Server, type S3Server } from '../kit/s3-server.ts';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { answersIn, refusal, roundTrip, s3Client } from '../kit/s3.ts';
import { cond } from '../kit/conditions.ts';

const TARGET = `it-seaweedfs-${process.pid}`;
const GRACE_S = 10;
type Obj = KubeObjectLike & {
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  status?: { conditions?: Cond[]; phase?: string };
};
type Cond = { type: string; status: string; reason: string; message?: string };
let operator: FakeSeaweedOperator;

const env = withProviderRook({
  cluster: TARGET,
  namespaces: { platform: 'sw-infra', appA: 'sw-a', appB: 'sw-b' },
  provider: { name: 't', in: 'platform' },
  operators: ['seaweedfs'],
  standIns: (t) => [(operator = new FakeSeaweedOperator(t, { s3: true }))],
  timeoutMs: 180_000,
  before: async () => {
    // The platform team's shared store, made for no claim, and the two classes.
    await apply(
      kinds.SeaweedStore,
      { namespace: env.ns.platform, name: 'shared' },
      {
        forProvider: {},
        targetNamespace: 'sw-shared',
        providerRef: { name: 't' },
      },
    );
    await apply(kinds.SeaweedBucketClass, { namespace: env.ns.platform, name: 'shared' }, { store: { name: 'shared' } });
    await apply(kinds.SeaweedStoreClass, { namespace: env.ns.platform, name: 'dedicated' }, { providerRef: { name: 't' } });
    await apply(
      kinds.SeaweedBucketClass,
      { namespace: env.ns.platform, name: 'featured' },
      {
        store: { name: 'shared' },
        features: { maxQuota: '10Gi', forbidden: ['objectLock'] },
      },
    );
    await apply(
      kinds.SeaweedBucketClass,
      { namespace: env.ns.platform, name: 'rotating' },
      {
        store: { name: 'shared' },
        credentialRotation: { gracePeriod: `${GRACE_S}s` },
      },
    );
    await apply(
      kinds.SeaweedStoreClass,
      { namespace: env.ns.platform, name: 'rotating-dedicated' },
      {
        providerRef: { name: 't' },
        credentialRotation: { gracePeriod: `${GRACE_S}s` },
      },
    );
    // Shared stores no claim's bucket can be made in: one that does not exist, one in a namespace the Provider refuses.
    await apply(kinds.SeaweedBucketClass, { namespace: env.ns.platform, name: 'missing' }, { store: { name: 'no-such-store' } });
    await apply(
      kinds.SeaweedStore,
      { namespace: env.ns.platform, name: 'forbidden' },
      {
        forProvider: {},
        targetNamespace: 'kube-system',
        providerRef: { name: 't' },
      },
    );
    await apply(kinds.SeaweedBucketClass, { namespace: env.ns.platform, name: 'forbidden' }, { store: { name: 'forbidden' } });
    // A backend without bucket features, for what it refuses (nothing of it is ever made).
    await apply(
      kinds.CephBucketClass,
      { namespace: env.ns.platform, name: 'ceph' },
      { storageClassName: 'rook-ceph-bucket', providerRef: { name: 't' } },
    );
    for (const ns of [env.ns.appA, env.ns.appB]) {
      for (const [name, kind] of [
        ['shared', kinds.SeaweedBucketClass],
        ['dedicated', kinds.SeaweedStoreClass],
        ['featured', kinds.SeaweedBucketClass],
        ['rotating', kinds.SeaweedBucketClass],
        ['rotating-dedicated', kinds.SeaweedStoreClass],
        ['missing', kinds.SeaweedBucketClass],
        ['forbidden', kinds.SeaweedBucketClass],
        ['ceph', kinds.CephBucketClass],
      ] as const) {
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

/** Applies an object with this spec (or, `top`, these top-level fields). */
const apply = (type: ResourceType, key: Required<ObjectKey>, spec: object, top = false) =>
  applyObject(env.control, type, key, top ? spec : { spec });

const claim = bucketClaim;
const bound = ({ namespace, name }: Required<ObjectKey>) => boundBucket(env.control, { namespace, name }, 90_000);
/** A claim's Secret, and its endpoint as an app in the target reaches it. */
const access = ({ namespace, name }: Required<ObjectKey>) => claimAccess(env.control, env.target, { namespace, name });

const managedOf = async ({ namespace, name }: Required<ObjectKey>): Promise<string> =>
  (await env.control.get<Bucket>(Buckets, { namespace, name }))!.spec.resourceRef!.name;

describe("a Seaweed's S3 gateway, as the operator starts it from provider-rook's spec", () => {
  /** The status of an unsigned request: what anyone who reaches the gateway may send. */
  const anonymous = (endpoint: string, method: string, path: string, body?: string): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = http.request(
        `${endpoint}${path}`,
        { method, headers: body ? { 'content-type': 'application/x-www-form-urlencoded' } : {} },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end(body);
    });

  it('refuses anonymous callers while the store has no user (a shared one made for no claim): it starts with an identity that may do nothing', async () => {
    const seaweed = await eventually(
      () =>
        env.target.get<Obj & { spec: { s3?: { configSecret?: { name: string; key: string } } } }>(Seaweeds, {
          namespace: 'sw-shared',
          name: 'shared',
        }),
      'the shared Seaweed',
      60_000,
    );
    const ref = seaweed.spec.s3?.configSecret;
    expect(ref).toBeDefined();
    const config = JSON.parse(
      secretText((await env.target.get<Obj>(Secrets, { namespace: 'sw-shared', name: ref!.name }))?.data)[ref!.key]!,
    ) as {
      identities: { name: string; credentials: { accessKey: string; secretKey: string }[]; actions: string[] }[];
    };
    expect(config.identities.map((i) => [i.name, i.actions])).toEqual([['provider-rook-auth-guard', []]]);
    // The gateway with that -config alone, and, to show what it closes, one with no identity at all.
    const dir = mkdtempSync(path.join(tmpdir(), 'it-seaweed-guard-'));
    const started = await Promise.allSettled([
      startS3Server({ dir: path.join(dir, 'guarded'), identities: config.identities }),
      startS3Server({ dir: path.join(dir, 'open') }),
    ]);
    // One that started while the other failed is stopped: a server left running keeps the test process alive.
    const failed = started.find((r) => r.status === 'rejected');
    if (failed) {
      await Promise.all(started.map((r) => (r.status === 'fulfilled' ? r.value.stop() : undefined)));
      throw failed.reason;
    }
    const [guarded, open] = started.map((r) => (r as PromiseFulfilledResult<S3Server>).value) as [S3Server, S3Server];
    try {
      const iamCreateUser = 'Action=CreateUser&UserName=intruder&Version=2010-05-08';
      expect(await anonymous(open.endpoint, 'PUT', '/planted')).toBe(200);
      expect([await anonymous(guarded.endpoint, 'GET', '/'), await anonymous(guarded.endpoint, 'PUT', '/planted')]).toEqual([403, 403]);
      expect(await anonymous(guarded.endpoint, 'POST', '/', iamCreateUser)).not.toBe(200);
      // Its own keys may do nothing either.
      const guard = s3Client(guarded.endpoint, config.identities[0]!.credentials[0]!);
      try {
        expect(await refusal(guard.send(new CreateBucketCommand({ Bucket: 'planted' })))).toBe('AccessDenied');
      } finally {
        guard.destroy();
      }
    } finally {
      await Promise.all([guarded.stop(), open.stop()]);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('buckets in a shared SeaweedFS store', () => {
  it("an operator's object cannot be pointed at another namespace's Seaweed once made (the operator would delete there what it names)", async () => {
    // A tenant's own Bucket of the operator's kind, in a namespace of its own, naming a Seaweed there.
    const ns = `sw-tenant-${process.pid}`;
    await env.target.apply(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    const key = { namespace: ns, name: 'decoy' };
    await env.target.create(SeaweedBuckets, {
      apiVersion: SeaweedBuckets.apiVersion,
      kind: SeaweedBuckets.kind,
      metadata: key,
      spec: { name: 'same-name-as-yours', clusterRef: { name: 'own' }, reclaimPolicy: 'Delete' },
    } as KubeObjectLike);
    const repoint = (spec: Record<string, unknown>) =>
      env.target
        .request('PATCH', resourcePath(SeaweedBuckets, ns, 'decoy'), {
          body: { spec },
          contentType: 'application/merge-patch+json',
          query: { dryRun: 'All' },
        })
        .then(
          () => 'admitted',
          (e: Error) => e.message,
        );
    // The bundle's admission policy (config/operators/seaweedfs/admission.yaml) is loaded a moment after it is written.
    const refused = await eventually(
      async () => {
        const answer = await repoint({ clusterRef: { name: 'shared', namespace: 'sw-shared' } });
        return answer === 'admitted' ? undefined : answer;
      },
      'repointing to be refused',
      30_000,
    );
    expect(refused).toMatch(/cannot change once it is made/);
    // Its name in SeaweedFS is fixed by the operator's own CRD already.
    expect(await repoint({ name: 'another-bucket' })).toMatch(/immutable|cannot change once it is made/);
    // What does not name anything may change.
    expect(await repoint({ reclaimPolicy: 'Retain' })).toBe('admitted');
    await env.target.delete(SeaweedBuckets, key);
  });

  it("each claim gets a bucket and a user that reaches only it, through the operator's own kinds", async () => {
    await env.control.create(Buckets, claim({ namespace: env.ns.appA, name: 'one' }, 'shared'));
    await env.control.create(Buckets, claim({ namespace: env.ns.appB, name: 'two' }, 'shared'));
    await bound({ namespace: env.ns.appA, name: 'one' });
    await bound({ namespace: env.ns.appB, name: 'two' });
    const a = await access({ namespace: env.ns.appA, name: 'one' });
    const b = await access({ namespace: env.ns.appB, name: 'two' });
    // The Service's full name: a shorter one goes through a pod's search domains first, where a tenant
    // owning a namespace called "svc" could answer it.
    expect(a.keys.endpoint).toBe('http://shared-s3.sw-shared.svc.cluster.local:8333');
    expect(b.keys.endpoint).toBe(a.keys.endpoint);
    expect(a.creds.accessKey).not.toBe(b.creds.accessKey);
    // The operator's objects in the target: one of each kind per claim, the user's name unique per managed resource.
    const mr = await managedOf({ namespace: env.ns.appA, name: 'one' });
    for (const type of [S3Identities, S3CredentialsType, S3Policies, S3PolicyBindings, SeaweedBuckets]) {
      const name = type === S3Policies || type === S3PolicyBindings ? `${mr}-policy` : mr;
      expect((await env.target.get<Obj>(type, { namespace: 'sw-shared', name }))?.status?.phase).toBe('Ready');
    }
    expect((await env.target.get<Obj>(S3Identities, { namespace: 'sw-shared', name: mr }))?.spec?.name).toBe(
      `rook.${env.ns.platform}.${mr}`,
    );
    // A policy's name in SeaweedFS takes no dots (its filer refuses one, as the stand-in's server does).
    expect((await env.target.get<Obj>(S3Policies, { namespace: 'sw-shared', name: `${mr}-policy` }))?.spec?.name).toBe(
      `rook_${env.ns.platform}_${mr}`,
    );
    // The keys are provider-rook's own, in its Secret beside them, and the operator registered them.
    expect(
      (await env.target.get<Obj & { status?: { accessKey?: string } }>(S3CredentialsType, { namespace: 'sw-shared', name: mr }))?.status
        ?.accessKey,
    ).toBe(a.creds.accessKey);
    await roundTrip(a.local, a.creds, a.bucket);
    await roundTrip(b.local, b.creds, b.bucket);
    // A's keys in B's bucket: the real server judges the policy and refuses.
    expect(await answersIn(a.local, a.creds, b.bucket)).toEqual({ put: 'AccessDenied', list: 'AccessDenied', get: 'AccessDenied' });
  }, 150_000);

  it("a Bucket whose operator lost its status write after making the bucket: kept, said with what to do, and taken back once a platform team says it is this claim's", async () => {
    const a = await access({ namespace: env.ns.appA, name: 'one' });
    const mr = await managedOf({ namespace: env.ns.appA, name: 'one' });
    const key = { namespace: 'sw-shared', name: mr };
    const managed = { namespace: env.ns.platform, name: mr };
    // As a status update the operator's pass lost to a conflict: the bucket is there, its Bucket does not say so.
    const made = await env.target.get<Obj>(SeaweedBuckets, key);
    await env.target.updateStatus(SeaweedBuckets, { ...made!, status: {} });
    // The operator refuses a bucket it cannot tell is its own; provider-rook does not take it for the claim's on a guess.
    const said = await eventually(async () => {
      const synced = cond(await env.control.get<SeaweedBucket>(kinds.SeaweedBucket, managed), 'Synced');
      return synced?.reason === 'BucketAccessFailed' && synced.message?.includes('BucketAlreadyExists') ? synced.message : undefined;
    }, 'the resource to say its Bucket refused the bucket');
    expect(said).toContain('set spec.adoptExisting: true on that Bucket');
    expect((await env.target.get<Obj>(SeaweedBuckets, key))?.spec?.adoptExisting).not.toBe(true);
    // The platform team says it is: the operator takes it, and provider-rook keeps what it said.
    await env.target.mergePatch(SeaweedBuckets, key, { spec: { adoptExisting: true } });
    await eventually(async () => {
      const status = (await env.target.get<Obj & { status?: { bucketName?: string } }>(SeaweedBuckets, key))?.status;
      return status?.phase === 'Ready' && status.bucketName === a.bucket;
    }, 'the Bucket to adopt the bucket and be Ready again');
    await eventually(
      async () => cond(await env.control.get<SeaweedBucket>(kinds.SeaweedBucket, managed), 'Ready')?.status === 'True',
      'the resource to be Ready again',
    );
    expect((await env.target.get<Obj>(SeaweedBuckets, key))?.spec?.adoptExisting).toBe(true);
    await roundTrip(a.local, a.creds, a.bucket);
  }, 90_000);

  it("a store whose S3 Service someone repointed is not Ready and publishes no endpoint, its buckets' Secrets neither, until it is the operator's again", async () => {
    const key = { namespace: 'sw-shared', name: 'shared-s3' };
    const instance = 'app.kubernetes.io/instance';
    // Someone who may edit Services in the store's namespace points it at pods of theirs.
    await env.target.mergePatch(Services, key, { spec: { selector: { [instance]: 'intruder' } } });
    try {
      const unproven = async (type: ResourceType, { namespace, name }: Required<ObjectKey>) =>
        eventually(
          async () => {
            const c = cond(await env.control.get<Obj>(type, { namespace, name }), 'Ready');
            return c?.status === 'False' && c.reason === 'EndpointNotProven' ? c : undefined;
          },
          `${type.kind} ${namespace}/${name} to say EndpointNotProven`,
          30_000,
        );
      expect((await unproven(kinds.SeaweedStore, { namespace: env.ns.platform, name: 'shared' })).message).toContain(
        "it does not select the gateway's pods",
      );
      await unproven(Buckets, { namespace: env.ns.appA, name: 'one' });
      const copy = await eventually(
        async () => {
          const k = secretText((await env.control.get<Obj>(Secrets, { namespace: env.ns.appA, name: 'one-s3' }))?.data);
          return k.endpoint === undefined ? k : undefined;
        },
        "the claim's Secret to name no endpoint",
        30_000,
      );
      expect(Object.keys(copy)).not.toContain('AWS_ENDPOINT_URL');
    } finally {
      // The operator's again: Ready, and the endpoint back.
      await env.target.mergePatch(Services, key, { spec: { selector: { [instance]: 'shared' } } });
    }
    await bound({ namespace: env.ns.appA, name: 'one' });
    await eventually(
      async () => secretText((await env.control.get<Obj>(Secrets, { namespace: env.ns.appA, name: 'one-s3' }))?.data).endpoint,
      "the claim's Secret to name its endpoint again",
      30_000,
    );
  }, 120_000);

  it('a read-only grant can GET and is refused on PUT; deleting it revokes its keys', async () => {
    await env.control.mergePatch(
      Buckets,
      { namespace: env.ns.appA, name: 'one' },
      { spec: { shareWith: [{ namespace: env.ns.appB, modes: ['ReadOnly'] }] } },
    );
    const owner = await access({ namespace: env.ns.appA, name: 'one' });
    const put = s3Client(owner.local, owner.creds);
    await put.send(new PutObjectCommand({ Bucket: owner.bucket, Key: 'report.txt', Body: 'numbers' }));
    put.destroy();
    await env.control.create(BucketAccesses, {
      apiVersion: BucketAccesses.apiVersion,
      kind: 'BucketAccess',
      metadata: { name: 'reader', namespace: env.ns.appB },
      spec: { bucketRef: { namespace: env.ns.appA, name: 'one' }, mode: 'ReadOnly', writeConnectionSecretToRef: { name: 'reader-s3' } },
    } as KubeObjectLike);
    const keys = await eventually(
      async () => {
        const a = await env.control.get<Obj & { status?: { bindingPhase?: string } }>(BucketAccesses, {
          namespace: env.ns.appB,
          name: 'reader',
        });
        if (a?.status?.bindingPhase !== 'Bound' || cond(a, 'Ready')?.status !== 'True') return undefined;
        return secretText((await env.control.get<Obj>(Secrets, { namespace: env.ns.appB, name: 'reader-s3' }))?.data);
      },
      'the read-only grant to be Bound',
      {
        timeoutMs: 90_000,
        explain: async () =>
          JSON.stringify((await env.control.get<Obj>(BucketAccesses, { namespace: env.ns.appB, name: 'reader' }))?.status),
      },
    );
    expect(keys.BUCKET_NAME).toBe(owner.bucket);
    expect(keys.AWS_ACCESS_KEY_ID).not.toBe(owner.creds.accessKey);
    const s3 = s3Client(owner.local, { accessKey: keys.AWS_ACCESS_KEY_ID!, secretKey: keys.AWS_SECRET_ACCESS_KEY! });
    try {
      const got = await s3.send(new GetObjectCommand({ Bucket: owner.bucket, Key: 'report.txt' }));
      expect(await got.Body!.transformToString()).toBe('numbers');
      expect(await refusal(s3.send(new PutObjectCommand({ Bucket: owner.bucket, Key: 'x', Body: 'x' })))).toBe('AccessDenied');
      await env.control.delete(BucketAccesses, { namespace: env.ns.appB, name: 'reader' });
      await eventually(
        async () => (await refusal(s3.send(new GetObjectCommand({ Bucket: owner.bucket, Key: 'report.txt' })))) === 'InvalidAccessKeyId',
        'the revoked grant to be refused',
        30_000,
      );
    } finally {
      s3.destroy();
    }
    // The owner's bucket and objects are untouched by the grant's going.
    const again = s3Client(owner.local, owner.creds);
    try {
      const got = await again.send(new GetObjectCommand({ Bucket: owner.bucket, Key: 'report.txt' }));
      expect(await got.Body!.transformToString()).toBe('numbers');
    } finally {
      again.destroy();
    }
  }, 150_000);

  it("deleting a claim removes its user; its bucket and objects stay in the store (deleteObjects is off), and the other claim's keep working", async () => {
    const b = await access({ namespace: env.ns.appB, name: 'two' });
    const s3 = s3Client(b.local, b.creds);
    await s3.send(new PutObjectCommand({ Bucket: b.bucket, Key: 'keep.txt', Body: 'data' }));
    const mr = await managedOf({ namespace: env.ns.appB, name: 'two' });
    // Its Bucket says Delete, which no update carried away (here: set by hand while the resource is paused).
    const managed = { namespace: env.ns.platform, name: mr };
    await env.control.mergePatch(kinds.SeaweedBucket, managed, { metadata: { annotations: { 'crossplane.io/paused': 'true' } } });
    await eventually(
      async () => cond(await env.control.get<SeaweedBucket>(kinds.SeaweedBucket, managed), 'Synced')?.reason === 'ReconcilePaused',
      'the resource to be paused',
    );
    await env.target.mergePatch(SeaweedBuckets, { namespace: 'sw-shared', name: mr }, { spec: { reclaimPolicy: 'Delete' } });
    await env.control.delete(Buckets, { namespace: env.ns.appB, name: 'two' });
    await eventually(
      async () => Boolean((await env.control.get<SeaweedBucket>(kinds.SeaweedBucket, managed))?.metadata.deletionTimestamp),
      'the resource to be deleting',
    );
    await env.control.mergePatch(kinds.SeaweedBucket, managed, { metadata: { annotations: { 'crossplane.io/paused': null } } });
    await eventually(
      async () => (await env.control.get(kinds.SeaweedBucket, { namespace: env.ns.platform, name: mr })) === undefined,
      'the SeaweedBucket to be gone',
      60_000,
    );
    for (const type of [S3Identities, S3CredentialsType, S3Policies, S3PolicyBindings, SeaweedBuckets, Secrets]) {
      const name = type === Secrets ? `${mr}-keys` : type === S3Policies || type === S3PolicyBindings ? `${mr}-policy` : mr;
      expect(await env.target.get(type, { namespace: 'sw-shared', name })).toBeUndefined();
    }
    try {
      await eventually(
        async () => (await refusal(s3.send(new ListObjectsV2Command({ Bucket: b.bucket })))) === 'InvalidAccessKeyId',
        "the deleted claim's keys to be refused",
        30_000,
      );
    } finally {
      s3.destroy();
    }
    // The store still holds the bucket with its object (the operator's Bucket was Retain).
    const admin = operator.admin({ namespace: 'sw-shared', name: 'shared' });
    const root = s3Client(admin.endpoint, admin.root);
    try {
      await root.send(new HeadBucketCommand({ Bucket: b.bucket }));
      const got = await root.send(new GetObjectCommand({ Bucket: b.bucket, Key: 'keep.txt' }));
      expect(await got.Body!.transformToString()).toBe('data');
    } finally {
      root.destroy();
    }
    const a = await access({ namespace: env.ns.appA, name: 'one' });
    await roundTrip(a.local, a.creds, a.bucket);
  }, 150_000);
});

describe('shared stores a bucket cannot be made in', () => {
  const refused = (name: string) =>
    eventually(async () => {
      const c = cond(await env.control.get<Bucket>(Buckets, { namespace: env.ns.appA, name }), 'Synced');
      return c?.status === 'False' ? c : undefined;
    }, `Bucket ${name} to be refused`);

  it('one that does not exist, and one in a namespace the Provider does not allow (it is not Ready, and says why): the claim waits, saying so', async () => {
    await env.control.create(Buckets, claim({ namespace: env.ns.appA, name: 'nowhere' }, 'missing'));
    expect(await refused('nowhere')).toMatchObject({
      reason: 'SharedStoreNotFound',
      message: expect.stringMatching(/no-such-store, which does not exist/),
    });
    const store = await eventually(async () => {
      const s = await env.control.get<Obj>(kinds.SeaweedStore, { namespace: env.ns.platform, name: 'forbidden' });
      return cond(s, 'Synced')?.status === 'False' ? cond(s, 'Synced') : undefined;
    }, 'the SeaweedStore in kube-system to be refused');
    expect(store).toMatchObject({ reason: 'TargetNamespaceNotAllowed' });
    expect(await env.target.get(Seaweeds, { namespace: 'kube-system', name: 'forbidden' })).toBeUndefined();
    await env.control.create(Buckets, claim({ namespace: env.ns.appA, name: 'walled' }, 'forbidden'));
    expect(await refused('walled')).toMatchObject({ reason: 'SharedStoreNotReady' });
    for (const name of ['nowhere', 'walled'])
      expect((await env.control.get<Bucket>(Buckets, { namespace: env.ns.appA, name }))?.spec.resourceRef).toBeUndefined();
  });

  it('a bucket made when endpoints were short publishes its Service by its full name, in the domain its store names now', async () => {
    // As made before the upgrade: its spec (fixed at creation) records the short name.
    const name = 'before-upgrade';
    await apply(
      kinds.SeaweedBucket,
      { namespace: env.ns.platform, name },
      {
        forProvider: {
          bucketName: 'before-upgrade',
          store: { name: 'shared', seaweed: 'shared', endpoint: 'http://shared-s3.sw-shared.svc:8333' },
        },
        providerRef: { name: 't' },
        targetNamespace: 'sw-shared',
        reclaimPolicy: 'Delete',
        writeConnectionSecretToRef: { name },
      },
    );
    const published = (endpoint: string) =>
      eventually(
        async () => {
          const got = secretText((await env.control.get<Obj>(Secrets, { namespace: env.ns.platform, name }))?.data).endpoint;
          return got === endpoint ? got : undefined;
        },
        `the bucket's Secret to name ${endpoint}`,
        30_000,
      );
    await published('http://shared-s3.sw-shared.svc.cluster.local:8333');
    // Its store names another domain: the bucket follows, without a change of its own.
    await env.control.mergePatch(
      kinds.SeaweedStore,
      { namespace: env.ns.platform, name: 'shared' },
      { spec: { forProvider: { clusterDomain: 'k8s.example' } } },
    );
    try {
      await published('http://shared-s3.sw-shared.svc.k8s.example:8333');
      const store = await env.control.get<Obj & { status?: { atProvider?: { endpoint?: string } } }>(kinds.SeaweedStore, {
        namespace: env.ns.platform,
        name: 'shared',
      });
      expect(store?.status?.atProvider?.endpoint).toBe('http://shared-s3.sw-shared.svc.k8s.example:8333');
    } finally {
      await env.control.mergePatch(
        kinds.SeaweedStore,
        { namespace: env.ns.platform, name: 'shared' },
        { spec: { forProvider: { clusterDomain: null } } },
      );
    }
    await published('http://shared-s3.sw-shared.svc.cluster.local:8333');
    await env.control.delete(kinds.SeaweedBucket, { namespace: env.ns.platform, name });
    await eventually(
      async () => (await env.control.get(kinds.SeaweedBucket, { namespace: env.ns.platform, name })) === undefined,
      'the bucket gone',
      30_000,
    );
  }, 90_000);
});

describe('a SeaweedFS store per claim', () => {
  it('makes a Seaweed with a persistent filer in a namespace of its own, and a bucket user that reaches only its bucket', async () => {
    await env.control.create(Buckets, claim({ namespace: env.ns.appA, name: 'own' }, 'dedicated'));
    await bound({ namespace: env.ns.appA, name: 'own' });
    const mr = await managedOf({ namespace: env.ns.appA, name: 'own' });
    const ns = `seaweedfs-${mr}`;
    const seaweed = await env.target.get<Obj & { spec: { filer: { persistence: { enabled: boolean } } } }>(Seaweeds, {
      namespace: ns,
      name: mr,
    });
    expect(seaweed?.spec.filer.persistence.enabled).toBe(true);
    // Its master reports nothing off its cluster.
    expect((seaweed?.spec as { master?: { extraArgs?: string[] } }).master?.extraArgs).toContain('-telemetry=false');
    // SeaweedFS's own ports (master, volume servers, filer, and their gRPC) take no credentials: only
    // the store's own servers and its operator may reach them; its S3 gateway, anyone.
    const isolation = (await env.target.get<Obj & { spec: unknown }>(NetworkPolicies, { namespace: ns, name: `${mr}-ingress` }))!;
    const servers = { matchLabels: { 'app.kubernetes.io/name': 'seaweedfs', 'app.kubernetes.io/instance': mr } };
    const wanted = {
      podSelector: servers,
      policyTypes: ['Ingress'],
      ingress: [
        { from: [{ podSelector: servers }] },
        { from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': seaweedfsOperator.defaultNamespace } } }] },
        { ports: [{ protocol: 'TCP', port: 8333 }] },
      ],
    };
    expect(isolation.spec).toEqual(wanted);
    // Opened to all, it is closed again from its watch.
    await env.target.mergePatch(NetworkPolicies, { namespace: ns, name: `${mr}-ingress` }, { spec: { ingress: [{}] } });
    await eventually(
      async () =>
        isDeepStrictEqual(
          (await env.target.get<Obj & { spec: unknown }>(NetworkPolicies, { namespace: ns, name: `${mr}-ingress` }))?.spec,
          wanted,
        ),
      'the NetworkPolicy to be restored',
    );
    // Its bucket stays part of it: without one, nothing would name its user's objects, nor remove them.
    const dropped = await env.control
      .mergePatch(kinds.SeaweedStore, { namespace: env.ns.platform, name: mr }, { spec: { bucket: null } })
      .then(
        () => 'admitted',
        (e: unknown) => (e as Error).message,
      );
    expect(dropped).toMatch(/bucket cannot be removed/);
    const own = await access({ namespace: env.ns.appA, name: 'own' });
    expect(own.keys.endpoint).toBe(`http://${mr}-s3.${ns}.svc.cluster.local:8333`);
    await roundTrip(own.local, own.creds, own.bucket);
    // Its user reaches only its bucket: a bucket of its own making is refused.
    const s3 = s3Client(own.local, own.creds);
    try {
      expect(await refusal(s3.send(new ListObjectsV2Command({ Bucket: 'elsewhere' })))).toMatch(/AccessDenied|NoSuchBucket/);
    } finally {
      s3.destroy();
    }
    // Another claim's keys are unknown to this store.
    const a = await access({ namespace: env.ns.appA, name: 'one' });
    const other = s3Client(own.local, a.creds);
    try {
      expect(await refusal(other.send(new ListObjectsV2Command({ Bucket: own.bucket })))).toBe('InvalidAccessKeyId');
    } finally {
      other.destroy();
    }
  }, 150_000);

  it("a claim whose store's name is too long for what the operator derives from it gets a Seaweed under a shorter one, and works", async () => {
    // "<namespace>-<claim>-<5 characters>", 52 characters: the operator's <name>-volume-peer Service
    // and its StatefulSets' pods would be refused, and the store never Ready.
    const key = { namespace: env.ns.appB, name: 'an-archive-of-invoices-kept-for-the-auditors' };
    await env.control.create(Buckets, claim(key, 'dedicated'));
    await bound(key);
    const mr = await managedOf(key);
    expect(mr.length).toBeGreaterThan(45);
    const name = seaweedNameFor(mr);
    expect(name.length).toBeLessThanOrEqual(45);
    expect(await env.target.get(Seaweeds, { namespace: `seaweedfs-${mr}`, name })).toBeDefined();
    const stored = await env.control.get<Obj & { metadata: { annotations?: Record<string, string> } }>(kinds.SeaweedStore, {
      namespace: env.ns.platform,
      name: mr,
    });
    expect(stored?.metadata.annotations?.['crossplane.io/external-name']).toBe(name);
    const own = await access(key);
    expect(own.keys.endpoint).toBe(`http://${name}-s3.seaweedfs-${mr}.svc.cluster.local:8333`);
    await roundTrip(own.local, own.creds, own.bucket);
  }, 150_000);

  it('deleting the claim keeps its store (its bucket may hold objects), marked Retain, and says so; a class that lets objects go deletes it', async () => {
    const mr = await managedOf({ namespace: env.ns.appA, name: 'own' });
    const ns = `seaweedfs-${mr}`;
    const own = await access({ namespace: env.ns.appA, name: 'own' });
    await env.control.delete(Buckets, { namespace: env.ns.appA, name: 'own' });
    await eventually(
      async () => (await env.control.get(kinds.SeaweedStore, { namespace: env.ns.platform, name: mr })) === undefined,
      'the SeaweedStore to be gone',
      90_000,
    );
    const kept = await env.target.get<Obj & { metadata: { annotations?: Record<string, string> } }>(Seaweeds, { namespace: ns, name: mr });
    expect(kept?.metadata.annotations?.[ANNOTATION_RECLAIM_POLICY]).toBe('Retain');
    const events = await eventsFor(env.control, { namespace: env.ns.platform, name: mr });
    expect(events.find((e) => e.reason === 'KeptInTarget')?.message).toMatch(/deleteObjects is off/);
    // The store and its bucket are kept; no one's access to them is: the claim's user and keys go.
    for (const type of [S3Identities, S3CredentialsType, S3Policies, S3PolicyBindings]) {
      const { items } = await env.target.list<Obj & { metadata: { deletionTimestamp?: string } }>(type, { namespace: ns });
      expect(items.filter((o) => !o.metadata.deletionTimestamp).map((o) => `${type.kind} ${o.metadata.name}`)).toEqual([]);
    }
    expect((await env.target.list(SeaweedBuckets, { namespace: ns })).items).toHaveLength(1);
    const gone = s3Client(own.local, own.creds);
    try {
      await eventually(
        async () => (await refusal(gone.send(new ListObjectsV2Command({ Bucket: own.bucket })))) === 'InvalidAccessKeyId',
        "the deleted claim's keys to be refused by the kept store",
      );
    } finally {
      gone.destroy();
    }
    // The same with a class whose claims' objects may go: nothing is left in the target.
    await apply(
      kinds.SeaweedStoreClass,
      { namespace: env.ns.platform, name: 'disposable' },
      { providerRef: { name: 't' }, deleteObjects: true },
    );
    await apply(
      BucketClasses,
      { namespace: env.ns.appB, name: 'disposable' },
      {
        classRef: {
          apiVersion: kinds.SeaweedStoreClass.apiVersion,
          kind: 'SeaweedStoreClass',
          name: 'disposable',
          namespace: env.ns.platform,
        },
      },
      true,
    );
    await env.control.create(Buckets, claim({ namespace: env.ns.appB, name: 'brief' }, 'disposable'));
    await bound({ namespace: env.ns.appB, name: 'brief' });
    const brief = await managedOf({ namespace: env.ns.appB, name: 'brief' });
    await env.control.delete(Buckets, { namespace: env.ns.appB, name: 'brief' });
    await eventually(
      async () => (await env.control.get(kinds.SeaweedStore, { namespace: env.ns.platform, name: brief })) === undefined,
      'the SeaweedStore to be gone',
      90_000,
    );
    for (const type of [Seaweeds, S3Identities, S3CredentialsType, S3Policies, S3PolicyBindings, SeaweedBuckets]) {
      const { items } = await env.target.list(type, { namespace: `seaweedfs-${brief}` });
      expect(items.map((o) => `${type.kind} ${o.metadata.name}`)).toEqual([]);
    }
  }, 240_000);
});

describe('deletions the SeaweedFS operator cannot help with', () => {
  /** Pauses the claim's resource, does `meanwhile` in the target, deletes the claim, and lets the resource go on. */
  const deleteBehind = async (type: ResourceType, claimKey: Required<ObjectKey>, meanwhile: (mr: string) => Promise<void>) => {
    const mr = await managedOf(claimKey);
    const managed = { namespace: env.ns.platform, name: mr };
    await env.control.mergePatch(type, managed, { metadata: { annotations: { 'crossplane.io/paused': 'true' } } });
    await eventually(
      async () => cond(await env.control.get<SeaweedBucket>(type, managed), 'Synced')?.reason === 'ReconcilePaused',
      'the resource to be paused',
    );
    await meanwhile(mr);
    await env.control.delete(Buckets, claimKey);
    await eventually(async () => Boolean((await env.control.get<SeaweedBucket>(type, managed))?.metadata.deletionTimestamp), 'deleting');
    await env.control.mergePatch(type, managed, { metadata: { annotations: { 'crossplane.io/paused': null } } });
    await eventually(async () => (await env.control.get(type, managed)) === undefined, 'the resource to be gone', 60_000);
    return mr;
  };

  it('a bucket to keep whose user is gone already, its Bucket saying Delete: set to Retain before it goes, its objects kept', async () => {
    const key = { namespace: env.ns.appB, name: 'orphaned' };
    await env.control.create(Buckets, claim(key, 'shared'));
    await bound(key);
    const b = await access(key);
    const s3 = s3Client(b.local, b.creds);
    try {
      await s3.send(new PutObjectCommand({ Bucket: b.bucket, Key: 'keep.txt', Body: 'data' }));
    } finally {
      s3.destroy();
    }
    await deleteBehind(kinds.SeaweedBucket, key, async (mr) => {
      await env.target.mergePatch(SeaweedBuckets, { namespace: 'sw-shared', name: mr }, { spec: { reclaimPolicy: 'Delete' } });
      // Its user (the resource's own object) deleted by someone: the teardown has nothing to run on.
      await env.target.delete(S3Identities, { namespace: 'sw-shared', name: mr });
      await eventually(
        async () => (await env.target.get(S3Identities, { namespace: 'sw-shared', name: mr })) === undefined,
        'the user gone',
      );
    });
    const admin = operator.admin({ namespace: 'sw-shared', name: 'shared' });
    const root = s3Client(admin.endpoint, admin.root);
    try {
      const got = await root.send(new GetObjectCommand({ Bucket: b.bucket, Key: 'keep.txt' }));
      expect(await got.Body!.transformToString()).toBe('data');
    } finally {
      root.destroy();
    }
  }, 150_000);

  it("a store of its own whose Seaweed someone deleted: its deletion ends (nothing waits on the operator's objects for good)", async () => {
    const key = { namespace: env.ns.appB, name: 'headless' };
    await env.control.create(Buckets, claim(key, 'disposable'));
    await bound(key);
    await deleteBehind(kinds.SeaweedStore, key, async (mr) => {
      await env.target.delete(Seaweeds, { namespace: `seaweedfs-${mr}`, name: mr });
      await eventually(
        async () => (await env.target.get(Seaweeds, { namespace: `seaweedfs-${mr}`, name: mr })) === undefined,
        'the Seaweed gone',
      );
    });
  }, 150_000);
});

describe('bucket features on the claim', () => {
  const vault = {
    versioning: 'Enabled',
    objectLock: true,
    quota: { size: '1Mi' },
    lifecycle: {
      rules: [
        { id: 'logs', prefix: 'logs/', expirationDays: 7 },
        { id: 'old', noncurrentVersionExpirationDays: 30 },
      ],
    },
  };
  const synced = ({ namespace, name }: Required<ObjectKey>) => refusedBucket(env.control, { namespace, name });

  it("versioning, object lock, a quota and lifecycle rules, each judged by the server through the claim's own keys", async () => {
    await env.control.create(Buckets, claim({ namespace: env.ns.appA, name: 'vault' }, 'dedicated', { features: vault }));
    await bound({ namespace: env.ns.appA, name: 'vault' });
    const v = await access({ namespace: env.ns.appA, name: 'vault' });
    const s3 = s3Client(v.local, v.creds);
    try {
      // Versioning: two PUTs of one key leave two versions.
      await s3.send(new PutObjectCommand({ Bucket: v.bucket, Key: 'a.txt', Body: 'one' }));
      await s3.send(new PutObjectCommand({ Bucket: v.bucket, Key: 'a.txt', Body: 'two' }));
      const versions = await s3.send(new ListObjectVersionsCommand({ Bucket: v.bucket, Prefix: 'a.txt' }));
      expect(versions.Versions?.length).toBe(2);
      // Object lock: a version locked until tomorrow cannot be deleted, and is still there.
      const locked = await s3.send(
        new PutObjectCommand({
          Bucket: v.bucket,
          Key: 'locked.txt',
          Body: 'kept',
          ObjectLockMode: 'GOVERNANCE',
          ObjectLockRetainUntilDate: new Date(Date.now() + 86_400_000),
        }),
      );
      expect(locked.VersionId).toBeTruthy();
      await expect(
        s3.send(new DeleteObjectCommand({ Bucket: v.bucket, Key: 'locked.txt', VersionId: locked.VersionId })),
      ).rejects.toThrow();
      const still = await s3.send(new GetObjectCommand({ Bucket: v.bucket, Key: 'locked.txt', VersionId: locked.VersionId }));
      expect(await still.Body!.transformToString()).toBe('kept');
      // Lifecycle: SeaweedFS's admin server's workers carry rules out, and only they: its store runs
      // one, for job s3_lifecycle, beside an admin with credentials of its own.
      const vaultStore = await managedOf({ namespace: env.ns.appA, name: 'vault' });
      const seaweed = await env.target.get<Obj & { spec: { admin?: object; worker?: object } }>(Seaweeds, {
        namespace: `seaweedfs-${vaultStore}`,
        name: seaweedNameFor(vaultStore),
      });
      expect(seaweed?.spec.worker).toEqual({ replicas: 1, jobType: 's3_lifecycle' });
      expect(seaweed?.spec.admin).toEqual({ credentialsSecret: { name: `${seaweedNameFor(vaultStore)}-admin-credentials` } });
      expect(
        await env.target.get(Secrets, { namespace: `seaweedfs-${vaultStore}`, name: `${seaweedNameFor(vaultStore)}-admin-credentials` }),
      ).toBeDefined();
      // The rules are in the bucket's configuration. SeaweedFS lets no policy action read
      // them, so the claim's own user is refused, and they are read as the operator sees them.
      expect(await refusal(s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: v.bucket })))).toBe('AccessDenied');
      const mr = await managedOf({ namespace: env.ns.appA, name: 'vault' });
      const admin = operator.admin({ namespace: `seaweedfs-${mr}`, name: mr });
      const root = s3Client(admin.endpoint, admin.root);
      const rules =
        (await root.send(new GetBucketLifecycleConfigurationCommand({ Bucket: v.bucket })).finally(() => root.destroy())).Rules ?? [];
      expect(rules.map((r) => [r.ID, r.Expiration?.Days, r.NoncurrentVersionExpiration?.NoncurrentDays])).toEqual(
        expect.arrayContaining([
          ['logs', 7, undefined],
          ['old', undefined, 30],
        ]),
      );
      // Quota: once the bucket holds more than 1 MiB, the server refuses writes. Its S3 gateway checks
      // every bucket once a minute; the test runs the same check at once (weed shell's
      // s3.bucket.quota.enforce), which reads the quota provider-rook set through the operator's Bucket.
      const body = Buffer.alloc(700 * 1024, 1);
      const store = { namespace: `seaweedfs-${mr}`, name: mr };
      let n = 0;
      await eventually(
        async () => {
          const refused = await s3.send(new PutObjectCommand({ Bucket: v.bucket, Key: `fill-${n++}`, Body: body })).then(
            () => false,
            (err: Error) => err.name === 'AccessDenied',
          );
          if (!refused) await operator.shellOn(store, ['s3.bucket.quota.enforce -apply']);
          return refused;
        },
        'writes over the quota to be refused',
        { timeoutMs: 150_000, delayMs: 1_000 },
      );
      expect(n).toBeGreaterThan(1);
    } finally {
      s3.destroy();
    }
  }, 240_000);

  it('a change on the claim reaches the bucket; what cannot be undone is refused at admission, naming the field', async () => {
    await env.control.mergePatch(
      Buckets,
      { namespace: env.ns.appA, name: 'vault' },
      {
        spec: { features: { quota: { size: '2Mi' } } },
      },
    );
    const mr = await managedOf({ namespace: env.ns.appA, name: 'vault' });
    await eventually(
      async () => {
        const b = await env.target.get<Obj & { spec: { versioning?: string; quota?: { size: string } } }>(SeaweedBuckets, {
          namespace: `seaweedfs-${mr}`,
          name: `${mr}-bucket`,
        });
        return b?.spec.versioning === 'Enabled' && b.spec.quota?.size === '2Mi';
      },
      "the claim's new quota to reach the operator's Bucket",
      30_000,
    );
    const refused = async (features: object): Promise<string> =>
      env.control.mergePatch(Buckets, { namespace: env.ns.appA, name: 'vault' }, { spec: { features } }).then(
        () => 'accepted',
        (err: Error) => err.message,
      );
    expect(await refused({ versioning: null })).toMatch(/features\.versioning cannot be unset/);
    expect(await refused({ objectLock: false })).toMatch(/features\.objectLock cannot be turned off/);
    expect(await refused({ quota: null })).toMatch(/features\.quota can be changed but not removed/);
    expect(await refused({ quota: { size: '-1Gi' } })).toMatch(/spec\.features\.quota\.size/);
    expect(await refused({ quota: { size: '10000Ti' } })).toMatch(/spec\.features\.quota\.size/);
    const lockWithout = await env.control
      .create(Buckets, claim({ namespace: env.ns.appB, name: 'lock-only' }, 'dedicated', { features: { objectLock: true } }))
      .then(
        () => 'accepted',
        (err: Error) => err.message,
      );
    expect(lockWithout).toMatch(/objectLock needs versioning Enabled/);
  }, 120_000);

  it('refuses what the class forbids, a quota above its limit, and what the backend lacks, with the field named; nothing is made', async () => {
    await env.control.create(
      Buckets,
      claim({ namespace: env.ns.appA, name: 'locked-out' }, 'featured', { features: { versioning: 'Enabled', objectLock: true } }),
    );
    await env.control.create(
      Buckets,
      claim({ namespace: env.ns.appA, name: 'too-big' }, 'featured', { features: { quota: { size: '11Gi' } } }),
    );
    await env.control.create(Buckets, claim({ namespace: env.ns.appA, name: 'on-ceph' }, 'ceph', { features: { versioning: 'Enabled' } }));
    const retention = { versioning: 'Enabled', objectLock: true, defaultRetention: { mode: 'Governance', days: 1 } };
    await env.control.create(Buckets, claim({ namespace: env.ns.appA, name: 'retained' }, 'dedicated', { features: retention }));
    const forbidden = await synced({ namespace: env.ns.appA, name: 'locked-out' });
    expect([forbidden.reason, forbidden.message]).toEqual([
      'FeatureNotAllowed',
      expect.stringMatching(/^spec\.features\.objectLock: class SeaweedBucketClass .*\/featured does not allow it/),
    ]);
    const tooBig = await synced({ namespace: env.ns.appA, name: 'too-big' });
    expect([tooBig.reason, tooBig.message]).toEqual([
      'FeatureNotAllowed',
      expect.stringMatching(/^spec\.features\.quota\.size: 11Gi .*maxQuota 10Gi/),
    ]);
    const lacking = await synced({ namespace: env.ns.appA, name: 'on-ceph' });
    expect([lacking.reason, lacking.message]).toEqual([
      'FeatureNotSupported',
      expect.stringMatching(
        /^spec\.features\.versioning: the backend of CephBucketClass .* does not support versioning \(Rook's ObjectBucketClaim has no versioning\)/,
      ),
    ]);
    const noRetention = await synced({ namespace: env.ns.appA, name: 'retained' });
    expect([noRetention.reason, noRetention.message]).toEqual([
      'FeatureNotSupported',
      expect.stringMatching(/^spec\.features\.defaultRetention: .*SeaweedFS operator's Bucket has no default retention/),
    ]);
    for (const name of ['locked-out', 'too-big', 'on-ceph', 'retained']) {
      expect((await env.control.get<Bucket>(Buckets, { namespace: env.ns.appA, name }))?.spec.resourceRef).toBeUndefined();
    }
    // Within its limits, the class's maxQuota is what a claim that asks for none gets.
    await env.control.create(Buckets, claim({ namespace: env.ns.appA, name: 'capped' }, 'featured'));
    await bound({ namespace: env.ns.appA, name: 'capped' });
    const mr = await managedOf({ namespace: env.ns.appA, name: 'capped' });
    const b = await env.target.get<Obj & { spec: { quota?: { size: string } } }>(SeaweedBuckets, { namespace: 'sw-shared', name: mr });
    expect(b?.spec.quota?.size).toBe('10Gi');
  }, 120_000);
});

describe('key rotation through S3Credentials', () => {
  /** Whether the server takes these keys: a List of their bucket, or the name of its refusal. */
  const answer = async (v: Awaited<ReturnType<typeof access>>): Promise<string> => {
    const s3 = s3Client(v.local, v.creds);
    try {
      return await s3.send(new ListObjectsV2Command({ Bucket: v.bucket })).then(
        () => 'ok',
        (err: Error) => err.name,
      );
    } finally {
      s3.destroy();
    }
  };
  const newKeys = (name: string, than: string) =>
    eventually(
      async () => {
        const k = await access({ namespace: env.ns.appB, name });
        return k.creds.accessKey !== than ? k : undefined;
      },
      `the Secret of ${name} to hold new keys`,
      {
        timeoutMs: 60_000,
        explain: async () => JSON.stringify((await env.control.get<Obj>(Buckets, { namespace: env.ns.appB, name }))?.status),
      },
    );

  it('a change of features its class refuses is said in Synced, and holds up no rotation: the new keys still reach the claim', async () => {
    const key = { namespace: env.ns.appB, name: 'over-quota' };
    await env.control.create(Buckets, claim(key, 'featured'));
    await bound(key);
    const before = await access(key);
    // More than the class allows: refused, said on the claim.
    await env.control.mergePatch(Buckets, key, { spec: { features: { quota: { size: '20Gi' } } } });
    const said = await eventually(
      async () => {
        const c = cond(await env.control.get<Obj>(Buckets, key), 'Synced');
        return c?.status === 'False' && /maxQuota/.test(c.message ?? '') ? c : undefined;
      },
      'the claim to say the change is refused',
      30_000,
    );
    expect(said.message).toMatch(/spec\.features\.quota\.size: 20Gi is more than class .* allows \(maxQuota 10Gi\)/);
    // A rotation asked for now still brings the claim its new keys, before the grace period takes the old.
    await env.control.mergePatch(Buckets, key, { metadata: { annotations: { [ANNOTATION_ROTATE]: 'after-refusal' } } });
    const after = await newKeys('over-quota', before.creds.accessKey);
    await roundTrip(after.local, after.creds, after.bucket);
    expect(cond(await env.control.get<Obj>(Buckets, key), 'Synced')?.status).toBe('False');
  }, 120_000);

  it('new keys beside the old: both work in the grace period, the old are refused after it, and the S3Credentials of the old go', async () => {
    await env.control.create(Buckets, claim({ namespace: env.ns.appB, name: 'turn' }, 'rotating'));
    await bound({ namespace: env.ns.appB, name: 'turn' });
    const before = await access({ namespace: env.ns.appB, name: 'turn' });
    await env.control.mergePatch(
      Buckets,
      { namespace: env.ns.appB, name: 'turn' },
      { metadata: { annotations: { [ANNOTATION_ROTATE]: 'first' } } },
    );
    const after = await newKeys('turn', before.creds.accessKey);
    await roundTrip(after.local, after.creds, after.bucket);
    expect(await answer(before)).toBe('ok');
    const mr = await managedOf({ namespace: env.ns.appB, name: 'turn' });
    // Each generation's keys have an S3Credentials (and a Secret) of their own, registered with the one user.
    const registered = (
      await env.target.get<Obj & { status?: { accessKey?: string } }>(S3CredentialsType, { namespace: 'sw-shared', name: `${mr}-g1` })
    )?.status;
    expect(registered?.accessKey).toBe(after.creds.accessKey);
    const until = await eventually(async () => {
      const st = (
        await env.control.get<Obj & { status?: { credentials?: { previousValidUntil?: string } } }>(Buckets, {
          namespace: env.ns.appB,
          name: 'turn',
        })
      )?.status;
      return st?.credentials?.previousValidUntil ? Date.parse(st.credentials.previousValidUntil) : undefined;
    }, 'the claim to say until when the old keys work');
    await eventually(async () => (await answer(before)) === 'InvalidAccessKeyId', 'the old keys to be refused', {
      timeoutMs: (GRACE_S + 30) * 1000,
    });
    expect(Date.now()).toBeGreaterThanOrEqual(until);
    await eventually(
      async () =>
        (await env.target.get(S3CredentialsType, { namespace: 'sw-shared', name: mr })) === undefined &&
        (await env.target.get(Secrets, { namespace: 'sw-shared', name: `${mr}-keys` })) === undefined,
      "the old generation's S3Credentials and Secret to be gone",
    );
    // The resource's record of its companions names the new generation's, and drops the retired
    // ones': it would otherwise grow with every rotation.
    const recorded = async () =>
      Object.keys(
        JSON.parse(
          (
            await env.control.get<Obj & { metadata: { annotations?: Record<string, string> } }>(kinds.SeaweedBucket, {
              namespace: env.ns.platform,
              name: mr,
            })
          )?.metadata.annotations?.[ANNOTATION_COMPANION_UIDS] ?? '{}',
        ) as object,
      );
    const retired = [`/S3Credentials/sw-shared/${mr}`, `v1/Secret/sw-shared/${mr}-keys`];
    await eventually(
      async () => {
        const keys = await recorded();
        return keys.some((k) => k.endsWith(`/S3Credentials/sw-shared/${mr}-g1`)) && !keys.some((k) => retired.some((r) => k.endsWith(r)));
      },
      "the record of companions to drop the retired generation's",
      { explain: async () => JSON.stringify(await recorded()) },
    );
    await roundTrip(after.local, after.creds, after.bucket);
  }, 120_000);

  it("a store of its own rotates its bucket user's keys the same way, in the store's own namespace", async () => {
    await env.control.create(Buckets, claim({ namespace: env.ns.appB, name: 'own-turn' }, 'rotating-dedicated'));
    await bound({ namespace: env.ns.appB, name: 'own-turn' });
    const before = await access({ namespace: env.ns.appB, name: 'own-turn' });
    await env.control.mergePatch(
      Buckets,
      { namespace: env.ns.appB, name: 'own-turn' },
      { metadata: { annotations: { [ANNOTATION_ROTATE]: 'first' } } },
    );
    const after = await newKeys('own-turn', before.creds.accessKey);
    await roundTrip(after.local, after.creds, after.bucket);
    expect(await answer(before)).toBe('ok');
    const mr = await managedOf({ namespace: env.ns.appB, name: 'own-turn' });
    const ns = `seaweedfs-${mr}`;
    const registered = (
      await env.target.get<Obj & { status?: { accessKey?: string } }>(S3CredentialsType, { namespace: ns, name: `${mr}-bucket-g1` })
    )?.status;
    expect(registered?.accessKey).toBe(after.creds.accessKey);
    await eventually(async () => (await answer(before)) === 'InvalidAccessKeyId', 'the old keys to be refused', {
      timeoutMs: (GRACE_S + 30) * 1000,
    });
    await eventually(
      async () =>
        (await env.target.get(S3CredentialsType, { namespace: ns, name: `${mr}-bucket` })) === undefined &&
        (await env.target.get(Secrets, { namespace: ns, name: `${mr}-bucket-keys` })) === undefined,
      "the old generation's S3Credentials and Secret to be gone",
    );
    await roundTrip(after.local, after.creds, after.bucket);
  }, 150_000);

  it('deleting the claim in a grace period removes the keys of both generations', async () => {
    const current = await access({ namespace: env.ns.appB, name: 'turn' });
    const mr = await managedOf({ namespace: env.ns.appB, name: 'turn' });
    await env.control.mergePatch(
      Buckets,
      { namespace: env.ns.appB, name: 'turn' },
      { metadata: { annotations: { [ANNOTATION_ROTATE]: 'second' } } },
    );
    const last = await newKeys('turn', current.creds.accessKey);
    await env.control.delete(Buckets, { namespace: env.ns.appB, name: 'turn' });
    await eventually(
      async () => (await env.control.get(kinds.SeaweedBucket, { namespace: env.ns.platform, name: mr })) === undefined,
      'the SeaweedBucket to be gone',
      60_000,
    );
    for (const k of [current, last]) expect(await answer(k)).toBe('InvalidAccessKeyId');
    const { items } = await env.target.list(S3CredentialsType, { namespace: 'sw-shared' });
    expect(items.map((o) => o.metadata.name).filter((n) => n.startsWith(mr))).toEqual([]);
  }, 120_000);
});

describe('the samples', () => {
  it('config/samples/seaweedfs/ is admitted by the API server as written (a dry run, in namespaces of this test)', async () => {
    const dir = path.join(repoRoot, 'config', 'samples', 'seaweedfs');
    const docs = readdirSync(dir)
      .filter((f) => f.endsWith('.yaml'))
      .sort()
      .flatMap((f) => loadManifests(path.join(dir, f)));
    expect(docs.map((d) => d.kind)).toEqual(
      expect.arrayContaining(['SeaweedStore', 'SeaweedBucketClass', 'SeaweedStoreClass', 'BucketClass', 'Bucket']),
    );
    const into: Record<string, string> = { 'rook-infra-dev': env.ns.platform, 'app-project1-dev': env.ns.appA };
    for (const doc of docs) {
      const type = Object.values(kinds).find((k) => k.kind === doc.kind) ?? [Buckets, BucketClasses].find((k) => k.kind === doc.kind)!;
      const placed = { ...doc, metadata: { ...doc.metadata, namespace: into[doc.metadata.namespace ?? ''] ?? doc.metadata.namespace } };
      const applied = await env.control.apply(type, placed as KubeObjectLike, undefined, { dryRun: true });
      expect([doc.kind, applied.metadata.name]).toEqual([doc.kind, doc.metadata.name]);
    }
  });
});
