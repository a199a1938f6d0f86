// Ownership an intruder cannot forge on real API servers. Each intruder is
// a real ServiceAccount with its real token and the least role its attack needs, in one namespace of
// a target (or an app team's own role in the control cluster). Each test checks both that
// provider-rook refuses, and that nothing was lost: the intruder's object is unchanged (provider-rook
// never wrote it), and no foreign Secret or object was deleted or written.
import { beforeAll, describe, expect, it } from '@jest/globals';
import type { LocalCluster } from '../kit/cluster.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { BucketClasses, Buckets, FIELD_MANAGER, type App } from '../../src/app.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import { MinioTenants } from '../../src/backends/minio-operator/tenant.ts';
import { ObjectBucketClaims } from '../../src/backends/rook-ceph/bucket.ts';
import { RookObjectStores } from '../../src/backends/rook-minio/objectstore.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import type { KubeError } from '../../src/kit/kube/errors.ts';
import { ConfigMaps, Namespaces, Secrets, Services, type ResourceType } from '../../src/kit/kube/resources.ts';
import { ANNOTATION_PAUSED, CONNECTION_SECRET_TYPE } from '../../src/kit/meta.ts';
import {
  ANNOTATION_OWNER,
  ANNOTATION_OWNER_PROOF,
  ANNOTATION_RECLAIM_POLICY,
  ANNOTATION_TARGET_UID,
  LABEL_CONTROL_PLANE,
  LABEL_OWNER_UID,
} from '../../src/runtime/ownership/marks.ts';
import { secretText } from '../../src/runtime/providers/credentials.ts';
import { Reasons } from '../../src/runtime/reasons.ts';
import { testCluster, uniqueName } from '../kit/env.ts';
import { eventsFor, identityClient, tenantClient } from '../kit/provider.ts';
import { eventually } from '../kit/eventually.ts';
import { cond } from '../kit/conditions.ts';
import { bucketClass } from '../kit/claims.ts';

type Meta = KubeObjectLike['metadata'] & {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: { uid: string; controller?: boolean }[];
  managedFields?: { manager: string }[];
  finalizers?: string[];
};
type Obj = KubeObjectLike & {
  metadata: Meta;
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  status?: { conditions?: Cond[]; phase?: string };
};
type Cond = { type: string; status: string; reason: string; message?: string };
const b64 = (s: string): string => Buffer.from(s).toString('base64');

let cluster: LocalCluster;
let control: KubeClient;
let target: KubeClient;
let platform: string;
let appNs: string;
const rook = withProviderRook({
  cluster: `it-intruder-${process.pid}`,
  namespaces: { platform: 'intr-infra', app: 'intr-app' },
  provider: { name: 'target', in: 'platform' },
  operators: ['rook-minio', 'minio-operator', 'rook-ceph'],
  roles: true,
  app: { leakGraceMs: 0 },
  before: (f) => {
    ({ control, target, cluster } = f);
    [platform, appNs] = [f.ns.platform, f.ns.app];
  },
});

/** A tenant of this file's target with exactly `rules` in `namespace` (see tenantClient). */
const intruder = (namespace: string, rules: Record<string, unknown>[], ready: (c: KubeClient) => Promise<unknown>): Promise<KubeClient> =>
  tenantClient(cluster, target, namespace, rules, ready);

/** What provider-rook must never have changed on someone else's object. */
const fingerprint = (o: Obj | undefined) =>
  o && {
    uid: o.metadata.uid,
    labels: o.metadata.labels,
    annotations: o.metadata.annotations,
    spec: o.spec,
    data: o.data,
    ownerReferences: o.metadata.ownerReferences,
    writtenByUs: (o.metadata.managedFields ?? []).some((f) => f.manager === FIELD_MANAGER),
  };

const syncedFalse = (type: ResourceType, name: string, reason: string, ns = platform) =>
  eventually(
    async () => {
      const got = await control.get<Obj>(type, { namespace: ns, name });
      return cond(got, 'Synced')?.reason === reason ? got : undefined;
    },
    `${type.kind} ${ns}/${name} to say Synced=False/${reason}`,
    45_000,
  );

const readyMr = (type: ResourceType, name: string, ns = platform) =>
  eventually(
    async () => {
      const got = await control.get<Obj>(type, { namespace: ns, name });
      return cond(got, 'Ready')?.status === 'True' && cond(got, 'Synced')?.status === 'True' ? got : undefined;
    },
    `${type.kind} ${ns}/${name} to be Ready and Synced`,
    60_000,
  );

const managed = (type: ResourceType, name: string, spec: Record<string, unknown>, annotations?: Record<string, string>) =>
  ({
    apiVersion: type.apiVersion,
    kind: type.kind,
    metadata: { name, namespace: platform, ...(annotations ? { annotations } : {}) },
    spec: { providerRef: { name: 'target' }, reclaimPolicy: 'Delete', writeConnectionSecretToRef: { name: `${name}-conn` }, ...spec },
  }) as KubeObjectLike;
const cephBucket = (name: string, targetNamespace: string) =>
  managed(kinds.CephBucket, name, { forProvider: { storageClassName: 'rook-ceph-bucket' }, targetNamespace });
const rookStore = (name: string, targetNamespace: string, extra: Record<string, unknown> = {}, annotations?: Record<string, string>) =>
  managed(kinds.ObjectStore, name, { forProvider: { scope: { nodeCount: 4 } }, targetNamespace, ...extra }, annotations);

/** Each describe block has a provider-rook of its own: another control plane's, so what one block made is foreign to the next. */
const provider = (): Promise<App> => rook.restart({ controlPlaneId: uniqueName('cp') });

describe('finding 1: forged "restored" objects are not taken back', () => {
  beforeAll(() => provider(), 60_000);

  it("a tenant's ObjectBucketClaim with copied marks, made before the platform's CephBucket, stays the tenant's: ExternalResourceOwnedByAnother, nothing published", async () => {
    const ns = uniqueName('team');
    await target.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    // A real CephBucket of the platform's in the same namespace: the intruder copies its marks.
    const real = uniqueName('real');
    await control.create(kinds.CephBucket, cephBucket(real, ns));
    await readyMr(kinds.CephBucket, real);
    const mole = await intruder(
      ns,
      [
        { apiGroups: ['objectbucket.io'], resources: ['objectbucketclaims'], verbs: ['get', 'list', 'create'] },
        { apiGroups: [''], resources: ['secrets', 'configmaps'], verbs: ['get', 'patch'] },
      ],
      (c) => c.list(ObjectBucketClaims, { namespace: ns }),
    );
    const ours = (await mole.get<Obj>(ObjectBucketClaims, { namespace: ns, name: real }))!;
    const name = uniqueName('team-bucket');
    await mole.create(ObjectBucketClaims, {
      apiVersion: ObjectBucketClaims.apiVersion,
      kind: ObjectBucketClaims.kind,
      metadata: {
        name,
        namespace: ns,
        labels: { [LABEL_CONTROL_PLANE]: ours.metadata.labels![LABEL_CONTROL_PLANE]!, [LABEL_OWNER_UID]: 'any-uid' },
        annotations: {
          [ANNOTATION_OWNER]: `cephbuckets.ceph.rook.crossplane.io/${platform}/${name}`,
          [ANNOTATION_RECLAIM_POLICY]: 'Delete',
          [ANNOTATION_OWNER_PROOF]: ours.metadata.annotations![ANNOTATION_OWNER_PROOF]!,
        },
      },
      spec: { storageClassName: 'rook-ceph-bucket', generateBucketName: name },
    } as KubeObjectLike);
    // The provisioner serves it; then the intruder writes its own endpoint and keys beside it.
    await eventually(
      async () => (await mole.get<Obj>(ObjectBucketClaims, { namespace: ns, name }))?.status?.phase === 'Bound',
      "the provisioner to bind the intruder's claim",
    );
    await mole.mergePatch(ConfigMaps, { namespace: ns, name }, { data: { BUCKET_HOST: 'exfil.intruder.example', BUCKET_PORT: '80' } });
    await mole.mergePatch(
      Secrets,
      { namespace: ns, name },
      {
        data: { AWS_ACCESS_KEY_ID: b64('INTRUDER-KEY'), AWS_SECRET_ACCESS_KEY: b64('INTRUDER-SECRET') },
      },
    );
    const before = fingerprint(await target.get<Obj>(ObjectBucketClaims, { namespace: ns, name }));

    await control.create(kinds.CephBucket, cephBucket(name, ns));
    const refused = await syncedFalse(kinds.CephBucket, name, Reasons.ExternalResourceOwnedByAnother);
    expect(cond(refused, 'Synced')?.message).toMatch(/nothing proves/);
    expect(cond(refused, 'Ready')?.status).not.toBe('True');
    expect(refused.metadata.annotations?.[ANNOTATION_TARGET_UID]).toBeUndefined();
    expect(await control.get(Secrets, { namespace: platform, name: `${name}-conn` })).toBeUndefined();
    const events = await eventsFor(control, { namespace: platform, name });
    expect(events.map((e) => e.message).join('\n')).not.toMatch(/taking back|exfil|INTRUDER/);
    expect(fingerprint(await target.get<Obj>(ObjectBucketClaims, { namespace: ns, name }))).toEqual({ ...before, writtenByUs: false });

    // Deleting the refused CephBucket deletes nothing of the intruder's either.
    await control.delete(kinds.CephBucket, { namespace: platform, name });
    await eventually(
      async () => (await control.get(kinds.CephBucket, { namespace: platform, name })) === undefined,
      'the CephBucket to be gone',
    );
    expect(fingerprint(await target.get<Obj>(ObjectBucketClaims, { namespace: ns, name }))).toEqual({ ...before, writtenByUs: false });
    expect((await target.get<Obj>(ConfigMaps, { namespace: ns, name }))?.data?.BUCKET_HOST).toBe('exfil.intruder.example');
  }, 120_000);

  it("a tenant's Tenant and configuration Secret with forged marks are not taken back: the intruder's root user never reaches a connection Secret", async () => {
    const ns = uniqueName('minio-team');
    await target.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    const mole = await intruder(
      ns,
      [
        { apiGroups: ['minio.min.io'], resources: ['tenants'], verbs: ['get', 'create'] },
        { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create'] },
      ],
      (c) => c.get(MinioTenants, { namespace: ns, name: 'none' }),
    );
    const name = uniqueName('t');
    const marks = (forName: string) => ({
      labels: { [LABEL_CONTROL_PLANE]: rook.app.controlPlaneId, [LABEL_OWNER_UID]: 'any-uid' },
      annotations: { [ANNOTATION_OWNER]: `tenants.minio.crossplane.io/${platform}/${forName}`, [ANNOTATION_RECLAIM_POLICY]: 'Delete' },
    });
    await mole.create(Secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `${name}-env-configuration`, namespace: ns, ...marks(name) },
      data: { 'config.env': b64('export MINIO_ROOT_USER="INTRUDER-ROOT"\nexport MINIO_ROOT_PASSWORD="INTRUDER-PASSWORD"\n') },
    } as KubeObjectLike);
    const pools = [
      {
        name: 'pool-0',
        servers: 4,
        volumesPerServer: 1,
        volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
      },
    ];
    await mole.create(MinioTenants, {
      apiVersion: MinioTenants.apiVersion,
      kind: MinioTenants.kind,
      metadata: { name, namespace: ns, ...marks(name) },
      spec: { pools, requestAutoCert: false, configuration: { name: `${name}-env-configuration` } },
    } as KubeObjectLike);
    // The operator takes it up; what it writes settles before the platform acts.
    await eventually(
      async () =>
        ((await mole.get<Obj>(MinioTenants, { namespace: ns, name }))?.status as { currentState?: string } | undefined)?.currentState ===
        'Initialized',
      "the operator to initialize the intruder's Tenant",
    );
    const tenantBefore = fingerprint(await target.get<Obj>(MinioTenants, { namespace: ns, name }));
    const secretBefore = fingerprint(await target.get<Obj>(Secrets, { namespace: ns, name: `${name}-env-configuration` }));

    await control.create(
      kinds.Tenant,
      managed(kinds.Tenant, name, { forProvider: { pools, requestAutoCert: false }, targetNamespace: ns }),
    );
    await syncedFalse(kinds.Tenant, name, Reasons.ExternalResourceOwnedByAnother);
    expect(await control.get(Secrets, { namespace: platform, name: `${name}-conn` })).toBeUndefined();
    expect(fingerprint(await target.get<Obj>(MinioTenants, { namespace: ns, name }))).toEqual({ ...tenantBefore, writtenByUs: false });
    expect(fingerprint(await target.get<Obj>(Secrets, { namespace: ns, name: `${name}-env-configuration` }))).toEqual({
      ...secretBefore,
      writtenByUs: false,
    });
  }, 120_000);

  it("a new resource of a retained store's name does not take it over; a platform team vouches for it by its uid (and a restore carries that uid)", async () => {
    const ns = uniqueName('retained');
    const name = uniqueName('kept');
    await control.create(kinds.ObjectStore, rookStore(name, ns, { reclaimPolicy: 'Retain' }));
    const first = await readyMr(kinds.ObjectStore, name);
    const store = (await target.get<Obj>(RookObjectStores, { namespace: ns, name }))!;
    expect(first.metadata.annotations?.[ANNOTATION_TARGET_UID]).toBe(store.metadata.uid);
    await control.delete(kinds.ObjectStore, { namespace: platform, name });
    await eventually(
      async () => (await control.get(kinds.ObjectStore, { namespace: platform, name })) === undefined,
      'the Retain resource to be gone',
    );

    // Same name, new resource, no record: it never made this store, so it is not its own.
    await control.create(kinds.ObjectStore, rookStore(name, ns, { reclaimPolicy: 'Retain' }));
    await syncedFalse(kinds.ObjectStore, name, Reasons.ExternalResourceOwnedByAnother);
    expect(fingerprint(await target.get<Obj>(RookObjectStores, { namespace: ns, name }))).toEqual(fingerprint(store));

    // The platform team says it is: the recorded uid proves the store, its signed keys come with it.
    const keys = (await target.get<Obj>(Secrets, { namespace: ns, name: `${name}-access-keys` }))!;
    await control.mergePatch(
      kinds.ObjectStore,
      { namespace: platform, name },
      {
        metadata: { annotations: { [ANNOTATION_TARGET_UID]: store.metadata.uid } },
      },
    );
    const taken = await readyMr(kinds.ObjectStore, name);
    const after = (await target.get<Obj>(RookObjectStores, { namespace: ns, name }))!;
    expect(after.metadata.uid).toBe(store.metadata.uid);
    expect(after.metadata.labels?.[LABEL_OWNER_UID]).toBe(taken.metadata.uid);
    expect((await target.get<Obj>(Secrets, { namespace: ns, name: `${name}-access-keys` }))?.data).toEqual(keys.data);
    await control.delete(kinds.ObjectStore, { namespace: platform, name });
  }, 120_000);
});

describe('review: replayed signatures and imported references', () => {
  beforeAll(() => provider(), 60_000);

  it("a store deleted and re-created by a tenant with our copied marks and signature is not taken for ours: the resource names its store's uid", async () => {
    const ns = uniqueName('replay');
    const name = uniqueName('store');
    await control.create(kinds.ObjectStore, rookStore(name, ns));
    const mr = await readyMr(kinds.ObjectStore, name);
    const ours = (await target.get<Obj>(RookObjectStores, { namespace: ns, name }))!;
    expect(mr.metadata.annotations?.[ANNOTATION_TARGET_UID]).toBe(ours.metadata.uid);
    const mole = await intruder(
      ns,
      [{ apiGroups: ['minio.rook.io'], resources: ['objectstores'], verbs: ['get', 'create', 'delete'] }],
      (c) => c.get(RookObjectStores, { namespace: ns, name }),
    );
    // While provider-rook looks elsewhere (paused), the tenant swaps the store for its own copy.
    await control.mergePatch(
      kinds.ObjectStore,
      { namespace: platform, name },
      { metadata: { annotations: { [ANNOTATION_PAUSED]: 'true' } } },
    );
    await eventually(
      async () => cond(await control.get<Obj>(kinds.ObjectStore, { namespace: platform, name }), 'Synced')?.reason === 'ReconcilePaused',
      'the pause',
    );
    await mole.delete(RookObjectStores, { namespace: ns, name });
    await eventually(async () => (await mole.get(RookObjectStores, { namespace: ns, name })) === undefined, 'our store to be gone');
    const { labels, annotations } = ours.metadata;
    await mole.create(RookObjectStores, {
      apiVersion: RookObjectStores.apiVersion,
      kind: RookObjectStores.kind,
      metadata: { name, namespace: ns, labels, annotations },
      spec: { scope: { nodeCount: 4 }, credentials: { name: 'intruder-keys', namespace: ns } },
    } as KubeObjectLike);
    const copy = fingerprint(await target.get<Obj>(RookObjectStores, { namespace: ns, name }));
    await control.mergePatch(
      kinds.ObjectStore,
      { namespace: platform, name },
      { metadata: { annotations: { [ANNOTATION_PAUSED]: null } } },
    );
    const refused = await syncedFalse(kinds.ObjectStore, name, Reasons.ExternalResourceOwnedByAnother);
    expect(refused.metadata.annotations?.[ANNOTATION_TARGET_UID]).toBe(ours.metadata.uid);
    expect(fingerprint(await target.get<Obj>(RookObjectStores, { namespace: ns, name }))).toEqual({ ...copy, writtenByUs: false });
    await control.delete(kinds.ObjectStore, { namespace: platform, name });
    await eventually(
      async () => (await control.get(kinds.ObjectStore, { namespace: platform, name })) === undefined,
      'the resource to be gone',
    );
    expect(fingerprint(await target.get<Obj>(RookObjectStores, { namespace: ns, name }))).toEqual({ ...copy, writtenByUs: false });
  }, 120_000);

  it("a tenant that rewrites the provisioner's ConfigMap beside a real CephBucket's claim cannot redirect its endpoint", async () => {
    const ns = uniqueName('ceph-team');
    await target.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    const name = uniqueName('bucket');
    await control.create(kinds.CephBucket, cephBucket(name, ns));
    await readyMr(kinds.CephBucket, name);
    const published = secretText((await control.get<Obj>(Secrets, { namespace: platform, name: `${name}-conn` }))!.data);
    const mole = await intruder(ns, [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'patch'] }], (c) =>
      c.get(ConfigMaps, { namespace: ns, name }),
    );
    await mole.mergePatch(
      ConfigMaps,
      { namespace: ns, name },
      {
        data: { BUCKET_HOST: 'exfil.intruder.example', BUCKET_PORT: '80', BUCKET_NAME: 'theirs' },
      },
    );
    // The platform points the resource at a new Secret: written from what provider-rook reads now.
    await control.mergePatch(
      kinds.CephBucket,
      { namespace: platform, name },
      { spec: { writeConnectionSecretToRef: { name: `${name}-conn2` } } },
    );
    const fresh = await eventually(
      async () => (await control.get<Obj>(Secrets, { namespace: platform, name: `${name}-conn2` }))?.data,
      'the new connection Secret',
    );
    expect(secretText(fresh)).toEqual(published);
    expect(JSON.stringify(secretText(fresh))).not.toMatch(/exfil|theirs/);
    await control.delete(kinds.CephBucket, { namespace: platform, name });
  }, 120_000);

  it('an imported store whose spec names a Secret in another namespace never gets that Secret published', async () => {
    const ns = uniqueName('import');
    const elsewhere = uniqueName('payments');
    for (const n of [ns, elsewhere]) await target.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: n } });
    await target.create(Secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'db-creds', namespace: elsewhere },
      data: { username: b64('dbadmin'), password: b64('DB-PASSWORD') },
    } as KubeObjectLike);
    const before = fingerprint(await target.get<Obj>(Secrets, { namespace: elsewhere, name: 'db-creds' }));
    // A tenant's own, unmarked store, which a platform team is then asked to adopt.
    const name = uniqueName('adopt');
    await target.create(RookObjectStores, {
      apiVersion: RookObjectStores.apiVersion,
      kind: RookObjectStores.kind,
      metadata: { name, namespace: ns },
      spec: { scope: { nodeCount: 4 }, credentials: { name: 'db-creds', namespace: elsewhere } },
    } as KubeObjectLike);
    await control.create(kinds.ObjectStore, rookStore(name, ns, {}, { 'crossplane.io/external-name': name }));
    await syncedFalse(kinds.ObjectStore, name, Reasons.CompanionNotOwned);
    expect(await control.get(Secrets, { namespace: platform, name: `${name}-conn` })).toBeUndefined();
    expect(fingerprint(await target.get<Obj>(Secrets, { namespace: elsewhere, name: 'db-creds' }))).toEqual(before);
    await control.delete(kinds.ObjectStore, { namespace: platform, name });
  }, 120_000);
});

describe('finding 2: the leak sweeper deletes only what it can prove it made', () => {
  beforeAll(() => provider(), 60_000);

  it('a Secret its tenant may only get and patch, dressed in copied marks for a missing owner, is reported and kept', async () => {
    const ns = uniqueName('payments');
    await target.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await target.create(Secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'api-token', namespace: ns },
      data: { token: b64('PAYMENTS-TOKEN') },
    } as KubeObjectLike);
    // A real store of ours, whose access-keys Secret's marks the intruder copies (signature and all).
    const real = uniqueName('real');
    const storeNs = uniqueName('stores');
    await control.create(kinds.ObjectStore, rookStore(real, storeNs));
    await readyMr(kinds.ObjectStore, real);
    const copied = (await target.get<Obj>(Secrets, { namespace: storeNs, name: `${real}-access-keys` }))!.metadata;
    const mole = await intruder(
      ns,
      [{ apiGroups: [''], resources: ['secrets'], resourceNames: ['api-token'], verbs: ['get', 'patch'] }],
      (c) => c.get(Secrets, { namespace: ns, name: 'api-token' }),
    );
    const denied = await mole.delete(Secrets, { namespace: ns, name: 'api-token' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((denied as KubeError).code).toBe(403);
    await mole.mergePatch(
      Secrets,
      { namespace: ns, name: 'api-token' },
      {
        metadata: {
          labels: { [LABEL_CONTROL_PLANE]: copied.labels![LABEL_CONTROL_PLANE], [LABEL_OWNER_UID]: copied.labels![LABEL_OWNER_UID] },
          annotations: {
            [ANNOTATION_OWNER]: `objectstores.minio.rook.crossplane.io/${platform}/ghost`,
            [ANNOTATION_RECLAIM_POLICY]: 'Delete',
            [ANNOTATION_OWNER_PROOF]: copied.annotations![ANNOTATION_OWNER_PROOF],
          },
        },
      },
    );
    // And an ObjectStore of its own naming a resource that is gone: the sweeper's own kind.
    const forged = uniqueName('forged');
    await target.create(RookObjectStores, {
      apiVersion: RookObjectStores.apiVersion,
      kind: RookObjectStores.kind,
      metadata: {
        name: forged,
        namespace: ns,
        labels: { [LABEL_CONTROL_PLANE]: rook.app.controlPlaneId, [LABEL_OWNER_UID]: 'gone-uid' },
        annotations: { [ANNOTATION_OWNER]: `objectstores.minio.rook.crossplane.io/${platform}/${forged}` },
      },
      spec: { scope: { nodeCount: 4 } },
    } as KubeObjectLike);
    const secretBefore = fingerprint(await target.get<Obj>(Secrets, { namespace: ns, name: 'api-token' }));
    const storeBefore = fingerprint(await target.get<Obj>(RookObjectStores, { namespace: ns, name: forged }));

    const reports = await rook.app.leaks.sweep();
    const about = reports.filter((r) => r.namespace === ns);
    expect(about.map((r) => [r.kind, r.name, r.deleted]).sort()).toEqual([
      ['ObjectStore', forged, false],
      ['Secret', 'api-token', false],
    ]);
    for (const r of about) expect(r.kept).toMatch(/no valid signature/);
    expect(fingerprint(await target.get<Obj>(Secrets, { namespace: ns, name: 'api-token' }))).toEqual(secretBefore);
    expect(fingerprint(await target.get<Obj>(RookObjectStores, { namespace: ns, name: forged }))).toEqual(storeBefore);
    // Said once, as a report: never a deletion.
    const events = await eventually(async () => {
      const found = (await eventsFor(control, { namespace: platform, name: 'target' })).filter((e) => e.message.includes(ns));
      return found.length >= 2 ? found : undefined;
    }, 'FoundLeakedObject events on the Provider');
    expect(events.every((e) => e.reason === 'FoundLeakedObject')).toBe(true);
    expect(await rook.app.leaks.sweep()).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'api-token', deleted: false })]));
    expect(await target.get(Secrets, { namespace: storeNs, name: `${real}-access-keys` })).toBeDefined();
  }, 120_000);
});

describe('finding 3: a connection Secret is written only when this claim or resource controls it', () => {
  beforeAll(async () => {
    await provider();
    await control.apply(kinds.CephBucketClass, {
      apiVersion: kinds.CephBucketClass.apiVersion,
      kind: 'CephBucketClass',
      metadata: { name: 'standard', namespace: platform },
      spec: { storageClassName: 'rook-ceph-bucket', providerRef: { name: 'target' } },
    } as KubeObjectLike);
    await control.apply(
      BucketClasses,
      bucketClass({ name: 'standard', namespace: appNs }, kinds.CephBucketClass, { name: 'standard', namespace: platform }),
    );
  }, 60_000);

  it("a claim naming another app's uncontrolled connection-type Secret gets ConnectionSecretConflict; the Secret is never written, and outlives the claim", async () => {
    // Another app's Secret, of the connection type, with no owner: as after a restore, or by hand.
    await control.create(Secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      type: CONNECTION_SECRET_TYPE,
      metadata: { name: 'billing-conn', namespace: appNs },
      data: { endpoint: b64('https://billing.example'), password: b64('BILLING-PASSWORD') },
    } as KubeObjectLike);
    const before = fingerprint(await control.get<Obj>(Secrets, { namespace: appNs, name: 'billing-conn' }));
    const appTeam = await identityClient(
      testCluster('control'),
      control,
      { namespace: appNs, name: 'app-team' },
      { role: 'provider-rook:app-team' },
    );
    await eventually(async () => {
      await appTeam.list(Buckets, { namespace: appNs });
      return true;
    }, "the app team's role to reach the authorizer");
    await appTeam.create(Buckets, {
      apiVersion: Buckets.apiVersion,
      kind: 'Bucket',
      metadata: { name: 'grab', namespace: appNs },
      spec: { classRef: { name: 'standard' }, writeConnectionSecretToRef: { name: 'billing-conn' } },
    } as KubeObjectLike);
    const claim = await syncedFalse(Buckets, 'grab', Reasons.ConnectionSecretConflict, appNs);
    expect(cond(claim, 'Synced')?.message).toMatch(/billing-conn.*not controlled/);
    expect(fingerprint(await control.get<Obj>(Secrets, { namespace: appNs, name: 'billing-conn' }))).toEqual(before);

    await appTeam.delete(Buckets, { namespace: appNs, name: 'grab' });
    await eventually(async () => (await control.get(Buckets, { namespace: appNs, name: 'grab' })) === undefined, 'the claim to be gone');
    expect(fingerprint(await control.get<Obj>(Secrets, { namespace: appNs, name: 'billing-conn' }))).toEqual(before);
  }, 120_000);

  it('a managed resource naming an uncontrolled connection-type Secret is refused the same way', async () => {
    await control.create(Secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      type: CONNECTION_SECRET_TYPE,
      metadata: { name: 'handmade-conn', namespace: platform },
      data: { endpoint: b64('https://kept.example') },
    } as KubeObjectLike);
    const before = fingerprint(await control.get<Obj>(Secrets, { namespace: platform, name: 'handmade-conn' }));
    const name = uniqueName('conn');
    const mr = cephBucket(name, uniqueName('ceph')) as KubeObjectLike & { spec: Record<string, unknown> };
    await control.create(kinds.CephBucket, {
      ...mr,
      spec: { ...mr.spec, writeConnectionSecretToRef: { name: 'handmade-conn' } },
    } as KubeObjectLike);
    await syncedFalse(kinds.CephBucket, name, Reasons.ConnectionSecretConflict);
    expect(fingerprint(await control.get<Obj>(Secrets, { namespace: platform, name: 'handmade-conn' }))).toEqual(before);
    await control.delete(kinds.CephBucket, { namespace: platform, name });
    await eventually(
      async () => (await control.get(kinds.CephBucket, { namespace: platform, name })) === undefined,
      'the CephBucket to be gone',
    );
    expect(fingerprint(await control.get<Obj>(Secrets, { namespace: platform, name: 'handmade-conn' }))).toEqual(before);
  }, 120_000);
});

describe('upgrade: marks written before they were signed', () => {
  beforeAll(() => provider(), 60_000);

  it("are signed by their own resource once (store, keys, namespace), and the store's uid is recorded; an unsigned leak is reported, never deleted", async () => {
    const ns = uniqueName('legacy');
    const name = uniqueName('old');
    const gone = uniqueName('oldgone');
    // One after the other: the namespace is the first store's.
    await control.create(kinds.ObjectStore, rookStore(name, ns));
    await readyMr(kinds.ObjectStore, name);
    await control.create(kinds.ObjectStore, rookStore(gone, ns));
    await readyMr(kinds.ObjectStore, gone);
    // What an earlier provider-rook left: marks without a signature, and no recorded uid.
    const strip = { metadata: { annotations: { [ANNOTATION_OWNER_PROOF]: null } } };
    for (const n of [name, gone]) {
      await control.mergePatch(
        kinds.ObjectStore,
        { namespace: platform, name: n },
        {
          metadata: { annotations: { [ANNOTATION_PAUSED]: 'true', [ANNOTATION_TARGET_UID]: null } },
        },
      );
    }
    // Paused as said, before the marks go: a pass already under way would sign them again.
    for (const n of [name, gone]) await syncedFalse(kinds.ObjectStore, n, 'ReconcilePaused');
    for (const n of [name, gone]) {
      await target.mergePatch(RookObjectStores, { namespace: ns, name: n }, strip);
      await target.mergePatch(Secrets, { namespace: ns, name: `${n}-access-keys` }, strip);
      await target.mergePatch(Services, { namespace: ns, name: `${n}-s3` }, strip);
    }
    await target.mergePatch(Namespaces, { name: ns }, strip);
    // One owner leaves behind provider-rook's back.
    await control.mergePatch(kinds.ObjectStore, { namespace: platform, name: gone }, { metadata: { finalizers: null } });
    await control.delete(kinds.ObjectStore, { namespace: platform, name: gone });
    await eventually(
      async () => (await control.get(kinds.ObjectStore, { namespace: platform, name: gone })) === undefined,
      'the resource to be gone',
    );

    const reports = await rook.app.leaks.sweep();
    const leaked = reports.filter((r) => r.owner === `${platform}/${gone}`);
    expect(leaked.length).toBeGreaterThan(0);
    expect(leaked.every((r) => !r.deleted && /no valid signature/.test(r.kept ?? ''))).toBe(true);
    expect(await target.get(RookObjectStores, { namespace: ns, name: gone })).toBeDefined();

    await control.mergePatch(
      kinds.ObjectStore,
      { namespace: platform, name },
      { metadata: { annotations: { [ANNOTATION_PAUSED]: null } } },
    );
    const signed = await eventually(async () => {
      const [mr, store, keys, namespace] = await Promise.all([
        control.get<Obj>(kinds.ObjectStore, { namespace: platform, name }),
        target.get<Obj>(RookObjectStores, { namespace: ns, name }),
        target.get<Obj>(Secrets, { namespace: ns, name: `${name}-access-keys` }),
        target.get<Obj>(Namespaces, { name: ns }),
      ]);
      const proven = [store, keys, namespace].every((o) => o?.metadata.annotations?.[ANNOTATION_OWNER_PROOF]);
      return proven && mr?.metadata.annotations?.[ANNOTATION_TARGET_UID] === store?.metadata.uid ? mr : undefined;
    }, "the legacy store, keys and namespace to be signed, and the store's uid recorded");
    expect(cond(signed, 'Synced')?.status).toBe('True');
  }, 120_000);
});
