// Access nobody granted, tried as app teams and target tenants would: with their own tokens and least
// roles (config/rbac/app-team.yaml in one namespace; a Role in one target namespace), against real
// API servers and real S3 servers that judge each user's policy.
// - H1: an app team points its Bound Bucket at another team's resource, then grants itself access.
// - H2: a ReadOnly grantee points a Bucket of its own at its grant's resource, then grants itself ReadWrite.
// - H3: a grantee strips its BucketAccess's finalizer and deletes it (and makes it again), to keep its
//   user after the owner stops sharing; or leaves it going, held by a finalizer of its own.
// - F2: a target tenant rewrites a store's endpoint Service (stripping its marks), or replaces it.
// Each also checks that nothing was lost: the victim's objects, and no key reaching what it was not granted.
import { applyObject } from '../kit/manifests.ts';
import type { ObjectKey } from '../../src/kit/kube/object-key.ts';
import { describe, expect, it } from '@jest/globals';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { BucketAccesses, BucketClasses, Buckets } from '../../src/app.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { Bucket } from '../../src/apis/storage.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Jobs, Secrets, Services, type ResourceType } from '../../src/kit/kube/resources.ts';
import { secretText } from '../../src/runtime/providers/credentials.ts';
import { testCluster } from '../kit/env.ts';
import { identityClient, tenantClient } from '../kit/provider.ts';
import { refusal, roundTrip, s3Client } from '../kit/s3.ts';
import { resolveS3Endpoint } from '../fakes/s3-stores.ts';
import { eventually } from '../kit/eventually.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { cond } from '../kit/conditions.ts';

const TARGET = `it-tenancy-${process.pid}`;
type Cond = { type: string; status: string; reason: string; message?: string };
type Obj = KubeObjectLike & {
  metadata: KubeObjectLike['metadata'] & { labels?: Record<string, string>; annotations?: Record<string, string>; finalizers?: string[] };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  status?: { conditions?: Cond[]; bindingPhase?: string };
};

const env = withProviderRook({
  cluster: TARGET,
  namespaces: { platform: 'ten-infra', teamA: 'ten-a', teamB: 'ten-b', teamC: 'ten-c' },
  provider: { name: 't', in: 'platform' },
  s3: true,
  roles: true,
  timeoutMs: 240_000,
  before: async () => {
    const apply = (type: ResourceType, key: Required<ObjectKey>, body: object) => applyObject(env.control, type, key, body);
    await apply(
      kinds.ObjectStore,
      { namespace: env.ns.platform, name: 'shared' },
      {
        spec: { forProvider: { scope: { nodeCount: 4 } }, targetNamespace: SHARED_NS, providerRef: { name: 't' } },
      },
    );
    await apply(
      kinds.MinioBucketClass,
      { namespace: env.ns.platform, name: 'shared' },
      { spec: { store: { kind: 'ObjectStore', name: 'shared' } } },
    );
    await apply(
      kinds.ObjectStoreClass,
      { namespace: env.ns.platform, name: 'dedicated' },
      {
        spec: { scope: { nodeCount: 4 }, providerRef: { name: 't' }, targetNamespace: DEDICATED_NS },
      },
    );
    for (const ns of [env.ns.teamA, env.ns.teamB, env.ns.teamC])
      for (const [name, kind] of [
        ['shared', kinds.MinioBucketClass],
        ['dedicated', kinds.ObjectStoreClass],
      ] as const)
        await apply(
          BucketClasses,
          { namespace: ns, name },
          {
            classRef: { apiVersion: kind.apiVersion, kind: kind.kind, name, namespace: env.ns.platform },
          },
        );
    asA = await identityClient(
      testCluster('control'),
      env.control,
      { namespace: env.ns.teamA, name: 'team-a' },
      { role: 'provider-rook:app-team' },
    );
    asC = await identityClient(
      testCluster('control'),
      env.control,
      { namespace: env.ns.teamC, name: 'team-c' },
      { role: 'provider-rook:app-team' },
    );
  },
});
/** Each team's own token, with provider-rook:app-team in its own namespace only. */
let asA: KubeClient;
let asC: KubeClient;
const SHARED_NS = `tenancy-shared-${process.pid}`;
const DEDICATED_NS = `tenancy-dedicated-${process.pid}`;

const bucket = ({ namespace, name }: Required<ObjectKey>, spec: Record<string, unknown> = {}): KubeObjectLike =>
  ({
    apiVersion: Buckets.apiVersion,
    kind: 'Bucket',
    metadata: { name, namespace },
    spec: { classRef: { name: 'shared' }, writeConnectionSecretToRef: { name: `${name}-s3` }, ...spec },
  }) as KubeObjectLike;
const grant = ({ namespace, name }: Required<ObjectKey>, of: { namespace: string; name: string }, mode: string): KubeObjectLike =>
  ({
    apiVersion: BucketAccesses.apiVersion,
    kind: 'BucketAccess',
    metadata: { name, namespace },
    spec: { bucketRef: of, mode, writeConnectionSecretToRef: { name: `${name}-s3` } },
  }) as KubeObjectLike;

const read = (type: ResourceType, { namespace, name }: Required<ObjectKey>) => env.control.get<Obj>(type, { namespace, name });
const bound = (type: ResourceType, { namespace, name }: Required<ObjectKey>) =>
  eventually(
    async () => {
      const o = await read(type, { namespace, name });
      return o?.status?.bindingPhase === 'Bound' && cond(o, 'Ready')?.status === 'True' ? o : undefined;
    },
    `${type.kind} ${namespace}/${name} to be Bound and Ready`,
    { timeoutMs: 60_000, explain: async () => JSON.stringify((await read(type, { namespace, name }))?.status) },
  );
const condition = (type: ResourceType, { namespace, name }: Required<ObjectKey>, kind: string, want: Partial<Cond>) =>
  eventually(
    async () => {
      const c = cond(await read(type, { namespace, name }), kind);
      return c && Object.entries(want).every(([k, v]) => c[k as keyof Cond] === v) ? c : undefined;
    },
    `${type.kind} ${namespace}/${name} to say ${kind} ${JSON.stringify(want)}`,
    { timeoutMs: 45_000, explain: async () => JSON.stringify((await read(type, { namespace, name }))?.status) },
  );

/** A claim's keys, and its endpoint as an app in the target reaches it. */
async function keysOf(secret: string, namespace: string) {
  const keys = secretText((await env.control.get<Obj>(Secrets, { namespace, name: secret }))!.data);
  const local = await resolveS3Endpoint(keys.endpoint!, env.target);
  return { keys, local, creds: { accessKey: keys.AWS_ACCESS_KEY_ID!, secretKey: keys.AWS_SECRET_ACCESS_KEY! }, bucket: keys.BUCKET_NAME! };
}

/** A bucket's object names and contents, read with its owner's keys. */
async function contents(owner: Awaited<ReturnType<typeof keysOf>>): Promise<Record<string, string>> {
  const s3 = s3Client(owner.local, owner.creds);
  try {
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: owner.bucket }));
    const out: Record<string, string> = {};
    for (const o of listed.Contents ?? [])
      out[o.Key!] = await (await s3.send(new GetObjectCommand({ Bucket: owner.bucket, Key: o.Key! }))).Body!.transformToString();
    return out;
  } finally {
    s3.destroy();
  }
}

/** What every MinIO bucket resource of the platform reaches, and for whom: nothing may appear here that nobody granted. */
async function lentBuckets(): Promise<string[]> {
  const { items } = await env.control.list<Obj>(kinds.MinioBucket, { namespace: env.ns.platform });
  return items
    .map((m) => {
      const f = m.spec!.forProvider as { bucketName: string; access: string };
      const by = m.spec!.claimRef as { kind: string; namespace: string; name: string };
      return `${by.kind} ${by.namespace}/${by.name} -> ${f.bucketName} (${f.access})`;
    })
    .sort();
}

/**
 * team-b's Bucket `bucketName`, shared read-only with team-c, and team-c's BucketAccess `accessName`
 * of it, made with team-c's own token: both Bound. The grant's managed resource, as the access names it.
 */
async function grantedToC(bucketName: string, accessName: string): Promise<{ namespace: string; name: string }> {
  const shared = { namespace: env.ns.teamB, name: bucketName };
  await env.control.create(Buckets, bucket(shared, { shareWith: [{ namespace: env.ns.teamC, modes: ['ReadOnly'] }] }));
  await bound(Buckets, shared);
  await asC.create(BucketAccesses, grant({ namespace: env.ns.teamC, name: accessName }, shared, 'ReadOnly'));
  const access = await bound(BucketAccesses, { namespace: env.ns.teamC, name: accessName });
  return (access.spec as { resourceRef: { namespace: string; name: string } }).resourceRef;
}

/** The message an admission refusal gave, or a failure if the write went through. */
async function refused(write: Promise<unknown>): Promise<string> {
  return write.then(
    () => {
      throw new Error('the write was accepted');
    },
    (e: Error) => e.message,
  );
}

describe('an app team reaches only the buckets it was granted', () => {
  it("H1: a Bound Bucket cannot be pointed at another team's resource, and a grant on it reaches only its own bucket", async () => {
    // team-b's bucket, shared with team-c only, holding its data.
    await env.control.create(
      Buckets,
      bucket({ namespace: env.ns.teamB, name: 'ledger' }, { shareWith: [{ namespace: env.ns.teamC, modes: ['ReadOnly'] }] }),
    );
    const victim = await bound(Buckets, { namespace: env.ns.teamB, name: 'ledger' });
    const owner = await keysOf('ledger-s3', env.ns.teamB);
    const s3 = s3Client(owner.local, owner.creds);
    await s3.send(new PutObjectCommand({ Bucket: owner.bucket, Key: 'books.txt', Body: 'ours' }));
    s3.destroy();
    const before = await contents(owner);
    const victimRef = (victim as unknown as Bucket).spec.resourceRef!;

    // team-a, with its own token: a Bucket shared with itself, Bound.
    await asA.create(
      Buckets,
      bucket({ namespace: env.ns.teamA, name: 'mine' }, { shareWith: [{ namespace: env.ns.teamA, modes: ['ReadWrite'] }] }),
    );
    await bound(Buckets, { namespace: env.ns.teamA, name: 'mine' });
    const lentBefore = await lentBuckets();
    // Pointing it at team-b's resource is refused at admission, naming the field; so is another class.
    expect(
      await refused(asA.mergePatch(Buckets, { namespace: env.ns.teamA, name: 'mine' }, { spec: { resourceRef: victimRef } })),
    ).toContain('spec.resourceRef');
    expect(
      await refused(asA.mergePatch(Buckets, { namespace: env.ns.teamA, name: 'mine' }, { spec: { classRef: { name: 'dedicated' } } })),
    ).toContain('spec.classRef');
    // A Bucket made pointing there from the start never binds, so a grant on it waits, holding nothing.
    await asA.create(
      Buckets,
      bucket(
        { namespace: env.ns.teamA, name: 'forged' },
        { resourceRef: victimRef, shareWith: [{ namespace: env.ns.teamA, modes: ['ReadWrite'] }] },
      ),
    );
    await condition(Buckets, { namespace: env.ns.teamA, name: 'forged' }, 'Synced', { status: 'False', reason: 'ManagedResourceNotFound' });
    await asA.create(
      BucketAccesses,
      grant({ namespace: env.ns.teamA, name: 'steal' }, { namespace: env.ns.teamA, name: 'forged' }, 'ReadWrite'),
    );
    await condition(BucketAccesses, { namespace: env.ns.teamA, name: 'steal' }, 'Ready', { status: 'False', reason: 'Binding' });
    // A grant on its own Bucket reaches its own bucket alone.
    await asA.create(
      BucketAccesses,
      grant({ namespace: env.ns.teamA, name: 'own' }, { namespace: env.ns.teamA, name: 'mine' }, 'ReadWrite'),
    );
    await bound(BucketAccesses, { namespace: env.ns.teamA, name: 'own' });
    const own = await keysOf('own-s3', env.ns.teamA);
    expect(own.bucket).not.toBe(owner.bucket);
    const intruder = s3Client(own.local, own.creds);
    try {
      expect(await refusal(intruder.send(new GetObjectCommand({ Bucket: owner.bucket, Key: 'books.txt' })))).toBe('AccessDenied');
      expect(await refusal(intruder.send(new PutObjectCommand({ Bucket: owner.bucket, Key: 'x', Body: 'x' })))).toBe('AccessDenied');
    } finally {
      intruder.destroy();
    }
    // Nothing was lost or lent: team-b's objects and Bucket as they were; the only new user is team-a's on its own bucket.
    expect(await contents(owner)).toEqual(before);
    expect((await read(Buckets, { namespace: env.ns.teamB, name: 'ledger' }))?.status?.bindingPhase).toBe('Bound');
    expect((await lentBuckets()).filter((l) => !lentBefore.includes(l))).toEqual([
      `BucketAccess ${env.ns.teamA}/own -> ${(await keysOf('mine-s3', env.ns.teamA)).bucket} (ReadWrite)`,
    ]);
  }, 180_000);

  it('H2: a ReadOnly grantee cannot give itself ReadWrite through its grant, and loses all access when the owner revokes', async () => {
    await env.control.create(
      Buckets,
      bucket({ namespace: env.ns.teamB, name: 'report' }, { shareWith: [{ namespace: env.ns.teamC, modes: ['ReadOnly'] }] }),
    );
    await bound(Buckets, { namespace: env.ns.teamB, name: 'report' });
    const owner = await keysOf('report-s3', env.ns.teamB);
    const s3 = s3Client(owner.local, owner.creds);
    await s3.send(new PutObjectCommand({ Bucket: owner.bucket, Key: 'q3.txt', Body: 'numbers' }));
    s3.destroy();
    const before = await contents(owner);

    // team-c reads, as allowed; its grant's resource is on team-b's bucket, and its BucketAccess names it.
    await asC.create(
      BucketAccesses,
      grant({ namespace: env.ns.teamC, name: 'reader' }, { namespace: env.ns.teamB, name: 'report' }, 'ReadOnly'),
    );
    const reader = await bound(BucketAccesses, { namespace: env.ns.teamC, name: 'reader' });
    const grantRef = (reader.spec as { resourceRef: Record<string, string> }).resourceRef;
    // Its own Bound Bucket cannot be pointed at that resource; one made pointing there never binds.
    await asC.create(
      Buckets,
      bucket({ namespace: env.ns.teamC, name: 'c-own' }, { shareWith: [{ namespace: env.ns.teamC, modes: ['ReadWrite'] }] }),
    );
    await bound(Buckets, { namespace: env.ns.teamC, name: 'c-own' });
    expect(
      await refused(asC.mergePatch(Buckets, { namespace: env.ns.teamC, name: 'c-own' }, { spec: { resourceRef: grantRef } })),
    ).toContain('spec.resourceRef');
    await asC.create(
      Buckets,
      bucket(
        { namespace: env.ns.teamC, name: 'escalate' },
        { resourceRef: grantRef, shareWith: [{ namespace: env.ns.teamC, modes: ['ReadWrite'] }] },
      ),
    );
    await condition(Buckets, { namespace: env.ns.teamC, name: 'escalate' }, 'Synced', {
      status: 'False',
      reason: 'ManagedResourceNotFound',
    });
    await asC.create(
      BucketAccesses,
      grant({ namespace: env.ns.teamC, name: 'escalated' }, { namespace: env.ns.teamC, name: 'escalate' }, 'ReadWrite'),
    );
    await condition(BucketAccesses, { namespace: env.ns.teamC, name: 'escalated' }, 'Ready', { status: 'False', reason: 'Binding' });
    await asC.create(
      BucketAccesses,
      grant({ namespace: env.ns.teamC, name: 'writer' }, { namespace: env.ns.teamC, name: 'c-own' }, 'ReadWrite'),
    );
    await bound(BucketAccesses, { namespace: env.ns.teamC, name: 'writer' });

    // No key team-c holds may write to team-b's bucket.
    const held = [await keysOf('reader-s3', env.ns.teamC), await keysOf('writer-s3', env.ns.teamC), await keysOf('c-own-s3', env.ns.teamC)];
    for (const k of held) {
      const c = s3Client(k.local, k.creds);
      try {
        expect(await refusal(c.send(new PutObjectCommand({ Bucket: owner.bucket, Key: 'x', Body: 'x' })))).toBe('AccessDenied');
      } finally {
        c.destroy();
      }
    }
    // The owner takes team-c off its list: the read-only user goes, and no key team-c holds reads the bucket any more.
    await env.control.mergePatch(Buckets, { namespace: env.ns.teamB, name: 'report' }, { spec: { shareWith: null } });
    await eventually(
      async () => {
        const answers = await Promise.all(
          held.map(async (k) => {
            const c = s3Client(k.local, k.creds);
            try {
              return await refusal(c.send(new GetObjectCommand({ Bucket: owner.bucket, Key: 'q3.txt' })));
            } finally {
              c.destroy();
            }
          }),
        );
        return answers.every((a) => a === 'AccessDenied' || a === 'InvalidAccessKeyId');
      },
      "every key team-c holds to be refused on team-b's bucket",
      10_000,
    );
    expect(await contents(owner)).toEqual(before);
  }, 180_000);

  it("H3: a grantee that strips its BucketAccess's finalizer and deletes it keeps no user of the bucket", async () => {
    const grantRef = await grantedToC('journal', 'keeper');
    const owner = await keysOf('journal-s3', env.ns.teamB);
    const s3 = s3Client(owner.local, owner.creds);
    await s3.send(new PutObjectCommand({ Bucket: owner.bucket, Key: 'q4.txt', Body: 'figures' }));
    s3.destroy();
    const kept = await keysOf('keeper-s3', env.ns.teamC);
    /** What a GET with the grant's keys gets: 'allowed', or the error's name. */
    const reads = async (): Promise<string> => {
      const c = s3Client(kept.local, kept.creds);
      try {
        await c.send(new GetObjectCommand({ Bucket: owner.bucket, Key: 'q4.txt' }));
        return 'allowed';
      } catch (err) {
        return (err as Error).name;
      } finally {
        c.destroy();
      }
    };
    expect(await reads()).toBe('allowed');
    expect((await read(Buckets, { namespace: env.ns.teamB, name: 'journal' }))?.metadata.labels?.['rook.crossplane.io/granted']).toBe(
      'true',
    );

    // With its own role alone, team-c takes the finalizer off and deletes the access: nothing releases it.
    await asC.mergePatch(BucketAccesses, { namespace: env.ns.teamC, name: 'keeper' }, { metadata: { finalizers: null } });
    await asC.delete(BucketAccesses, { namespace: env.ns.teamC, name: 'keeper' });
    // Its user is revoked all the same: the grant's resource goes, and the keys it kept read nothing.
    await eventually(
      async () => (await env.control.get(kinds.MinioBucket, grantRef)) === undefined,
      "the grant's MinioBucket to be deleted",
      30_000,
    );
    await eventually(async () => ['AccessDenied', 'InvalidAccessKeyId'].includes(await reads()), 'the kept keys to be refused', 20_000);
    // Nothing else holds a user of the Bucket: its owner may delete it again.
    await eventually(
      async () =>
        (await read(Buckets, { namespace: env.ns.teamB, name: 'journal' }))?.metadata.labels?.['rook.crossplane.io/granted'] === undefined,
      "the Bucket's granted mark to go",
      20_000,
    );
    expect(await contents(owner)).toEqual({ 'q4.txt': 'figures' });
  }, 120_000);

  // The test above races provider-rook, which may add the finalizer back before the deletion; done
  // while it is down, nothing can: this one shows the user kept on the code before the fix every time.
  it('H3: the same, done while provider-rook was down: the grant is revoked once it is back', async () => {
    const grantRef = await grantedToC('archive', 'sleeper');
    await env.stop();
    await asC.mergePatch(BucketAccesses, { namespace: env.ns.teamC, name: 'sleeper' }, { metadata: { finalizers: null } });
    await asC.delete(BucketAccesses, { namespace: env.ns.teamC, name: 'sleeper' });
    await env.restart();
    await eventually(
      async () => (await env.control.get(kinds.MinioBucket, grantRef)) === undefined,
      "the grant's MinioBucket to be deleted",
      30_000,
    );
    // The grant said which Bucket it lent from: that Bucket's mark goes, though nothing saw the access go.
    await eventually(
      async () =>
        (await read(Buckets, { namespace: env.ns.teamB, name: 'archive' }))?.metadata.labels?.['rook.crossplane.io/granted'] === undefined,
      "the Bucket's granted mark to go",
      20_000,
    );
  }, 120_000);

  it("H3: an access left going, held by a finalizer of the grantee's own after ours was stripped, keeps no user", async () => {
    const grantRef = await grantedToC('notes', 'limbo');
    await env.stop();
    const key = { namespace: env.ns.teamC, name: 'limbo' };
    await asC.mergePatch(BucketAccesses, key, { metadata: { finalizers: ['team-c.example.com/hold'] } });
    await asC.delete(BucketAccesses, key);
    await env.restart();
    await eventually(
      async () => (await env.control.get(kinds.MinioBucket, grantRef)) === undefined,
      "the grant's MinioBucket to be deleted",
      30_000,
    );
    // Still there, held by the team's own finalizer: provider-rook neither removes nor needs it.
    expect((await read(BucketAccesses, key))?.metadata.finalizers).toEqual(['team-c.example.com/hold']);
    await asC.mergePatch(BucketAccesses, key, { metadata: { finalizers: null } });
  }, 120_000);

  it('H3: an access made again under the name of one whose finalizer was stripped does not inherit, nor keep, the old user', async () => {
    const oldGrant = await grantedToC('minutes', 'again');
    const access = grant({ namespace: env.ns.teamC, name: 'again' }, { namespace: env.ns.teamB, name: 'minutes' }, 'ReadOnly');
    // While provider-rook is down, nothing can put the finalizer back in between.
    await env.stop();
    await asC.mergePatch(BucketAccesses, { namespace: env.ns.teamC, name: 'again' }, { metadata: { finalizers: null } });
    await asC.delete(BucketAccesses, { namespace: env.ns.teamC, name: 'again' });
    await asC.create(BucketAccesses, access);
    await env.restart();
    const second = await bound(BucketAccesses, { namespace: env.ns.teamC, name: 'again' });
    expect((second.spec as { resourceRef: { name: string } }).resourceRef.name).not.toBe(oldGrant.name);
    await eventually(
      async () => (await env.control.get(kinds.MinioBucket, oldGrant)) === undefined,
      "the first access's grant to be deleted",
      30_000,
    );
  }, 120_000);
});

describe("a target tenant cannot redirect a store's claims", () => {
  /** A tenant of the target with a Role on Services in one namespace, with its own token. */
  const tenantOf = (namespace: string): Promise<KubeClient> =>
    tenantClient(
      env.cluster,
      env.target,
      namespace,
      [{ apiGroups: [''], resources: ['services'], verbs: ['get', 'list', 'update', 'patch', 'create', 'delete'] }],
      (c) => c.list(Services, { namespace }),
    );

  /** An ExternalName to the tenant's own host, without provider-rook's marks (what a tenant would write over the Service). */
  const hijacked = (svc: Obj): Obj => {
    const labels = Object.fromEntries(Object.entries(svc.metadata.labels ?? {}).filter(([k]) => !k.startsWith('rook.crossplane.io/')));
    return {
      ...svc,
      metadata: { ...svc.metadata, labels },
      spec: {
        ...svc.spec,
        type: 'ExternalName',
        externalName: 'collector.tenant.example',
        clusterIP: '',
        clusterIPs: undefined,
        selector: undefined,
      },
    };
  };

  /** Each claim with a store: a dedicated one's (team-a) and a shared store's (team-b). */
  const claims = () => [
    {
      name: 'd',
      namespace: env.ns.teamA,
      store: (mr: string) => ({ svc: `${mr}-s3`, ns: DEDICATED_NS, mr: { type: kinds.ObjectStore, name: mr } }),
    },
    {
      name: 's',
      namespace: env.ns.teamB,
      store: () => ({ svc: 'shared-s3', ns: SHARED_NS, mr: { type: kinds.ObjectStore, name: 'shared' } }),
    },
  ];

  it('F2: a Service rewritten in place, its marks stripped, is still known by the uid provider-rook recorded, and repaired', async () => {
    await env.control.create(Buckets, bucket({ namespace: env.ns.teamA, name: 'd' }, { classRef: { name: 'dedicated' } }));
    await env.control.create(
      Buckets,
      bucket({ namespace: env.ns.teamB, name: 's' }, { shareWith: [{ namespace: env.ns.teamC, modes: ['ReadOnly'] }] }),
    );
    for (const c of claims()) {
      const b = (await bound(Buckets, { namespace: c.namespace, name: c.name })) as unknown as Bucket;
      const { svc, ns } = c.store(b.spec.resourceRef!.name);
      const original = (await env.target.get<Obj>(Services, { namespace: ns, name: svc }))!;
      const tenant = await tenantOf(ns);
      await tenant.update(Services, hijacked(original));
      // Repaired in place: the very Service, its type, selector and marks back.
      const repaired = await eventually(
        async () => {
          const now = await env.target.get<Obj>(Services, { namespace: ns, name: svc });
          return now?.spec?.type === 'ClusterIP' && now.metadata.labels?.['rook.crossplane.io/control-plane'] ? now : undefined;
        },
        `Service ${ns}/${svc} to be repaired`,
        {
          timeoutMs: 20_000,
          explain: async () => JSON.stringify((await env.target.get<Obj>(Services, { namespace: ns, name: svc }))?.spec),
        },
      );
      expect(repaired.metadata.uid).toBe(original.metadata.uid);
      expect(repaired.spec?.selector).toEqual(original.spec?.selector);
      // The claim kept working: its keys, through its endpoint, reach its bucket.
      const k = await keysOf(`${c.name}-s3`, c.namespace);
      expect(k.keys.endpoint).toContain(`${svc}.${ns}.svc`);
      await roundTrip(k.local, k.creds, k.bucket);
    }
  }, 180_000);

  it('F2: a Service replaced by a tenant is never written: the store and every claim on it stop being Ready, and their Secrets name no endpoint', async () => {
    // team-c reads team-b's bucket in the shared store: its copy must follow too.
    await asC.create(
      BucketAccesses,
      grant({ namespace: env.ns.teamC, name: 's-reader' }, { namespace: env.ns.teamB, name: 's' }, 'ReadOnly'),
    );
    await bound(BucketAccesses, { namespace: env.ns.teamC, name: 's-reader' });
    for (const c of claims()) {
      const b = (await read(Buckets, { namespace: c.namespace, name: c.name })) as unknown as Bucket;
      const { svc, ns, mr } = c.store(b.spec.resourceRef!.name);
      const tenant = await tenantOf(ns);
      const original = (await env.target.get<Obj>(Services, { namespace: ns, name: svc }))!;
      // Deleted and made again by the tenant, with provider-rook's marks and signature copied over.
      await tenant.delete(Services, { namespace: ns, name: svc });
      const {
        uid: _u,
        resourceVersion: _r,
        creationTimestamp: _c,
        managedFields: _m,
        ...meta
      } = original.metadata as Obj['metadata'] & Record<string, unknown>;
      const theirs = await tenant.create<Obj>(Services, {
        ...original,
        metadata: meta,
        spec: { type: 'ExternalName', externalName: 'collector.tenant.example', ports: (original.spec as { ports: unknown }).ports },
      } as Obj);
      const reason = 'EndpointNotProven';
      await condition(mr.type, { namespace: env.ns.platform, name: mr.name }, 'Ready', { status: 'False', reason });
      await condition(Buckets, { namespace: c.namespace, name: c.name }, 'Ready', { status: 'False', reason });
      const copy = await eventually(
        async () => {
          const s = secretText((await env.control.get<Obj>(Secrets, { namespace: c.namespace, name: `${c.name}-s3` }))?.data);
          return s.endpoint === undefined ? s : undefined;
        },
        `the claim's Secret ${c.namespace}/${c.name}-s3 to name no endpoint`,
        20_000,
      );
      expect(Object.keys(copy)).not.toContain('AWS_ENDPOINT_URL');
      expect(Object.keys(copy)).not.toContain('BUCKET_HOST');
      if (c.name === 's') {
        // A grant's copy loses the endpoint as well, and a grant asked for now makes nothing in the store (its Job would carry root keys there).
        await eventually(
          async () =>
            secretText((await env.control.get<Obj>(Secrets, { namespace: env.ns.teamC, name: 's-reader-s3' }))?.data).endpoint ===
            undefined,
          "the grant's copy to name no endpoint",
          20_000,
        );
        await asC.create(
          BucketAccesses,
          grant({ namespace: env.ns.teamC, name: 's-late' }, { namespace: env.ns.teamB, name: 's' }, 'ReadOnly'),
        );
        const late = await eventually(
          async () =>
            (await env.control.list<Obj>(kinds.MinioBucket, { namespace: env.ns.platform })).items.find(
              (m) => (m.spec!.claimRef as { name: string }).name === 's-late',
            ),
          "the late grant's MinioBucket",
        );
        await condition(kinds.MinioBucket, { namespace: env.ns.platform, name: late.metadata.name }, 'Ready', { status: 'False', reason });
        const jobs = await env.target.list<Obj>(Jobs, {
          namespace: SHARED_NS,
          labelSelector: `rook.crossplane.io/owner-uid=${late.metadata.uid}`,
        });
        expect(jobs.items.map((j) => j.metadata.name)).toEqual([]);
      }
      // The tenant's Service is as the tenant left it.
      const now = (await env.target.get<Obj>(Services, { namespace: ns, name: svc }))!;
      expect([now.metadata.uid, now.metadata.resourceVersion, now.spec?.type]).toEqual([
        theirs.metadata.uid,
        theirs.metadata.resourceVersion,
        'ExternalName',
      ]);
      // Once it is gone, provider-rook makes its own again, and the claim is whole.
      await tenant.delete(Services, { namespace: ns, name: svc });
      await bound(Buckets, { namespace: c.namespace, name: c.name });
      const k = await eventually(async () => {
        const s = await keysOf(`${c.name}-s3`, c.namespace).catch(() => undefined);
        return s?.keys.endpoint ? s : undefined;
      }, 'the endpoint published again');
      await roundTrip(k.local, k.creds, k.bucket);
    }
    // The grants are whole again too: the late one made, both copies naming the endpoint.
    for (const g of ['s-reader', 's-late']) {
      await bound(BucketAccesses, { namespace: env.ns.teamC, name: g });
      const k = await eventually(async () => {
        const s = await keysOf(`${g}-s3`, env.ns.teamC).catch(() => undefined);
        return s?.keys.endpoint ? s : undefined;
      }, `the endpoint in ${g}'s copy again`);
      const reader = s3Client(k.local, k.creds);
      try {
        await reader.send(new ListObjectsV2Command({ Bucket: k.bucket }));
      } finally {
        reader.destroy();
      }
    }
  }, 240_000);

  it('a store switched to observe-only lends its endpoint to no bucket: they stop being Ready, name no endpoint, and come back with it', async () => {
    const mrName = ((await read(Buckets, { namespace: env.ns.teamB, name: 's' })) as unknown as Bucket).spec.resourceRef!.name;
    await env.control.mergePatch(
      kinds.ObjectStore,
      { namespace: env.ns.platform, name: 'shared' },
      { spec: { managementPolicies: ['Observe'] } },
    );
    const c = await condition(kinds.MinioBucket, { namespace: env.ns.platform, name: mrName }, 'Ready', {
      status: 'False',
      reason: 'EndpointNotProven',
    });
    expect(c.message).toContain('is only observed');
    await eventually(
      async () => secretText((await env.control.get<Obj>(Secrets, { namespace: env.ns.teamB, name: 's-s3' }))?.data).endpoint === undefined,
      "the claim's Secret to name no endpoint",
      20_000,
    );
    await env.control.mergePatch(
      kinds.ObjectStore,
      { namespace: env.ns.platform, name: 'shared' },
      { spec: { managementPolicies: ['*'] } },
    );
    await bound(Buckets, { namespace: env.ns.teamB, name: 's' });
    const k = await eventually(async () => {
      const s = await keysOf('s-s3', env.ns.teamB).catch(() => undefined);
      return s?.keys.endpoint ? s : undefined;
    }, 'the endpoint published again');
    await roundTrip(k.local, k.creds, k.bucket);
  }, 120_000);
});
