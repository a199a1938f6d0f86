// Credentials delivered where the app runs: a claim's connection Secret written into a consumer
// cluster that holds no store (it-consumer) and into the store's own cluster, as their Providers
// consent, read there by a client placed in that cluster, and used against the real S3 server.
// A cluster's Service names resolve only for clients placed in it (resolveS3Endpoint); the class's
// exposure is an ingress stand-in on an address of its own, reachable from every cluster.
import { applyObject } from '../kit/manifests.ts';
import type { ObjectKey } from '../../src/kit/kube/object-key.ts';
import { describe, expect, it } from '@jest/globals';
import { withProviderRook } from '../kit/fixture.ts';
import { BucketAccesses, BucketClasses, Buckets } from '../../src/app.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Jobs, Secrets, type ResourceType } from '../../src/kit/kube/resources.ts';
import { ANNOTATION_ROTATE } from '../../src/runtime/labels.ts';
import { secretText } from '../../src/runtime/providers/credentials.ts';
import { Providers } from '../../src/runtime/providers/provider.ts';
import { adminClient, testCluster } from '../kit/env.ts';
import { createNamespace, eventsFor, providerSecretKeys, registerProvider, writeSecret } from '../kit/provider.ts';
import { FreezableProxy } from '../kit/proxy.ts';
import { roundTrip, s3Client } from '../kit/s3.ts';
import { LoopbackIngress } from '../fakes/loopback-ingress.ts';
import { resolveS3Endpoint } from '../fakes/s3-stores.ts';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { eventually } from '../kit/eventually.ts';
import { cond } from '../kit/conditions.ts';

const TARGET = `it-consumers-${process.pid}`;
const SHARED_NS = `consumers-shared-${process.pid}`;
const GRACE_S = 12;
type Cond = { type: string; status: string; reason: string; message?: string };
type Delivery = { to: string; secretName: string; delivered: boolean; endpoint?: string; keys?: string; reason?: string; message?: string };
type Obj = KubeObjectLike & {
  metadata: KubeObjectLike['metadata'] & { labels?: Record<string, string>; resourceVersion?: string; finalizers?: string[] };
  data?: Record<string, string>;
  status?: { conditions?: Cond[]; bindingPhase?: string; deliveries?: Delivery[] };
};

let control: KubeClient;
let target: KubeClient;
let consumer: KubeClient;
let ingress: LoopbackIngress;
let exposedUrl: string;
let platform: string;
let teamA: string;
let teamB: string;
let appA: string;
let appB: string;
let inTarget: string;

const read = (type: ResourceType, { namespace, name }: Required<ObjectKey>) => control.get<Obj>(type, { namespace, name });
const bucket = ({ namespace, name }: Required<ObjectKey>, spec: Record<string, unknown>): KubeObjectLike =>
  ({
    apiVersion: Buckets.apiVersion,
    kind: 'Bucket',
    metadata: { name, namespace },
    spec: { classRef: { name: 'exposed' }, writeConnectionSecretToRef: { name: `${name}-s3` }, ...spec },
  }) as KubeObjectLike;
const to = (provider: string, namespace: string, secretName?: string) => ({
  providerRef: { name: provider, namespace: platform },
  namespace,
  ...(secretName ? { secretName } : {}),
});

const delivered = ({ namespace, name }: Required<ObjectKey>, count: number) =>
  eventually(
    async () => {
      const o = await read(Buckets, { namespace, name });
      const ds = o?.status?.deliveries ?? [];
      return o?.status?.bindingPhase === 'Bound' && cond(o, 'Delivered')?.status === 'True' && ds.length === count ? o : undefined;
    },
    `Bucket ${namespace}/${name} to be Bound and Delivered to ${count} consumers`,
    { timeoutMs: 60_000, explain: async () => JSON.stringify((await read(Buckets, { namespace, name }))?.status) },
  );
const deliveryOf = ({ namespace, name }: Required<ObjectKey>, place: string, reason: string) =>
  eventually(
    async () => (await read(Buckets, { namespace, name }))?.status?.deliveries?.find((d) => d.to === place && d.reason === reason),
    `Bucket ${namespace}/${name} to say ${reason} for ${place}`,
    { timeoutMs: 45_000, explain: async () => JSON.stringify((await read(Buckets, { namespace, name }))?.status) },
  );
const secretIn = async (where: KubeClient, { namespace, name }: Required<ObjectKey>) => where.get<Obj>(Secrets, { namespace, name });
const keysIn = async (where: KubeClient, { namespace, name }: Required<ObjectKey>) =>
  secretText((await secretIn(where, { namespace, name }))?.data);
const creds = (k: Record<string, string>) => ({ accessKey: k.AWS_ACCESS_KEY_ID!, secretKey: k.AWS_SECRET_ACCESS_KEY! });

/** Waits until S3 refuses these keys as unknown (InvalidAccessKeyId). */
async function refusedEventually(endpoint: string, keys: Record<string, string>, what: string, timeoutMs: number): Promise<void> {
  const s3 = s3Client(endpoint, creds(keys));
  try {
    await eventually(
      async () => {
        const answer = await s3.send(new ListObjectsV2Command({ Bucket: keys.BUCKET_NAME! })).then(
          () => 'allowed',
          (e: Error) => e.name,
        );
        return answer === 'InvalidAccessKeyId' ? true : undefined;
      },
      what,
      { timeoutMs },
    );
  } finally {
    s3.destroy();
  }
}

/** A Provider of the consumer cluster reached through a proxy the test can close: `claimNamespace` may deliver into appB. */
async function consumerBehindProxy(name: string, claimNamespace: string): Promise<{ proxy: FreezableProxy; port: number }> {
  const proxy = new FreezableProxy(testCluster('consumer').server);
  const url = await proxy.listen();
  await writeSecret(
    control,
    { namespace: platform, name: `${name}-creds` },
    { ...providerSecretKeys(testCluster('consumer')), endpoint: url },
  );
  await control.apply(Providers, {
    apiVersion: Providers.apiVersion,
    kind: 'Provider',
    metadata: { name, namespace: platform },
    spec: { credentialsSecretRef: { name: `${name}-creds` }, consumers: [{ claimNamespace, namespaces: [appB] }] },
  } as KubeObjectLike);
  return { proxy, port: Number(new URL(url).port) };
}

const rook = withProviderRook({
  cluster: TARGET,
  namespaces: { platform: 'cons-infra', teamA: 'cons-a', teamB: 'cons-b' },
  roles: true,
  s3: true,
  provider: { name: 't', in: 'platform' },
  before: async (f) => {
    ({ control, target } = f);
    ({ platform, teamA, teamB } = f.ns);
    consumer = adminClient(testCluster('consumer'));
    [appA, appB] = [await createNamespace(consumer, 'app-a'), await createNamespace(consumer, 'app-b')];
    inTarget = await createNamespace(target, 'app-t');
    ingress = new LoopbackIngress(`http://shared-s3.${SHARED_NS}.svc.cluster.local:9000`, target);
    exposedUrl = await ingress.listen();
    await registerProvider(control, { namespace: platform, name: 'c' }, testCluster('consumer'));
    await control.mergePatch(
      Providers,
      { namespace: platform, name: 't' },
      { spec: { consumers: [{ claimNamespace: teamA, namespaces: [inTarget] }] } },
    );
    await control.mergePatch(
      Providers,
      { namespace: platform, name: 'c' },
      {
        spec: {
          consumers: [
            { claimNamespace: teamA, namespaces: [appA, 'absent'] },
            { claimNamespace: teamB, namespaces: [appA] },
          ],
        },
      },
    );
    const apply = (type: ResourceType, key: Required<ObjectKey>, body: object) => applyObject(control, type, key, body);
    await apply(
      kinds.ObjectStore,
      { namespace: platform, name: 'shared' },
      {
        spec: { forProvider: { scope: { nodeCount: 4 } }, targetNamespace: SHARED_NS, providerRef: { name: 't' } },
      },
    );
    const store = { kind: 'ObjectStore', name: 'shared' };
    await apply(
      kinds.MinioBucketClass,
      { namespace: platform, name: 'exposed' },
      {
        spec: { store, exposure: { url: exposedUrl }, credentialRotation: { gracePeriod: `${GRACE_S}s` } },
      },
    );
    await apply(kinds.MinioBucketClass, { namespace: platform, name: 'internal' }, { spec: { store } });
    for (const ns of [teamA, teamB])
      for (const name of ['exposed', 'internal'])
        await apply(
          BucketClasses,
          { namespace: ns, name },
          {
            classRef: { apiVersion: kinds.MinioBucketClass.apiVersion, kind: 'MinioBucketClass', name, namespace: platform },
          },
        );
  },
  app: { pollIntervalMs: 1_000 },
  after: () => ingress?.close(),
  timeoutMs: 240_000,
});

describe('a Bound bucket is usable where its app runs', () => {
  it("an app in a cluster without a store reads its Secret there and uses the bucket through the class's exposure; the control copy's endpoint does not resolve there", async () => {
    await control.create(Buckets, bucket({ namespace: teamA, name: 'app' }, { consumers: [to('c', appA), to('t', inTarget)] }));
    const claim = await delivered({ namespace: teamA, name: 'app' }, 2);
    const own = await keysIn(control, { namespace: teamA, name: 'app-s3' });
    const there = await keysIn(consumer, { namespace: appA, name: 'app-s3' });
    // The same keys, but where the store is as it resolves in the consumer's cluster.
    expect(there.AWS_ACCESS_KEY_ID).toBe(own.AWS_ACCESS_KEY_ID);
    expect(there.AWS_SECRET_ACCESS_KEY).toBe(own.AWS_SECRET_ACCESS_KEY);
    expect(there.BUCKET_NAME).toBe(own.BUCKET_NAME);
    expect([there.AWS_REGION, there.AWS_DEFAULT_REGION]).toEqual([own.AWS_REGION, own.AWS_REGION]);
    expect(there.AWS_ENDPOINT_URL).toBe(exposedUrl);
    expect(there.endpoint).toBe(exposedUrl);
    expect(there.AWS_S3_ADDRESSING_STYLE).toBe('path');
    expect(claim.status!.deliveries).toEqual(
      expect.arrayContaining([expect.objectContaining({ to: `${platform}/c/${appA}`, delivered: true, endpoint: 'Exposed' })]),
    );
    // An app there: PUT, GET, LIST and DELETE on the real server, with what it read there.
    await roundTrip(await resolveS3Endpoint(there.endpoint!, consumer), creds(there), there.BUCKET_NAME!);
    // Today's behaviour, a cluster-internal name delivered to a remote consumer, does not resolve there.
    await expect(resolveS3Endpoint(own.endpoint!, consumer)).rejects.toThrow(/no Service/);
    // In the store's own cluster, the Service's name: it resolves there, and works.
    const local = await keysIn(target, { namespace: inTarget, name: 'app-s3' });
    expect(local.endpoint).toBe(own.endpoint);
    await roundTrip(await resolveS3Endpoint(local.endpoint!, target), creds(local), local.BUCKET_NAME!);
    const reasons = (await eventsFor(control, { namespace: teamA, name: 'app' })).map((e) => e.reason);
    expect(reasons.filter((r) => r === 'DeliveredConnectionSecret').length).toBeGreaterThanOrEqual(2);
  }, 180_000);

  it("drift in a consumer's Secret is repaired from that cluster's watch, and a deleted one comes back", async () => {
    const want = await keysIn(consumer, { namespace: appA, name: 'app-s3' });
    await consumer.mergePatch(
      Secrets,
      { namespace: appA, name: 'app-s3' },
      { data: { AWS_SECRET_ACCESS_KEY: Buffer.from('tampered').toString('base64') } },
    );
    await eventually(
      async () =>
        (await keysIn(consumer, { namespace: appA, name: 'app-s3' })).AWS_SECRET_ACCESS_KEY === want.AWS_SECRET_ACCESS_KEY
          ? true
          : undefined,
      'the key repaired',
      {
        timeoutMs: 15_000,
      },
    );
    await consumer.delete(Secrets, { namespace: appA, name: 'app-s3' });
    await eventually(
      async () =>
        (await keysIn(consumer, { namespace: appA, name: 'app-s3' })).AWS_ACCESS_KEY_ID === want.AWS_ACCESS_KEY_ID ? true : undefined,
      'the Secret made again',
      {
        timeoutMs: 15_000,
      },
    );
  }, 60_000);

  it('a delivered Secret a tenant there strips of our marks is left as it is, and the place holds no keys of the claim on record', async () => {
    const key = { namespace: appA, name: 'app-s3' };
    await eventually(
      async () =>
        (await read(Buckets, { namespace: teamA, name: 'app' }))?.status?.deliveries?.find((d) => d.to === `${platform}/c/${appA}`)?.keys,
      'the delivery to record the keys it wrote',
    );
    await consumer.mergePatch(Secrets, key, { metadata: { labels: null, annotations: null } });
    // Not ours any more: not written over, and what it holds no longer holds replaced keys back from removal.
    const conflict = await deliveryOf({ namespace: teamA, name: 'app' }, `${platform}/c/${appA}`, 'ConnectionSecretConflict');
    expect(conflict).not.toHaveProperty('keys');
    await consumer.delete(Secrets, key);
    await delivered({ namespace: teamA, name: 'app' }, 2);
    expect((await keysIn(consumer, key)).AWS_ACCESS_KEY_ID).toBeDefined();
  }, 60_000);

  it('a consumer cluster no reconcile has used for long is kept open by its watch: drift there is still repaired', async () => {
    const want = await keysIn(consumer, { namespace: appA, name: 'app-s3' });
    // Half an hour and more later: idle clients are closed, but not one whose delivered Secrets are watched.
    await rook.app.targets.sweepIdle(Date.now() + 31 * 60_000);
    await consumer.mergePatch(
      Secrets,
      { namespace: appA, name: 'app-s3' },
      { data: { AWS_SECRET_ACCESS_KEY: Buffer.from('tampered').toString('base64') } },
    );
    await eventually(
      async () =>
        (await keysIn(consumer, { namespace: appA, name: 'app-s3' })).AWS_SECRET_ACCESS_KEY === want.AWS_SECRET_ACCESS_KEY
          ? true
          : undefined,
      'the key repaired after the idle sweep',
      { timeoutMs: 15_000 },
    );
  }, 60_000);

  it('rotation reaches every consumer while the old keys still work, and they are refused after the grace period', async () => {
    const old = await keysIn(consumer, { namespace: appA, name: 'app-s3' });
    await control.mergePatch(Buckets, { namespace: teamA, name: 'app' }, { metadata: { annotations: { [ANNOTATION_ROTATE]: 'now' } } });
    const fresh = await eventually(
      async () => {
        const [c, t] = [
          await keysIn(consumer, { namespace: appA, name: 'app-s3' }),
          await keysIn(target, { namespace: inTarget, name: 'app-s3' }),
        ];
        return c.AWS_ACCESS_KEY_ID !== old.AWS_ACCESS_KEY_ID && t.AWS_ACCESS_KEY_ID === c.AWS_ACCESS_KEY_ID ? c : undefined;
      },
      'every consumer to hold the new keys',
      { timeoutMs: 45_000 },
    );
    const endpoint = await resolveS3Endpoint(fresh.endpoint!, consumer);
    await roundTrip(endpoint, creds(fresh), fresh.BUCKET_NAME!);
    await roundTrip(endpoint, creds(old), old.BUCKET_NAME!); // within the grace period
    await refusedEventually(endpoint, old, 'the old keys to be refused after the grace period', (GRACE_S + 40) * 1000);
  }, 120_000);

  it('rotation waits for a consumer cluster that is down: the previous keys outlive the grace period until it holds the new ones', async () => {
    const { proxy, port } = await consumerBehindProxy('slow', teamA);
    await control.create(Buckets, bucket({ namespace: teamA, name: 'held' }, { consumers: [to('slow', appB)] }));
    await delivered({ namespace: teamA, name: 'held' }, 1);
    const old = await keysIn(consumer, { namespace: appB, name: 'held-s3' });
    const endpoint = await resolveS3Endpoint(old.endpoint!, consumer);
    await proxy.close();
    try {
      try {
        await control.mergePatch(
          Buckets,
          { namespace: teamA, name: 'held' },
          { metadata: { annotations: { [ANNOTATION_ROTATE]: 'while-down' } } },
        );
        const fresh = await eventually(
          async () => {
            const k = await keysIn(control, { namespace: teamA, name: 'held-s3' });
            return k.AWS_ACCESS_KEY_ID !== old.AWS_ACCESS_KEY_ID ? k : undefined;
          },
          "the claim's own Secret to hold the new keys",
          { timeoutMs: 45_000 },
        );
        const publishedAt = Date.now();
        await deliveryOf({ namespace: teamA, name: 'held' }, `${platform}/slow/${appB}`, 'ConsumerUnreachable');
        // Well past the grace period (the resource polls every second here), the previous keys still work.
        await eventually(
          async () => (Date.now() - publishedAt > (GRACE_S + 8) * 1000 ? true : undefined),
          'the grace period to be long over',
          {
            timeoutMs: (GRACE_S + 20) * 1000,
            delayMs: 1_000,
          },
        );
        // A drift repaired meanwhile does not remove them either: its write is held as observing is.
        const users = await target.list<Obj>(Secrets, { namespace: SHARED_NS, labelSelector: 'rook.crossplane.io/minio-admin=user' });
        const user = users.items.find((s) => s.data?.accessKey === Buffer.from(fresh.AWS_ACCESS_KEY_ID!).toString('base64'))!;
        const key = { namespace: SHARED_NS, name: user.metadata.name };
        await target.mergePatch(Secrets, key, { data: { 'policy.json': Buffer.from('{}').toString('base64') } });
        await eventually(
          async () => ((await target.get<Obj>(Secrets, key))?.data?.['policy.json'] === user.data!['policy.json'] ? true : undefined),
          "the drift in the bucket user's Secret to be repaired",
          { timeoutMs: 15_000 },
        );
        const retiring = await target.list<Obj>(Jobs, { namespace: SHARED_NS, labelSelector: 'rook.crossplane.io/minio-admin=retire' });
        expect(retiring.items.map((j) => j.metadata.name)).toEqual([]);
        await roundTrip(endpoint, creds(old), old.BUCKET_NAME!);
        await roundTrip(endpoint, creds(fresh), fresh.BUCKET_NAME!);
      } finally {
        await proxy.listen(port);
      }
      // Back: the consumer gets the new keys, and only then are the previous ones refused.
      await eventually(
        async () =>
          (await keysIn(consumer, { namespace: appB, name: 'held-s3' })).AWS_ACCESS_KEY_ID !== old.AWS_ACCESS_KEY_ID ? true : undefined,
        'the consumer to hold the new keys',
        {
          timeoutMs: 45_000,
        },
      );
      await refusedEventually(endpoint, old, 'the previous keys refused once every consumer holds the new ones', 90_000);
    } finally {
      // Closed however the test ends: a proxy left listening would keep jest from exiting.
      await control.delete(Buckets, { namespace: teamA, name: 'held' });
      await proxy.close();
    }
  }, 240_000);

  it('removing one consumer deletes only its Secret; deleting the claim deletes every one, then the claim goes', async () => {
    await control.mergePatch(Buckets, { namespace: teamA, name: 'app' }, { spec: { consumers: [to('c', appA)] } });
    await eventually(
      async () => ((await secretIn(target, { namespace: inTarget, name: 'app-s3' })) ? undefined : true),
      'the Secret in the target deleted',
      {
        timeoutMs: 20_000,
      },
    );
    expect(await secretIn(consumer, { namespace: appA, name: 'app-s3' })).toBeDefined();
    await delivered({ namespace: teamA, name: 'app' }, 1);
    await control.delete(Buckets, { namespace: teamA, name: 'app' });
    await eventually(async () => ((await read(Buckets, { namespace: teamA, name: 'app' })) ? undefined : true), 'the claim gone', {
      timeoutMs: 45_000,
    });
    expect(await secretIn(consumer, { namespace: appA, name: 'app-s3' })).toBeUndefined();
    expect((await eventsFor(control, { namespace: teamA, name: 'app' })).filter((e) => e.reason === 'RemovedConnectionSecret').length).toBe(
      2,
    );
  }, 90_000);

  it('a delivered Secret whose claim went while provider-rook was down, without its finalizer, is swept as a leak at start', async () => {
    await control.create(Buckets, bucket({ namespace: teamA, name: 'orphan' }, { consumers: [to('c', appA, 'orphan-s3')] }));
    await delivered({ namespace: teamA, name: 'orphan' }, 1);
    const marked = await secretIn(consumer, { namespace: appA, name: 'orphan-s3' });
    expect(marked?.metadata.labels?.['rook.crossplane.io/delivered']).toBe('true');
    await rook.stop();
    // While it is down, every finalizer is removed by hand and the claim goes: nothing records the Secret.
    await control.mergePatch(Buckets, { namespace: teamA, name: 'orphan' }, { metadata: { finalizers: null } });
    await control.delete(Buckets, { namespace: teamA, name: 'orphan' });
    await eventually(async () => ((await read(Buckets, { namespace: teamA, name: 'orphan' })) ? undefined : true), 'the claim gone', {
      timeoutMs: 20_000,
    });
    await rook.restart({ pollIntervalMs: 1_000 });
    await eventually(
      async () => ((await secretIn(consumer, { namespace: appA, name: 'orphan-s3' })) ? undefined : true),
      'its delivered Secret swept',
      {
        timeoutMs: 30_000,
      },
    );
  }, 120_000);

  it('a BucketAccess grant delivers its own keys to its consumers, and they reach the shared bucket', async () => {
    await control.create(
      Buckets,
      bucket({ namespace: teamA, name: 'lender' }, { shareWith: [{ namespace: teamB, modes: ['ReadWrite'] }] }),
    );
    await eventually(
      async () => ((await read(Buckets, { namespace: teamA, name: 'lender' }))?.status?.bindingPhase === 'Bound' ? true : undefined),
      'the lender Bound',
      {
        timeoutMs: 60_000,
      },
    );
    await control.create(BucketAccesses, {
      apiVersion: BucketAccesses.apiVersion,
      kind: 'BucketAccess',
      metadata: { name: 'borrow', namespace: teamB },
      spec: {
        bucketRef: { namespace: teamA, name: 'lender' },
        mode: 'ReadWrite',
        writeConnectionSecretToRef: { name: 'borrow-s3' },
        consumers: [to('c', appA, 'borrowed')],
      },
    } as KubeObjectLike);
    const there = await eventually(
      async () => {
        const a = await read(BucketAccesses, { namespace: teamB, name: 'borrow' });
        return cond(a, 'Delivered')?.status === 'True' ? keysIn(consumer, { namespace: appA, name: 'borrowed' }) : undefined;
      },
      'the grant delivered',
      {
        timeoutMs: 60_000,
        explain: async () => JSON.stringify((await read(BucketAccesses, { namespace: teamB, name: 'borrow' }))?.status),
      },
    );
    const own = await keysIn(control, { namespace: teamB, name: 'borrow-s3' });
    expect(there.AWS_ACCESS_KEY_ID).toBe(own.AWS_ACCESS_KEY_ID);
    expect(there.AWS_ACCESS_KEY_ID).not.toBe((await keysIn(control, { namespace: teamA, name: 'lender-s3' })).AWS_ACCESS_KEY_ID);
    expect(there.endpoint).toBe(exposedUrl);
    await roundTrip(await resolveS3Endpoint(there.endpoint!, consumer), creds(there), there.BUCKET_NAME!);
    // The lender stops sharing: the grant is revoked, and its keys leave the consumer cluster too.
    await control.mergePatch(Buckets, { namespace: teamA, name: 'lender' }, { spec: { shareWith: [] } });
    await eventually(
      async () => ((await secretIn(consumer, { namespace: appA, name: 'borrowed' })) ? undefined : true),
      "the revoked grant's Secret deleted",
      {
        timeoutMs: 30_000,
      },
    );
    await control.delete(BucketAccesses, { namespace: teamB, name: 'borrow' });
    await eventually(
      async () => ((await read(BucketAccesses, { namespace: teamB, name: 'borrow' })) ? undefined : true),
      'the access gone',
      {
        timeoutMs: 30_000,
      },
    );
  }, 120_000);
});

describe('bad consumers get a condition naming the field, and nothing else is written or deleted', () => {
  it("a resourceRef written by hand on a claim is not followed: another team's store's address is not delivered", async () => {
    // Team A's bucket, whose class gives its store an address for other clusters.
    await control.create(Buckets, bucket({ namespace: teamA, name: 'victim' }, {}));
    const victim = await eventually(
      async () => {
        const b = await read(Buckets, { namespace: teamA, name: 'victim' });
        return b?.status?.bindingPhase === 'Bound' ? b : undefined;
      },
      'the victim bound',
      60_000,
    );
    const resourceRef = (victim as Obj & { spec: { resourceRef: object } }).spec.resourceRef;
    // Team B: a claim of a class that exposes nothing, naming A's resource, and a Secret of its own it controls.
    const thief = await control.create<Obj>(
      Buckets,
      bucket({ namespace: teamB, name: 'thief' }, { classRef: { name: 'internal' }, resourceRef, consumers: [to('c', appA, 'thief')] }),
    );
    await control.create(Secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'thief-s3',
        namespace: teamB,
        ownerReferences: [{ apiVersion: Buckets.apiVersion, kind: 'Bucket', name: 'thief', uid: thief.metadata.uid!, controller: true }],
      },
      type: 'connection.crossplane.io/v1alpha1',
      data: { note: Buffer.from('mine').toString('base64') },
    });
    const place = `${platform}/c/${appA}`;
    // Bound to nothing of its own, it has nothing to deliver: it waits, as any claim not bound yet.
    expect((await deliveryOf({ namespace: teamB, name: 'thief' }, place, 'WaitingForConnectionSecret')).delivered).toBe(false);
    expect(await secretIn(consumer, { namespace: appA, name: 'thief' })).toBeUndefined();
    await control.delete(Buckets, { namespace: teamB, name: 'thief' });
    await control.delete(Buckets, { namespace: teamA, name: 'victim' });
  }, 90_000);

  it('a namespace not allowed, an unknown Provider, a missing namespace, a foreign Secret, a name another claim delivers, no exposure', async () => {
    // A Secret of someone else's, of the name the claim asks for.
    await writeSecret(consumer, { namespace: appA, name: 'foreign' }, { note: 'not provider-rook' });
    const foreign = await secretIn(consumer, { namespace: appA, name: 'foreign' });
    await control.create(Buckets, bucket({ namespace: teamB, name: 'first' }, { consumers: [to('c', appA, 'taken')] }));
    await delivered({ namespace: teamB, name: 'first' }, 1);
    await control.create(
      Buckets,
      bucket(
        { namespace: teamA, name: 'bad' },
        {
          consumers: [to('c', appB), to('nope', appA), to('c', 'absent'), to('c', appA, 'foreign'), to('c', appA, 'taken')],
        },
      ),
    );
    const place = (p: string, ns: string) => `${platform}/${p}/${ns}`;
    expect((await deliveryOf({ namespace: teamA, name: 'bad' }, place('c', appB), 'ConsumerNotAllowed')).message).toContain(
      'spec.consumers[0]',
    );
    expect((await deliveryOf({ namespace: teamA, name: 'bad' }, place('nope', appA), 'ConsumerProviderNotFound')).message).toContain(
      'spec.consumers[1]',
    );
    expect((await deliveryOf({ namespace: teamA, name: 'bad' }, place('c', 'absent'), 'ConsumerNamespaceNotFound')).message).toContain(
      'spec.consumers[2]',
    );
    const conflicts = (await read(Buckets, { namespace: teamA, name: 'bad' }))!.status!.deliveries!.filter(
      (d) => d.to === place('c', appA),
    );
    expect(conflicts.map((d) => [d.secretName, d.reason]).sort()).toEqual([
      ['foreign', 'ConnectionSecretConflict'],
      ['taken', 'ConsumerSecretTaken'],
    ]);
    expect(cond(await read(Buckets, { namespace: teamA, name: 'bad' }), 'Delivered')).toMatchObject({ status: 'False' });
    // Nothing written where it was refused; the foreign Secret and the other claim's are as they were.
    expect(await secretIn(consumer, { namespace: appB, name: 'bad-s3' })).toBeUndefined();
    expect(await secretIn(consumer, { namespace: appA, name: 'foreign' })).toEqual(foreign);
    expect((await keysIn(consumer, { namespace: appA, name: 'taken' })).AWS_ACCESS_KEY_ID).toBe(
      (await keysIn(control, { namespace: teamB, name: 'first-s3' })).AWS_ACCESS_KEY_ID,
    );

    // A class that exposes its store to no other cluster: nothing delivered outside the store's cluster.
    await control.create(
      Buckets,
      bucket({ namespace: teamA, name: 'inside' }, { classRef: { name: 'internal' }, consumers: [to('c', appA, 'inside')] }),
    );
    expect((await deliveryOf({ namespace: teamA, name: 'inside' }, place('c', appA), 'NoEndpointForConsumer')).message).toContain(
      'spec.consumers[0]',
    );
    expect(await secretIn(consumer, { namespace: appA, name: 'inside' })).toBeUndefined();

    // Refused at admission: consumers without the claim's own Secret.
    const refused = (b: KubeObjectLike) =>
      control.create(Buckets, b).then(
        () => 'accepted',
        (e: Error) => e.message,
      );
    expect(
      await refused(
        bucket({ namespace: teamA, name: 'nosecret' }, { writeConnectionSecretToRef: undefined, consumers: [to('c', appA, 'x')] }),
      ),
    ).toContain('spec.consumers');
    await control.delete(Buckets, { namespace: teamA, name: 'bad' });
    await control.delete(Buckets, { namespace: teamA, name: 'inside' });
    await eventually(async () => ((await read(Buckets, { namespace: teamA, name: 'bad' })) ? undefined : true), 'the bad claim gone', {
      timeoutMs: 30_000,
    });
    expect(await secretIn(consumer, { namespace: appA, name: 'foreign' })).toEqual(foreign);
    // The platform team takes its consent back: what was delivered there goes, and the claim says why.
    await control.mergePatch(
      Providers,
      { namespace: platform, name: 'c' },
      { spec: { consumers: [{ claimNamespace: teamA, namespaces: [appA, 'absent'] }] } },
    );
    await deliveryOf({ namespace: teamB, name: 'first' }, place('c', appA), 'ConsumerNotAllowed');
    await eventually(
      async () => ((await secretIn(consumer, { namespace: appA, name: 'taken' })) ? undefined : true),
      'the Secret no longer consented deleted',
      {
        timeoutMs: 20_000,
      },
    );
    expect(await secretIn(consumer, { namespace: appA, name: 'foreign' })).toEqual(foreign);
  }, 180_000);

  it("a consumer's Provider deleted: the claim says so, and its deletion is not held by a cluster nothing reaches any more", async () => {
    await registerProvider(control, { namespace: platform, name: 'gone' }, testCluster('consumer'));
    await control.mergePatch(
      Providers,
      { namespace: platform, name: 'gone' },
      { spec: { consumers: [{ claimNamespace: teamA, namespaces: [appB] }] } },
    );
    await control.create(Buckets, bucket({ namespace: teamA, name: 'left' }, { consumers: [to('gone', appB)] }));
    await delivered({ namespace: teamA, name: 'left' }, 1);
    await control.delete(Providers, { namespace: platform, name: 'gone' });
    const forgotten = await deliveryOf({ namespace: teamA, name: 'left' }, `${platform}/gone/${appB}`, 'ConsumerProviderNotFound');
    expect(forgotten.message).toContain('spec.consumers[0]');
    // Its keys there are forgotten: no rotation waits for that cluster to catch up.
    expect(forgotten).not.toHaveProperty('keys');
    await control.delete(Buckets, { namespace: teamA, name: 'left' });
    await eventually(async () => ((await read(Buckets, { namespace: teamA, name: 'left' })) ? undefined : true), 'the claim gone', {
      timeoutMs: 30_000,
    });
    expect((await eventsFor(control, { namespace: teamA, name: 'left' })).map((e) => e.reason)).toContain('AbandonedConnectionSecret');
    // The same cluster is still watched through Provider c: what the claim left there is swept as a leak.
    await eventually(
      async () => ((await secretIn(consumer, { namespace: appB, name: 'left-s3' })) ? undefined : true),
      'the Secret swept',
      {
        timeoutMs: 20_000,
      },
    );
  }, 90_000);

  it('a consumer cluster unreachable while its claim is deleted: the claim waits and says so, and goes once the cluster is back', async () => {
    const { proxy, port } = await consumerBehindProxy('flaky', teamB);
    await control.create(Buckets, bucket({ namespace: teamB, name: 'far' }, { consumers: [to('flaky', appB)] }));
    await delivered({ namespace: teamB, name: 'far' }, 1);
    expect(await secretIn(consumer, { namespace: appB, name: 'far-s3' })).toBeDefined();
    await proxy.close();
    try {
      await control.delete(Buckets, { namespace: teamB, name: 'far' });
      await deliveryOf({ namespace: teamB, name: 'far' }, `${platform}/flaky/${appB}`, 'ConsumerUnreachable');
      expect(cond(await read(Buckets, { namespace: teamB, name: 'far' }), 'Delivered')).toMatchObject({
        status: 'False',
        reason: 'ConsumerUnreachable',
      });
      expect(await secretIn(consumer, { namespace: appB, name: 'far-s3' })).toBeDefined();
    } finally {
      await proxy.listen(port);
    }
    await eventually(
      async () => ((await read(Buckets, { namespace: teamB, name: 'far' })) ? undefined : true),
      'the claim gone once the cluster is back',
      {
        timeoutMs: 90_000,
      },
    );
    expect(await secretIn(consumer, { namespace: appB, name: 'far-s3' })).toBeUndefined();
    await proxy.close();
  }, 180_000);
});
