// Bucket claims on two real API servers: the four steps of config/samples/ verbatim, defaults from a
// BucketPolicy, reclaim Delete and Retain, 20 concurrent claims, a crash mid-binding, and a class
// that refuses a namespace. The MinIO operator is played by the test double.
import type { ObjectKey } from '../../src/kit/kube/object-key.ts';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { BucketClasses, BucketPolicies, Buckets } from '../../src/app.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { ObjectStore } from '../../src/backends/rook-minio/api.ts';
import type { Bucket } from '../../src/apis/storage.ts';
import { RookObjectStores } from '../../src/backends/rook-minio/objectstore.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Namespaces, Secrets } from '../../src/kit/kube/resources.ts';
import { Reasons } from '../../src/runtime/reasons.ts';
import { secretText } from '../../src/runtime/providers/credentials.ts';
import { applyManifests, loadManifests, type Manifest } from '../kit/manifests.ts';
import { repoRoot } from '../kit/cluster.ts';
import { testCluster, uniqueName } from '../kit/env.ts';
import { eventsFor, identityClient, providerSecretKeys, startTestApp, writeSecret } from '../kit/provider.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { S3_KEY_NAMES } from '../kit/s3-keys.ts';
import { eventually } from '../kit/eventually.ts';
import { cond } from '../kit/conditions.ts';

type SecretView = KubeObjectLike & { metadata: { ownerReferences?: unknown[] }; data?: Record<string, string>; type?: string };
type TargetStore = KubeObjectLike & { spec: Record<string, unknown> };

const PLATFORM = 'rook-infra-dev';
const APP = 'app-project1-dev';
const sample = (f: string): Manifest[] => loadManifests(path.join(repoRoot, 'config', 'samples', f));

let control: KubeClient;
let target: KubeClient;
// The samples' namespaces, and one of the fixture's for each of the other scenarios.
const rook = withProviderRook({
  namespaces: { defaults: 'defaults', retain: 'retain', many: 'many', crash: 'crash', denied: 'denied', refs: 'refs' },
  watch: [PLATFORM, APP],
  before: async (f) => {
    ({ control, target } = f);
    await applyManifests(control, sample('00-namespaces.yaml'));
    // Step 1: the Provider Secret holds the target's endpoint and credentials.
    await writeSecret(control, { namespace: PLATFORM, name: 'demo-provider-rook' }, providerSecretKeys(f.cluster));
  },
  app: { pollIntervalMs: 2_000 },
});
const watched = (): string[] => [PLATFORM, APP, ...Object.values<string>(rook.ns)];

const getBucket = ({ namespace, name }: Required<ObjectKey>): Promise<Bucket | undefined> =>
  control.get<Bucket>(Buckets, { namespace, name });

async function waitForBound({ namespace, name }: Required<ObjectKey>, timeoutMs = 30_000): Promise<Bucket> {
  return eventually(
    async () => {
      const b = await getBucket({ namespace, name });
      return b?.status?.bindingPhase === 'Bound' && cond(b, 'Ready')?.status === 'True' ? b : undefined;
    },
    `Bucket ${namespace}/${name} to be Bound and Ready`,
    timeoutMs,
  );
}

async function managedFor(namespace: string): Promise<ObjectStore[]> {
  const { items } = await control.list<ObjectStore>(kinds.ObjectStore, {
    namespace: PLATFORM,
    labelSelector: `crossplane.io/claim-namespace=${namespace}`,
  });
  return items;
}

function bucketClass(namespace: string, className: string, name = 'standard') {
  return {
    apiVersion: BucketClasses.apiVersion,
    kind: 'BucketClass',
    metadata: { name, namespace },
    classRef: { kind: 'ObjectStoreClass', apiVersion: kinds.ObjectStoreClass.apiVersion, name: className, namespace: PLATFORM },
  };
}

function bucket({ namespace, name }: Required<ObjectKey>, className: string | null = 'standard') {
  return {
    apiVersion: Buckets.apiVersion,
    kind: 'Bucket',
    metadata: { name, namespace },
    spec: { ...(className ? { classRef: { name: className } } : {}), writeConnectionSecretToRef: { name: `${name}-conn` } },
  };
}

/** An ObjectStoreClass like config/samples/02-objectstoreclass.yaml's, with changes. */
function storeClass(name: string, spec: Record<string, unknown>) {
  const [base] = sample('02-objectstoreclass.yaml');
  return { ...base!, metadata: { name, namespace: PLATFORM }, spec: { ...(base!.spec as object), ...spec } };
}

/** A managed ObjectStore reserved for a claim (paused: nothing of it is made in the target), reclaim policy Delete. */
async function reserve(name: string, claimRef: { name: string; namespace: string; uid?: string }): Promise<void> {
  await control.create(kinds.ObjectStore, {
    apiVersion: kinds.ObjectStore.apiVersion,
    kind: 'ObjectStore',
    metadata: { name, namespace: PLATFORM, annotations: { 'crossplane.io/paused': 'true' } },
    spec: {
      forProvider: { scope: { nodeCount: 4 } },
      targetNamespace: 'rook-minio',
      providerRef: { name: 'demo-kubernetes' },
      reclaimPolicy: 'Delete',
      claimRef: { apiVersion: Buckets.apiVersion, kind: 'Bucket', ...claimRef },
    },
  });
}

describe('Bucket claims', () => {
  it('binds a Bucket from the four steps in config/samples/, applied verbatim, and keeps its Secret in sync', async () => {
    for (const f of ['01-provider.yaml', '02-objectstoreclass.yaml', '03-bucketclass.yaml', '04-bucket.yaml'])
      await applyManifests(control, sample(f));

    const claim = await waitForBound({ namespace: APP, name: 'app-bucket' });
    const ref = claim.spec.resourceRef!;
    expect(ref).toMatchObject({ kind: 'ObjectStore', namespace: PLATFORM });
    expect(ref.name).toMatch(/^app-project1-dev-app-bucket-[a-z0-9]{5}$/);
    expect(cond(claim, 'Synced')?.status).toBe('True');

    const mr = await control.get<ObjectStore>(kinds.ObjectStore, { namespace: PLATFORM, name: ref.name });
    expect(mr?.spec.claimRef).toMatchObject({ kind: 'Bucket', name: 'app-bucket', namespace: APP, uid: claim.metadata.uid });
    expect(mr?.spec.classRef).toMatchObject({ kind: 'ObjectStoreClass', name: 'rook-minio', namespace: PLATFORM });
    expect(mr?.spec.providerRef).toEqual({ name: 'demo-kubernetes', namespace: PLATFORM });
    expect(mr?.status?.bindingPhase).toBe('Bound');

    // The target holds the store with the class's spec (the empty placement keys mean nothing), in a
    // namespace of its own with its own root keys, whatever namespace the class gives its credentials.
    const storeNs = `rook-minio-${ref.name}`;
    expect(mr?.spec.targetNamespace).toBe(storeNs);
    const store = await target.get<TargetStore>(RookObjectStores, { namespace: storeNs, name: ref.name });
    expect(store?.spec.scope).toEqual({
      nodeCount: 4,
      volumeClaimTemplates: [
        { metadata: { name: 'rook-minio-data1' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '8Gi' } } } },
      ],
    });
    expect(store?.spec.placement).toBeUndefined();
    expect(store?.spec.credentials).toEqual({ name: `${ref.name}-access-keys`, namespace: storeNs });

    const secret = await eventually(
      () => control.get<SecretView>(Secrets, { namespace: APP, name: 'bucketsecret' }),
      "the claim's connection Secret",
    );
    const keys = secretText(secret.data);
    expect(Object.keys(keys).sort()).toEqual(S3_KEY_NAMES);
    expect([keys.AWS_ACCESS_KEY_ID, keys.AWS_SECRET_ACCESS_KEY, keys.AWS_ENDPOINT_URL]).toEqual([
      keys.username,
      keys.password,
      keys.endpoint,
    ]);
    expect([keys.BUCKET_HOST, keys.BUCKET_PORT]).toEqual([`${ref.name}-s3.${storeNs}.svc.cluster.local`, '9000']);
    // The region under both names SDKs read (the JS v3 SDK only AWS_REGION, COSI's apps AWS_DEFAULT_REGION).
    expect([keys.AWS_REGION, keys.AWS_DEFAULT_REGION]).toEqual(['us-east-1', 'us-east-1']);
    expect(keys.endpoint).toBe(`http://${ref.name}-s3.${storeNs}.svc.cluster.local:9000`);
    expect(keys.password).toMatch(/^[A-Za-z0-9]{40}$/);
    expect(secret.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Bucket', uid: claim.metadata.uid, controller: true }),
    ]);

    // Kept in sync: an edit is undone and a deleted copy comes back.
    await control.mergePatch(
      Secrets,
      { namespace: APP, name: 'bucketsecret' },
      { data: { password: Buffer.from('tampered').toString('base64') } },
    );
    await eventually(
      async () =>
        secretText((await control.get<SecretView>(Secrets, { namespace: APP, name: 'bucketsecret' }))?.data).password === keys.password,
      'the copied password to be restored',
    );
    await control.delete(Secrets, { namespace: APP, name: 'bucketsecret' });
    await eventually(
      async () =>
        secretText((await control.get<SecretView>(Secrets, { namespace: APP, name: 'bucketsecret' }))?.data).password === keys.password,
      'the copied Secret to come back',
    );

    // No secret value in the claim's status or events.
    const events = await eventsFor(control, { namespace: APP, name: 'app-bucket' });
    // Bound once, saying where its Secret is; the two restorations above are news (PropagatedConnectionSecret).
    expect(events.filter((e) => e.reason === 'BoundManagedResource').map((e) => e.message)).toEqual([
      expect.stringMatching(/^Bound to ObjectStore .*; connection Secret bucketsecret written$/),
    ]);
    expect(events.map((e) => e.reason)).toContain('PropagatedConnectionSecret');
    expect(events.map((e) => e.reason)).not.toContain('CreatedManagedResource');
    const visible = JSON.stringify([await getBucket({ namespace: APP, name: 'app-bucket' }), events]);
    expect(visible).not.toContain(keys.password);
    expect(visible).not.toContain(keys.username);
  });

  it("fills a missing class from the namespace's one BucketPolicy, and says why when there is none or several", async () => {
    const n = rook.ns.defaults;
    await applyManifests(control, [bucketClass(n, 'rook-minio')]);
    await control.create(Buckets, bucket({ namespace: n, name: 'lonely' }, null));
    const waiting = await eventually(async () => {
      const b = await getBucket({ namespace: n, name: 'lonely' });
      return cond(b, 'Synced')?.reason === 'NoDefaultClass' ? b : undefined;
    }, 'a NoDefaultClass condition');
    expect(cond(waiting, 'Synced')?.message).toContain(`no BucketPolicy in namespace ${n}`);
    await control.delete(Buckets, { namespace: n, name: 'lonely' });

    const policy = (name: string) => ({
      apiVersion: BucketPolicies.apiVersion,
      kind: 'BucketPolicy',
      metadata: { name, namespace: n },
      spec: { defaultClassRef: { name: 'standard' } },
    });
    await applyManifests(control, [policy('one'), policy('two')]);
    await control.create(Buckets, bucket({ namespace: n, name: 'no-class' }, null));
    const ambiguous = await eventually(async () => {
      const b = await getBucket({ namespace: n, name: 'no-class' });
      return cond(b, 'Synced')?.reason === 'AmbiguousDefaultClass' ? b : undefined;
    }, 'an AmbiguousDefaultClass condition');
    expect(cond(ambiguous, 'Synced')?.message).toContain('(one, two)');
    expect(ambiguous.spec.classRef).toBeUndefined();
    expect(await managedFor(n)).toHaveLength(0);

    await control.delete(BucketPolicies, { namespace: n, name: 'two' });
    const bound = await waitForBound({ namespace: n, name: 'no-class' });
    expect(bound.spec.classRef).toEqual({ name: 'standard' });
  });

  it('deletes the managed resource, the target store and both Secrets with the claim under reclaim policy Delete', async () => {
    const n = rook.ns.defaults;
    const claim = await waitForBound({ namespace: n, name: 'no-class' });
    const ref = claim.spec.resourceRef!;
    const mr = await control.get<ObjectStore>(kinds.ObjectStore, { namespace: PLATFORM, name: ref.name });
    expect(mr?.spec.reclaimPolicy).toBe('Delete');
    const storeNs = mr!.spec.targetNamespace;
    expect(await target.get(RookObjectStores, { namespace: storeNs, name: ref.name })).toBeDefined();
    expect(await target.get(Secrets, { namespace: storeNs, name: `${ref.name}-access-keys` })).toBeDefined();

    await control.delete(Buckets, { namespace: n, name: 'no-class' });
    await eventually(async () => !(await getBucket({ namespace: n, name: 'no-class' })), 'the claim to be gone');
    await eventually(
      async () => !(await control.get(kinds.ObjectStore, { namespace: PLATFORM, name: ref.name })),
      'the managed resource to be gone',
    );
    await eventually(
      async () => !(await target.get(RookObjectStores, { namespace: storeNs, name: ref.name })),
      'the target store to be gone',
    );
    // Its namespace goes with it, root keys and all: provider-rook made it for this store alone.
    await eventually(async () => {
      const ns = await target.get<KubeObjectLike & { metadata: { deletionTimestamp?: string } }>(Namespaces, { name: storeNs });
      return ns === undefined || ns.metadata.deletionTimestamp !== undefined;
    }, "the store's namespace to be deleted");
    await eventually(async () => !(await control.get(Secrets, { namespace: n, name: 'no-class-conn' })), "the claim's Secret to be gone");
    await eventually(
      async () => !(await control.get(Secrets, { namespace: PLATFORM, name: ref.name })),
      "the managed resource's Secret to be gone",
    );
  });

  it('keeps the managed resource (Released) and the target store under reclaim policy Retain', async () => {
    const n = rook.ns.retain;
    await applyManifests(control, [storeClass('rook-minio-retain', { reclaimPolicy: 'Retain' }), bucketClass(n, 'rook-minio-retain')]);
    await control.create(Buckets, bucket({ namespace: n, name: 'kept' }));
    const claim = await waitForBound({ namespace: n, name: 'kept' });
    const ref = claim.spec.resourceRef!;

    await control.delete(Buckets, { namespace: n, name: 'kept' });
    await eventually(async () => !(await getBucket({ namespace: n, name: 'kept' })), 'the claim to be gone');
    const released = await eventually(async () => {
      const mr = await control.get<ObjectStore>(kinds.ObjectStore, { namespace: PLATFORM, name: ref.name });
      return mr?.status?.bindingPhase === 'Released' ? mr : undefined;
    }, 'the managed resource to be Released');
    expect(released.spec.claimRef).toBeUndefined();
    expect(released.metadata.deletionTimestamp).toBeUndefined();
    expect(await target.get(RookObjectStores, { namespace: released.spec.targetNamespace, name: ref.name })).toBeDefined();
    await eventually(
      async () => !(await control.get(Secrets, { namespace: n, name: 'kept-conn' })),
      "the claim's copy of the Secret to be gone",
    );
  });

  it('makes exactly one managed resource per claim when 20 claims arrive at once', async () => {
    const n = rook.ns.many;
    await applyManifests(control, [bucketClass(n, 'rook-minio')]);
    const names = Array.from({ length: 20 }, (_, i) => `claim-${i}`);
    await Promise.all(names.map((name) => control.create(Buckets, bucket({ namespace: n, name }))));
    const bound = await Promise.all(names.map((name) => waitForBound({ namespace: n, name }, 60_000)));

    const managed = await managedFor(n);
    expect(managed).toHaveLength(20);
    expect(new Set(managed.map((mr) => mr.spec.claimRef?.uid))).toEqual(new Set(bound.map((b) => b.metadata.uid)));
    expect(new Set(bound.map((b) => b.spec.resourceRef?.name)).size).toBe(20);
    // Each store in a namespace of its own: who may read one store's pods reads no other's root keys.
    expect(new Set(managed.map((mr) => mr.spec.targetNamespace)).size).toBe(20);
  }, 90_000);

  it('makes no duplicate when the provider dies right after creating the managed resource', async () => {
    const n = rook.ns.crash;
    await applyManifests(control, [bucketClass(n, 'rook-minio')]);
    // A second provider process that dies right after it created the managed resource: nothing it
    // sends afterwards reaches the API server.
    await rook.stop();
    let dead = false;
    const dying = await startTestApp(testCluster('control'), {
      namespaces: watched(),
      controlPlaneId: rook.app.controlPlaneId,
      onRequest: (_server, method, requestPath) => {
        if (dead) throw new Error('process killed');
        if (method === 'POST' && requestPath.endsWith('/objectstores')) dead = true;
      },
    });
    await control.create(Buckets, bucket({ namespace: n, name: 'interrupted' }));
    await eventually(() => dead, 'the managed resource to be created');
    await dying.stop();
    const made = await managedFor(n);
    expect(made).toHaveLength(1);
    // The claim named its resource before it was made (one write with the finalizer): a retry finds the same one.
    expect((await getBucket({ namespace: n, name: 'interrupted' }))?.spec.resourceRef?.name).toBe(made[0]!.metadata.name);

    await rook.restart();
    const claim = await waitForBound({ namespace: n, name: 'interrupted' });
    const managed = await managedFor(n);
    expect(managed).toHaveLength(1);
    expect(claim.spec.resourceRef?.name).toBe(managed[0]!.metadata.name);
  });

  it('refuses a claim from a namespace the class does not allow, and creates nothing', async () => {
    const n = rook.ns.denied;
    await applyManifests(control, [
      storeClass('rook-minio-restricted', { allowedNamespaces: [APP] }),
      bucketClass(n, 'rook-minio-restricted'),
    ]);
    await control.create(Buckets, bucket({ namespace: n, name: 'refused' }));
    const refused = await eventually(async () => {
      const b = await getBucket({ namespace: n, name: 'refused' });
      return cond(b, 'Synced')?.reason === 'NamespaceNotAllowed' ? b : undefined;
    }, 'a NamespaceNotAllowed condition');
    expect(cond(refused, 'Synced')?.message).toBe(
      `ObjectStoreClass ${PLATFORM}/rook-minio-restricted does not allow claims from namespace ${n} (allowed: ${APP})`,
    );
    expect(cond(refused, 'Ready')?.status).toBe('False');
    expect(refused.spec.resourceRef).toBeUndefined();
    expect(await managedFor(n)).toHaveLength(0);
    expect((await eventsFor(control, { namespace: n, name: 'refused' })).map((e) => e.reason)).toContain('NamespaceNotAllowed');
  });

  it("an app team learns nothing of managed resources it may not bind: missing or another claim's, one answer, and nothing new made", async () => {
    const n = rook.ns.refs;
    for (const f of readdirSync(path.join(repoRoot, 'config', 'rbac')))
      await applyManifests(control, loadManifests(path.join(repoRoot, 'config', 'rbac', f)));
    const appTeam = await identityClient(
      testCluster('control'),
      control,
      { namespace: n, name: 'app-team' },
      { role: 'provider-rook:app-team' },
    );
    await applyManifests(control, [storeClass('rook-minio-refs', {}), bucketClass(n, 'rook-minio-refs')]);
    // Another claim's resource (paused: this test needs nothing of it in the target), and a name nothing has.
    const [taken, ghost] = [uniqueName('taken'), uniqueName('ghost')];
    await reserve(taken, { name: 'owner', namespace: n, uid: 'owner-uid' });
    const ref = (name: string) => ({
      resourceRef: { apiVersion: kinds.ObjectStore.apiVersion, kind: 'ObjectStore', name, namespace: PLATFORM },
    });
    const probes: [string, object, Record<string, string>?][] = [
      ['ref-taken', ref(taken)],
      ['ref-ghost', ref(ghost)],
      ['import-taken', {}, { 'crossplane.io/external-name': taken }],
      ['import-ghost', {}, { 'crossplane.io/external-name': ghost }],
    ];
    for (const [name, spec, annotations] of probes) {
      await appTeam.create(Buckets, {
        ...bucket({ namespace: n, name }),
        metadata: { name, namespace: n, ...(annotations ? { annotations } : {}) },
        spec: { ...bucket({ namespace: n, name }).spec, ...spec },
      });
    }
    /** What a claim tells its app team, with the name it gave put aside. */
    const answer = async (name: string, reason: string) => {
      const b = await eventually(async () => {
        const got = await getBucket({ namespace: n, name });
        return cond(got, 'Synced')?.reason === reason ? got : undefined;
      }, `Bucket ${n}/${name} to say ${reason}`);
      await eventually(
        async () => (await eventsFor(control, { namespace: n, name })).some((e) => e.type === 'Warning' && e.reason === reason),
        `a ${reason} Event on ${name}`,
      );
      const blind = (text?: string) => text?.replaceAll(taken, '<name>').replaceAll(ghost, '<name>');
      return {
        ...b.status,
        conditions: b.status?.conditions?.map(({ lastTransitionTime: _, ...c }) => ({ ...c, message: blind(c.message) })),
      };
    };
    const missing = await answer('ref-ghost', Reasons.ManagedResourceNotFound);
    expect(cond({ status: missing }, 'Synced')?.message).toBe(
      `spec.resourceRef names ObjectStore ${PLATFORM}/<name>, which does not exist or is not reserved for this claim: ` +
        'a platform team reserves one by setting its spec.claimRef to this claim',
    );
    expect(await answer('ref-taken', Reasons.ManagedResourceNotFound)).toEqual(missing);
    expect(await answer('import-taken', 'ImportNotAllowed')).toEqual(await answer('import-ghost', 'ImportNotAllowed'));

    expect(await managedFor(n)).toHaveLength(0);
    for (const [name] of probes) expect(await control.get(Secrets, { namespace: n, name })).toBeUndefined();
    const untouched = await control.get<ObjectStore>(kinds.ObjectStore, { namespace: PLATFORM, name: taken });
    expect([untouched?.spec.claimRef?.name, untouched?.status?.bindingPhase]).toEqual(['owner', undefined]);
  });

  it('a reservation the claim never bound (a claimRef without uid) is neither released nor deleted with it', async () => {
    const n = rook.ns.refs;
    const reserved = uniqueName('reserved');
    // Reserved for refs/spare by name, before that claim exists (paused: nothing of it in the target).
    await reserve(reserved, { name: 'spare', namespace: n });
    // The claim takes its class instead, and binds a resource of its own.
    await control.create(Buckets, bucket({ namespace: n, name: 'spare' }));
    const claim = await waitForBound({ namespace: n, name: 'spare' });
    expect(claim.spec.resourceRef?.name).not.toBe(reserved);
    await control.delete(Buckets, { namespace: n, name: 'spare' });
    await eventually(async () => !(await getBucket({ namespace: n, name: 'spare' })), 'the claim to be gone');
    await eventually(
      async () => !(await control.get(kinds.ObjectStore, { namespace: PLATFORM, name: claim.spec.resourceRef!.name })),
      'its own resource to be gone',
    );
    const kept = await control.get<ObjectStore>(kinds.ObjectStore, { namespace: PLATFORM, name: reserved });
    expect([kept?.metadata.deletionTimestamp, kept?.status?.bindingPhase, kept?.spec.claimRef?.name]).toEqual([
      undefined,
      undefined,
      'spare',
    ]);
  });
});
