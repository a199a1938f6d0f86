// Credential rotation, proven against a real S3 server: a claim asks for new keys with an annotation;
// the new keys reach its Secret (the same Secret, updated in place) once the server knows them; the
// old keys keep working until the class's grace period ends and are refused after it. A class can
// rotate on a schedule; a store's root keys cannot rotate, and the condition says so.
// The target is a cluster of this file's own, so only its stand-ins (with S3) play the Jobs there.
import { applyObject } from '../kit/manifests.ts';
import type { ObjectKey } from '../../src/kit/kube/object-key.ts';
import { describe, expect, it } from '@jest/globals';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { BucketClasses, Buckets } from '../../src/app.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { Bucket } from '../../src/apis/storage.ts';
import type { KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Jobs, Secrets, type ResourceType } from '../../src/kit/kube/resources.ts';
import { ANNOTATION_ROTATE } from '../../src/runtime/labels.ts';
import { secretText } from '../../src/runtime/providers/credentials.ts';
import { roundTrip, s3Client } from '../kit/s3.ts';
import { resolveS3Endpoint } from '../fakes/s3-stores.ts';
import { eventually } from '../kit/eventually.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { cond } from '../kit/conditions.ts';

const TARGET = `it-rotation-${process.pid}`;
const GRACE_S = 15;
type Cond = { type: string; status: string; reason: string; message?: string };
type Obj = KubeObjectLike & {
  metadata: KubeObjectLike['metadata'] & { annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  status?: { conditions?: Cond[]; credentials?: { generation: number; rotatedAt: string; previousValidUntil?: string } };
};

const env = withProviderRook({
  cluster: TARGET,
  namespaces: { platform: 'rot-infra', apps: 'rot-app' },
  provider: { name: 't', in: 'platform' },
  s3: true,
  app: { pollIntervalMs: 60_000 },
  timeoutMs: 180_000,
  before: async () => {
    await apply(
      kinds.ObjectStore,
      { namespace: env.ns.platform, name: 'store' },
      {
        forProvider: { scope: { nodeCount: 4 } },
        targetNamespace: 'rot-store',
        providerRef: { name: 't' },
      },
    );
    await apply(
      kinds.MinioBucketClass,
      { namespace: env.ns.platform, name: 'on-request' },
      {
        store: { kind: 'ObjectStore', name: 'store' },
        credentialRotation: { gracePeriod: `${GRACE_S}s` },
      },
    );
    await apply(
      kinds.ObjectStoreClass,
      { namespace: env.ns.platform, name: 'scheduled' },
      {
        scope: { nodeCount: 4 },
        providerRef: { name: 't' },
        targetNamespace: 'rot-dedicated',
        credentialRotation: { every: '10s', gracePeriod: '2s' },
      },
    );
    for (const [name, kind] of [
      ['on-request', kinds.MinioBucketClass],
      ['scheduled', kinds.ObjectStoreClass],
    ] as const)
      await apply(
        BucketClasses,
        { namespace: env.ns.apps, name },
        { classRef: { apiVersion: kind.apiVersion, kind: kind.kind, name, namespace: env.ns.platform } },
        true,
      );
  },
});

/** Applies an object with this spec (or, `top`, these top-level fields). */
const apply = (type: ResourceType, key: Required<ObjectKey>, spec: object, top = false) =>
  applyObject(env.control, type, key, top ? spec : { spec });

const claim = (name: string, className: string, annotations?: Record<string, string>) =>
  ({
    apiVersion: Buckets.apiVersion,
    kind: 'Bucket',
    metadata: { name, namespace: env.ns.apps, ...(annotations ? { annotations } : {}) },
    spec: { classRef: { name: className }, writeConnectionSecretToRef: { name: `${name}-s3` } },
  }) as KubeObjectLike;

const bound = (name: string) =>
  eventually(
    async () => {
      const b = await env.control.get<Obj & Bucket>(Buckets, { namespace: env.ns.apps, name });
      return b?.status?.bindingPhase === 'Bound' && cond(b, 'Ready')?.status === 'True' ? b : undefined;
    },
    `Bucket ${env.ns.apps}/${name} to be Bound`,
    {
      timeoutMs: 60_000,
      explain: async () => JSON.stringify((await env.control.get<Obj>(Buckets, { namespace: env.ns.apps, name }))?.status),
    },
  );

/** The claim's Secret: its keys, and the endpoint as an app in the target reaches it. */
async function keysOf(name: string) {
  const secret = (await env.control.get<Obj>(Secrets, { namespace: env.ns.apps, name: `${name}-s3` }))!;
  const keys = secretText(secret.data);
  return {
    uid: secret.metadata.uid,
    local: await resolveS3Endpoint(keys.endpoint!, env.target),
    creds: { accessKey: keys.AWS_ACCESS_KEY_ID!, secretKey: keys.AWS_SECRET_ACCESS_KEY! },
    bucket: keys.BUCKET_NAME!,
  };
}

/** Whether the server takes these keys: a List of their bucket, or the name of its refusal. */
async function answer(local: string, creds: { accessKey: string; secretKey: string }, bucket: string): Promise<string> {
  const s3 = s3Client(local, creds);
  try {
    return await s3.send(new ListObjectsV2Command({ Bucket: bucket })).then(
      () => 'ok',
      (err: Error) => err.name,
    );
  } finally {
    s3.destroy();
  }
}

const newKeys = (name: string, than: string) =>
  eventually(
    async () => {
      const k = await keysOf(name);
      return k.creds.accessKey !== than ? k : undefined;
    },
    `the Secret of ${name} to hold new keys`,
    {
      timeoutMs: 60_000,
      explain: async () => JSON.stringify((await env.control.get<Obj>(Buckets, { namespace: env.ns.apps, name }))?.status),
    },
  );

describe('rotation on request', () => {
  it('new keys reach the same Secret once the server knows them; the old ones work until the grace period ends, then are refused', async () => {
    await env.control.create(Buckets, claim('app', 'on-request'));
    await bound('app');
    const before = await keysOf('app');
    await roundTrip(before.local, before.creds, before.bucket);

    await env.control.mergePatch(
      Buckets,
      { namespace: env.ns.apps, name: 'app' },
      { metadata: { annotations: { [ANNOTATION_ROTATE]: 'first' } } },
    );
    const after = await newKeys('app', before.creds.accessKey);
    // The same Secret, updated in place: a mounted Secret volume follows it without a restart.
    expect(after.uid).toBe(before.uid);
    expect(after.bucket).toBe(before.bucket);
    // Both work now: the new ones (they were made before they were published) and, in the grace period, the old.
    await roundTrip(after.local, after.creds, after.bucket);
    expect(await answer(before.local, before.creds, before.bucket)).toBe('ok');
    // The claim mirrors its resource's status once that is written (just after the Secret).
    const status = await eventually(async () => {
      const st = (await env.control.get<Obj>(Buckets, { namespace: env.ns.apps, name: 'app' }))?.status;
      return st?.credentials?.previousValidUntil ? st : undefined;
    }, 'the claim to say until when the old keys work');
    expect(status.credentials).toMatchObject({ generation: 1 });
    expect(cond({ status } as Obj, 'CredentialsRotated')).toMatchObject({ status: 'True', reason: 'Rotated' });
    const until = Date.parse(status.credentials!.previousValidUntil!);
    // Counted from when the new keys were published (no app could have them before): after the request.
    expect(until - Date.parse(status.credentials!.rotatedAt)).toBeGreaterThanOrEqual(GRACE_S * 1000);
    expect(until - Date.parse(status.credentials!.rotatedAt)).toBeLessThan((GRACE_S + 20) * 1000);

    // After the grace period, the server refuses the old keys, and never before it.
    await eventually(
      async () => (await answer(before.local, before.creds, before.bucket)) === 'InvalidAccessKeyId',
      'the old keys to be refused',
      { timeoutMs: (GRACE_S + 30) * 1000 },
    );
    expect(Date.now()).toBeGreaterThanOrEqual(until);
    await roundTrip(after.local, after.creds, after.bucket);
    await eventually(
      async () =>
        cond(await env.control.get<Obj>(Buckets, { namespace: env.ns.apps, name: 'app' }), 'CredentialsRotated')?.message?.endsWith(
          'the previous keys are removed',
        ),
      'the claim to say the previous keys are removed',
    );
  }, 120_000);

  it('rotating again before the grace period ends removes the older keys at once (the way to revoke keys that leaked)', async () => {
    const first = await keysOf('app');
    await env.control.mergePatch(
      Buckets,
      { namespace: env.ns.apps, name: 'app' },
      { metadata: { annotations: { [ANNOTATION_ROTATE]: 'second' } } },
    );
    const second = await newKeys('app', first.creds.accessKey);
    await env.control.mergePatch(
      Buckets,
      { namespace: env.ns.apps, name: 'app' },
      { metadata: { annotations: { [ANNOTATION_ROTATE]: 'third' } } },
    );
    const third = await newKeys('app', second.creds.accessKey);
    // The keys that were in use before the second rotation go without waiting for a grace period.
    await eventually(
      async () => (await answer(first.local, first.creds, first.bucket)) === 'InvalidAccessKeyId',
      'the leaked keys to be refused',
      { timeoutMs: 20_000 },
    );
    expect(Date.now()).toBeLessThan(
      Date.parse((await env.control.get<Obj>(Buckets, { namespace: env.ns.apps, name: 'app' }))!.status!.credentials!.previousValidUntil!),
    );
    expect(await answer(second.local, second.creds, second.bucket)).toBe('ok');
    await roundTrip(third.local, third.creds, third.bucket);
  }, 120_000);

  it('deleting the claim in a grace period removes the old keys too: nothing is left in the store', async () => {
    const current = await keysOf('app');
    const mr = (await env.control.get<Bucket>(Buckets, { namespace: env.ns.apps, name: 'app' }))!.spec.resourceRef!.name;
    const generations = (await env.control.get<Obj>(kinds.MinioBucket, { namespace: env.ns.platform, name: mr }))!.status!.credentials!
      .generation;
    await env.control.mergePatch(
      Buckets,
      { namespace: env.ns.apps, name: 'app' },
      { metadata: { annotations: { [ANNOTATION_ROTATE]: 'fourth' } } },
    );
    const last = await newKeys('app', current.creds.accessKey);
    await env.control.delete(Buckets, { namespace: env.ns.apps, name: 'app' });
    await eventually(
      async () => (await env.control.get(kinds.MinioBucket, { namespace: env.ns.platform, name: mr })) === undefined,
      'the MinioBucket to be gone',
      60_000,
    );
    expect(generations).toBe(3);
    for (const k of [current, last]) expect(await answer(k.local, k.creds, k.bucket)).toBe('InvalidAccessKeyId');
  }, 120_000);

  it("a store's root keys cannot rotate: asked to, the resource says so and nothing changes", async () => {
    await env.control.mergePatch(
      kinds.ObjectStore,
      { namespace: env.ns.platform, name: 'store' },
      {
        metadata: { annotations: { [ANNOTATION_ROTATE]: 'please' } },
      },
    );
    const c = await eventually(
      async () => cond(await env.control.get<Obj>(kinds.ObjectStore, { namespace: env.ns.platform, name: 'store' }), 'CredentialsRotated'),
      'the store to answer the request',
    );
    expect(c).toMatchObject({ status: 'False', reason: 'RotationNotSupported' });
    expect(c.message).toContain('its root keys cannot rotate');
    expect(
      (await env.control.get<Obj>(kinds.ObjectStore, { namespace: env.ns.platform, name: 'store' }))!.metadata.annotations,
    ).not.toHaveProperty('rook.crossplane.io/credentials');
  });

  it('fifteen requests in a burst make at most two rotations, and once settled, at rest, one access Job is left', async () => {
    await env.control.create(Buckets, claim('burst', 'on-request'));
    const mrName = (await bound('burst')).spec.resourceRef!.name;
    const before = await keysOf('burst');
    for (let i = 0; i < 15; i++)
      await env.control.mergePatch(
        Buckets,
        { namespace: env.ns.apps, name: 'burst' },
        { metadata: { annotations: { [ANNOTATION_ROTATE]: `burst-${i}` } } },
      );
    const mr = () => env.control.get<Obj>(kinds.MinioBucket, { namespace: env.ns.platform, name: mrName });
    // The last request is answered (after the first, once its keys work and 10 s have passed), the ones between are not.
    await eventually(
      async () => JSON.parse((await mr())?.metadata.annotations?.['rook.crossplane.io/credentials'] ?? '{}').request === 'burst-14',
      'the last request to be answered',
      { timeoutMs: 60_000 },
    );
    expect((await mr())!.status!.credentials?.generation ?? 2).toBeLessThanOrEqual(2);
    const jobs = async () =>
      (
        await env.target.list<Obj>(Jobs, {
          namespace: 'rot-store',
          labelSelector: `rook.crossplane.io/owner-uid=${(await mr())!.metadata.uid},rook.crossplane.io/minio-admin in (grant,retire)`,
        })
      ).items.filter((j) => !(j.metadata as { deletionTimestamp?: string }).deletionTimestamp);
    // Once the old keys are removed (grace period, then their Job), nothing superseded stays, though nothing else changes.
    await eventually(
      async () => (await answer(before.local, before.creds, before.bucket)) === 'InvalidAccessKeyId',
      'the old keys refused',
      {
        timeoutMs: (GRACE_S + 40) * 1000,
      },
    );
    await eventually(async () => (await jobs()).length === 1, 'one access Job left', {
      timeoutMs: 30_000,
      explain: async () => (await jobs()).map((j) => j.metadata.name).join(', '),
    });
    await env.control.delete(Buckets, { namespace: env.ns.apps, name: 'burst' });
  }, 180_000);

  it('a grace period that is not a duration is refused at admission, naming the field', async () => {
    const err = await env.control
      .create(kinds.MinioBucketClass, {
        apiVersion: kinds.MinioBucketClass.apiVersion,
        kind: kinds.MinioBucketClass.kind,
        metadata: { name: 'bad', namespace: env.ns.platform },
        spec: { store: { kind: 'ObjectStore', name: 'store' }, credentialRotation: { gracePeriod: 'soon' } },
      } as KubeObjectLike)
      .then(
        () => undefined,
        (e: Error) => e.message,
      );
    expect(err).toContain('spec.credentialRotation.gracePeriod');
  });
});

describe('rotation on a schedule', () => {
  it("a class's schedule rotates a store's bucket user by itself, and the new keys work", async () => {
    // Its Jobs removing old keys are provider-rook's, labelled as such, in the store's namespace. Each
    // lives a moment only (done, it is superseded at the next pass), so a watch sees it, not a list.
    const retire = { namespace: 'rot-dedicated', labelSelector: 'rook.crossplane.io/minio-admin=retire' };
    const made: string[] = [];
    const stop = new AbortController();
    const { resourceVersion } = await env.target.list<Obj>(Jobs, retire);
    const watching = env.target
      .watch(Jobs, { ...retire, resourceVersion: resourceVersion ?? '0', signal: stop.signal }, (type, job) => {
        if (type === 'ADDED') made.push(job.metadata.name);
      })
      .catch(() => {});
    await env.control.create(Buckets, claim('timed', 'scheduled'));
    await bound('timed');
    const first = await keysOf('timed');
    await roundTrip(first.local, first.creds, first.bucket);
    const next = await newKeys('timed', first.creds.accessKey);
    await roundTrip(next.local, next.creds, next.bucket);
    expect(
      (await env.control.get<Obj>(Buckets, { namespace: env.ns.apps, name: 'timed' }))!.status!.credentials!.generation,
    ).toBeGreaterThanOrEqual(1);
    const retired = await eventually(() => (made.length ? made : undefined), 'a Job removing old keys');
    stop.abort();
    await watching;
    expect(retired[0]).toMatch(/-retire-\d+$/);
    await env.control.delete(Buckets, { namespace: env.ns.apps, name: 'timed' });
  }, 120_000);
});
