// End-to-end: provider-rook as its own process (or Pod) with least-privilege identities, one control
// cluster and two targets. The same specs run on kind (make e2e) and on local control planes
// (make e2e-local, part of make test); see e2e/support/backend.ts.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { repoRoot } from '../kit/cluster.ts';
import { applyManifests, loadManifests, typeFor, type Manifest } from '../kit/manifests.ts';
import { BucketClasses, BucketPolicies, Buckets } from '../../src/app.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { ObjectStore } from '../../src/backends/rook-minio/api.ts';
import type { Bucket } from '../../src/apis/storage.ts';
import { RookObjectStores } from '../../src/backends/rook-minio/objectstore.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Events, Secrets, Services, StatefulSets, type ResourceType } from '../../src/kit/kube/resources.ts';
import { secretText } from '../../src/runtime/providers/credentials.ts';
import { Providers } from '../../src/runtime/system/provider-status.ts';
import { environment, type E2EEnvironment } from './support/backend.ts';
import { S3_KEY_NAMES } from '../kit/s3-keys.ts';
import { eventually, type EventuallyOptions } from '../kit/eventually.ts';
import { cond } from '../kit/conditions.ts';
import { ownStoreBackends, type OwnStoreBackend } from '../fakes/backends.ts';

const PLATFORM = 'rook-infra-dev';
const APP = 'app-project1-dev';
const samples = path.join(repoRoot, 'config', 'samples');
const sample = (f: string): Manifest[] => loadManifests(path.join(samples, f));

/**
 * The samples' portable class of a backend (config/samples/NAME/, else config/samples/): the first
 * BucketClass naming a class of its kind, and that class. Each backend that makes a store of a claim's
 * own shows one; the spec fails for one that does not.
 */
function portableSample(backend: OwnStoreBackend): { className: string; docs: Manifest[]; files: string[] } {
  const dirs = [path.join(samples, backend.name), samples].filter((d) => existsSync(d));
  const found = dirs.flatMap((d) =>
    readdirSync(d)
      .filter((f) => f.endsWith('.yaml'))
      .sort()
      .flatMap((f) => loadManifests(path.join(d, f)).map((doc) => ({ doc, file: path.relative(samples, path.join(d, f)) }))),
  );
  type Ref = { kind?: string; name?: string };
  const portable = found.find(({ doc }) => doc.kind === 'BucketClass' && (doc.classRef as Ref | undefined)?.kind === backend.class.kind);
  const ref = portable?.doc.classRef as Ref | undefined;
  const cls = found.find(({ doc }) => doc.kind === backend.class.kind && doc.metadata.name === ref?.name);
  if (!portable || !cls)
    throw new Error(`config/samples shows no BucketClass naming a ${backend.class.kind} of ${backend.name}, with that class`);
  return { className: portable.doc.metadata.name, docs: [cls.doc, portable.doc], files: [...new Set([cls.file, portable.file])] };
}

type Conditioned = KubeObjectLike & {
  spec?: Record<string, unknown>;
  status?: { bindingPhase?: string; conditions?: { type: string; status: string; reason: string; message?: string }[] };
};
type TargetStore = KubeObjectLike & { metadata: { uid?: string; labels?: Record<string, string> }; spec: { scope: { nodeCount: number } } };

jest.setTimeout(180_000);

let env: E2EEnvironment;
let control: KubeClient;

const step = (line: string): void => console.log(`[e2e:${env.backend}] ${line}`);

/** Current conditions and events of the objects a scenario is about: what a failure shows. */
async function explain(objects: [ResourceType, string, string][]): Promise<string> {
  const lines: string[] = [];
  for (const [type, ns, name] of objects) {
    const obj = await control
      .get<Conditioned & { spec?: { resourceRef?: { apiVersion?: string; kind?: string; name: string; namespace?: string } } }>(type, {
        namespace: ns,
        name,
      })
      .catch(() => undefined);
    lines.push(
      `${type.kind} ${ns}/${name}: ${obj ? `phase=${obj.status?.bindingPhase ?? '-'} ${JSON.stringify(obj.status?.conditions ?? [])}` : 'absent'}`,
    );
    // A claim's managed resource tells what holds it up.
    const ref = obj?.spec?.resourceRef;
    if (ref?.kind && ref.namespace) {
      const mr = await control
        .get<Conditioned>(typeFor({ apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name } }), {
          namespace: ref.namespace,
          name: ref.name,
        })
        .catch(() => undefined);
      lines.push(`  its ${ref.kind} ${ref.namespace}/${ref.name}: ${mr ? JSON.stringify(mr.status?.conditions ?? []) : 'absent'}`);
    }
    const { items } = await control
      .list<KubeObjectLike & { involvedObject: { name: string }; reason: string; message: string }>(Events, { namespace: ns })
      .catch(() => ({ items: [] }));
    for (const e of items.filter((e) => e.involvedObject.name === name).slice(-5)) lines.push(`  event ${e.reason}: ${e.message}`);
  }
  return `${lines.join('\n')}\nprovider logs: ${env.logs}`;
}

/** How a spec waits: up to 90 s, and a timeout shows the conditions and events of `objects`. */
const about = (...objects: [ResourceType, string, string][]): EventuallyOptions => ({
  timeoutMs: 90_000,
  delayMs: 100,
  maxDelayMs: 1_000,
  explain: () => explain(objects),
});

const getBucket = (ns: string, name: string) => control.get<Bucket & Conditioned>(Buckets, { namespace: ns, name });

async function bound(ns: string, name: string): Promise<Bucket> {
  return eventually(
    async () => {
      const b = await getBucket(ns, name);
      return b?.status?.bindingPhase === 'Bound' && cond(b, 'Ready')?.status === 'True' ? b : undefined;
    },
    `Bucket ${ns}/${name} to be Bound and Ready`,
    about([Buckets, ns, name]),
  );
}

const bucketClass = (ns: string, className: string) => ({
  apiVersion: BucketClasses.apiVersion,
  kind: 'BucketClass',
  metadata: { name: 'standard', namespace: ns },
  classRef: { kind: 'ObjectStoreClass', apiVersion: kinds.ObjectStoreClass.apiVersion, name: className, namespace: PLATFORM },
});
const bucket = (ns: string, name: string, withClass = true) => ({
  apiVersion: Buckets.apiVersion,
  kind: 'Bucket',
  metadata: { name, namespace: ns },
  spec: { ...(withClass ? { classRef: { name: 'standard' } } : {}), writeConnectionSecretToRef: { name: `${name}-conn` } },
});
const namespace = (name: string) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
const secret = (ns: string, name: string, keys: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace: ns },
  type: 'Opaque',
  data: Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
});
const provider = (name: string, secretName: string) => ({
  apiVersion: Providers.apiVersion,
  kind: 'Provider',
  metadata: { name, namespace: PLATFORM },
  spec: { credentialsSecretRef: { name: secretName } },
});
/** An ObjectStoreClass like config/samples/02-objectstoreclass.yaml's, with changes. */
/** A store of the samples' ObjectStoreClass lives in a target namespace of its own. */
const storeNs = (store: string): string => `rook-minio-${store}`;

function storeClass(name: string, spec: Record<string, unknown>): Manifest {
  const [base] = sample('02-objectstoreclass.yaml');
  return { ...base!, metadata: { name, namespace: PLATFORM }, spec: { ...(base!.spec as object), ...spec } };
}
function managedStore(name: string, providerName: string, targetNamespace: string, annotations?: Record<string, string>): Manifest {
  return {
    apiVersion: kinds.ObjectStore.apiVersion,
    kind: 'ObjectStore',
    metadata: { name, namespace: PLATFORM, ...(annotations ? { annotations } : {}) },
    spec: {
      forProvider: { scope: { nodeCount: 4 } },
      targetNamespace,
      providerRef: { name: providerName },
      writeConnectionSecretToRef: { name: `${name}-conn` },
    },
  };
}
const getManaged = (name: string) => control.get<ObjectStore & Conditioned>(kinds.ObjectStore, { namespace: PLATFORM, name });

beforeAll(async () => {
  env = await environment();
  control = env.control;
  // Step 1: the Provider of config/samples/ (in rook-infra-dev), its Secret holding target A's
  // least-privilege ServiceAccount token; and a second Provider for target B.
  await applyManifests(control, sample('00-namespaces.yaml'));
  await applyManifests(control, [
    secret(PLATFORM, 'demo-provider-rook', env.targets[0].providerSecret),
    ...sample('01-provider.yaml'),
    secret(PLATFORM, 'target-b-creds', env.targets[1].providerSecret),
    provider('target-b', 'target-b-creds'),
  ]);
}, 600_000);

afterAll(async () => {
  await env?.teardown();
}, 300_000);

describe(`provider-rook end to end`, () => {
  let designStore = '';

  it('binds the Bucket of config/samples/ (steps 2-4 verbatim) and writes its Secret', async () => {
    step('applying config/samples/02-04 verbatim; expecting Bucket app-bucket Bound and Secret bucketsecret');
    for (const f of ['02-objectstoreclass.yaml', '03-bucketclass.yaml', '04-bucket.yaml']) await applyManifests(control, sample(f));
    const claim = await bound(APP, 'app-bucket');
    designStore = claim.spec.resourceRef!.name;
    const keys = secretText(
      (await control.get<KubeObjectLike & { data?: Record<string, string> }>(Secrets, { namespace: APP, name: 'bucketsecret' }))?.data,
    );
    expect(Object.keys(keys).sort()).toEqual(S3_KEY_NAMES);
    // Each store of the class in a namespace of its own, its root keys beside it.
    const store = await env.targets[0].admin.get<TargetStore>(RookObjectStores, { namespace: storeNs(designStore), name: designStore });
    expect(store?.spec.scope.nodeCount).toBe(4);
    expect(await env.targets[1].admin.get(RookObjectStores, { namespace: storeNs(designStore), name: designStore })).toBeUndefined();
    step(`store ${designStore} is in ${env.targets[0].name} with nodeCount 4 and nowhere else`);
    if (env.s3RoundTrip) {
      step("S3 round-trip (put, get, list, delete in its bucket) with the claim's Secret through a port-forward");
      await env.s3RoundTrip(APP, 'bucketsecret');
    }
  });

  it('binds the Bucket of config/samples/ through each backend: only classRef.name changes, the Secret keys do not', async () => {
    const [design] = sample('04-bucket.yaml');
    const tried: string[] = [];
    for (const backend of ownStoreBackends) {
      if (env.unavailable[backend.name]) {
        step(`${backend.name}: skipped here: ${env.unavailable[backend.name]}`);
        continue;
      }
      const { className, docs, files } = portableSample(backend);
      step(`${backend.name}: ${files.join(' and ')} and the Bucket of config/samples/ with classRef.name ${className}`);
      await applyManifests(control, docs);
      const name = `portable-${backend.name}`;
      await applyManifests(control, [
        {
          ...design!,
          metadata: { name, namespace: APP },
          spec: { ...(design!.spec as object), classRef: { name: className }, writeConnectionSecretToRef: { name } },
        },
      ]);
      tried.push(name);
      await bound(APP, name);
      const keys = secretText(
        (await control.get<KubeObjectLike & { data?: Record<string, string> }>(Secrets, { namespace: APP, name }))?.data,
      );
      expect([backend.name, Object.keys(keys).sort()]).toEqual([backend.name, S3_KEY_NAMES]);
    }
    for (const name of tried) {
      await control.delete(Buckets, { namespace: APP, name });
      await eventually(async () => !(await getBucket(APP, name)), `claim ${name} to be gone`, about([Buckets, APP, name]));
    }
  });

  it("fills a claim's class from the namespace's BucketPolicy", async () => {
    step('Bucket without classRef in e2e-defaults, with one BucketPolicy: expecting the class filled in and Bound');
    await applyManifests(control, [
      namespace('e2e-defaults'),
      bucketClass('e2e-defaults', 'rook-minio'),
      {
        apiVersion: BucketPolicies.apiVersion,
        kind: 'BucketPolicy',
        metadata: { name: 'default', namespace: 'e2e-defaults' },
        spec: { defaultClassRef: { name: 'standard' } },
      },
      bucket('e2e-defaults', 'defaulted', false),
    ]);
    expect((await bound('e2e-defaults', 'defaulted')).spec.classRef).toEqual({ name: 'standard' });
  });

  it('repairs drift in the target', async () => {
    step(`setting nodeCount 6 on ${designStore} in the target by hand: expecting 4 again`);
    await env.targets[0].admin.mergePatch(
      RookObjectStores,
      { namespace: storeNs(designStore), name: designStore },
      { spec: { scope: { nodeCount: 6 } } },
    );
    await eventually(
      async () =>
        (await env.targets[0].admin.get<TargetStore>(RookObjectStores, { namespace: storeNs(designStore), name: designStore }))?.spec.scope
          .nodeCount === 4,
      'nodeCount to be repaired',
      about([kinds.ObjectStore, PLATFORM, designStore]),
    );
  });

  it('recreates a target store deleted by hand', async () => {
    const before = await env.targets[0].admin.get<TargetStore>(RookObjectStores, { namespace: storeNs(designStore), name: designStore });
    step(`deleting ${designStore} in the target by hand: expecting it recreated`);
    await env.targets[0].admin.delete(RookObjectStores, { namespace: storeNs(designStore), name: designStore });
    await eventually(
      async () => {
        const now = await env.targets[0].admin.get<TargetStore>(RookObjectStores, { namespace: storeNs(designStore), name: designStore });
        return now !== undefined && now.metadata.uid !== before?.metadata.uid;
      },
      'the store to be recreated',
      about([kinds.ObjectStore, PLATFORM, designStore]),
    );
    await bound(APP, 'app-bucket');
  });

  it('puts each claim in the target its class points at (one control cluster, two targets)', async () => {
    step("class rook-minio-b points at Provider target-b: expecting the claim's store in the second target only");
    await applyManifests(control, [
      storeClass('rook-minio-b', { providerRef: { name: 'target-b', namespace: PLATFORM } }),
      namespace('e2e-two'),
      bucketClass('e2e-two', 'rook-minio-b'),
      bucket('e2e-two', 'on-b'),
    ]);
    const name = (await bound('e2e-two', 'on-b')).spec.resourceRef!.name;
    expect(await env.targets[1].admin.get(RookObjectStores, { namespace: storeNs(name), name })).toBeDefined();
    expect(await env.targets[0].admin.get(RookObjectStores, { namespace: storeNs(name), name })).toBeUndefined();
  });

  it('says a target is unreachable while it is down for 30 s, and recovers after', async () => {
    const name = (await getBucket('e2e-two', 'on-b'))!.spec.resourceRef!.name;
    step(`stopping ${env.targets[1].name} for 30 s: expecting Synced=False (Unreachable) on ${name}, then recovery`);
    await env.targets[1].stop();
    const down = Date.now();
    const failing = await eventually(
      async () => {
        const mr = await getManaged(name);
        return cond(mr, 'Synced')?.status === 'False' ? mr : undefined;
      },
      'Synced=False on the store of the stopped target',
      about([kinds.ObjectStore, PLATFORM, name]),
    );
    expect(cond(failing, 'Synced')?.reason).toBe('Unreachable');
    step(`condition while down: ${cond(failing, 'Synced')?.message}`);
    await new Promise((r) => setTimeout(r, Math.max(0, 30_000 - (Date.now() - down))));
    await env.targets[1].start();
    await eventually(
      async () => {
        const mr = await getManaged(name);
        return cond(mr, 'Synced')?.status === 'True' && cond(mr, 'Ready')?.status === 'True';
      },
      'the store to be Synced and Ready again',
      about([kinds.ObjectStore, PLATFORM, name]),
    );
  }, 180_000);

  it('honours reclaim policies: Delete removes the store, Retain keeps it Released', async () => {
    const deleted = (await getBucket('e2e-defaults', 'defaulted'))!.spec.resourceRef!.name;
    step(`deleting claim e2e-defaults/defaulted (Delete): expecting ${deleted} gone in both clusters`);
    await control.delete(Buckets, { namespace: 'e2e-defaults', name: 'defaulted' });
    await eventually(
      async () =>
        !(await getManaged(deleted)) && !(await env.targets[0].admin.get(RookObjectStores, { namespace: storeNs(deleted), name: deleted })),
      'the managed resource and the target store to be gone',
      about([Buckets, 'e2e-defaults', 'defaulted']),
    );
    // What the operator made for it goes too: MinIO must stop running. (Its data volumes stay; see the README.)
    const target = env.targets[0].admin;
    expect(await target.get(StatefulSets, { namespace: storeNs(deleted), name: deleted })).toBeUndefined();
    expect(await target.get(Services, { namespace: storeNs(deleted), name: deleted })).toBeUndefined();
    expect(await target.get(Services, { namespace: storeNs(deleted), name: `${deleted}-s3` })).toBeUndefined();
    expect(await target.get(Secrets, { namespace: storeNs(deleted), name: `${deleted}-access-keys` })).toBeUndefined();

    step('claim on a Retain class, then deleted: expecting the managed resource Released and the store kept');
    await applyManifests(control, [
      storeClass('rook-minio-retain', { reclaimPolicy: 'Retain' }),
      namespace('e2e-retain'),
      bucketClass('e2e-retain', 'rook-minio-retain'),
      bucket('e2e-retain', 'kept'),
    ]);
    const kept = (await bound('e2e-retain', 'kept')).spec.resourceRef!.name;
    await control.delete(Buckets, { namespace: 'e2e-retain', name: 'kept' });
    await eventually(
      async () => (await getManaged(kept))?.status?.bindingPhase === 'Released',
      'the managed resource to be Released',
      about([kinds.ObjectStore, PLATFORM, kept]),
    );
    expect(await env.targets[0].admin.get(RookObjectStores, { namespace: storeNs(kept), name: kept })).toBeDefined();
  });

  it('finds and removes the leaked store of a managed resource whose finalizer was stripped', async () => {
    step('managed ObjectStore "leaky" force-removed (finalizer stripped): expecting its target store cleaned up by the leak sweeper');
    await applyManifests(control, [managedStore('leaky', 'demo-kubernetes', 'e2e-leaks')]);
    await eventually(
      async () => cond(await getManaged('leaky'), 'Ready')?.status === 'True',
      'leaky to be Ready',
      about([kinds.ObjectStore, PLATFORM, 'leaky']),
    );
    // Paused in the same write: otherwise a reconcile may restore the finalizer and delete it properly.
    await control.mergePatch(
      kinds.ObjectStore,
      { namespace: PLATFORM, name: 'leaky' },
      {
        metadata: { finalizers: null, annotations: { 'crossplane.io/paused': 'true' } },
      },
    );
    await control.delete(kinds.ObjectStore, { namespace: PLATFORM, name: 'leaky' });
    await eventually(async () => !(await getManaged('leaky')), 'the managed resource to be gone', about());
    expect(await env.targets[0].admin.get(RookObjectStores, { namespace: 'e2e-leaks', name: 'leaky' })).toBeDefined();
    await eventually(
      async () => !(await env.targets[0].admin.get(RookObjectStores, { namespace: 'e2e-leaks', name: 'leaky' })),
      'the leaked target store to be removed',
      about(),
    );
  });

  it('imports an existing store named by crossplane.io/external-name', async () => {
    step('a store made in the target by someone else, then a managed ObjectStore naming it: expecting it adopted');
    const target = env.targets[0].admin;
    await applyManifests(target, [
      namespace('legacy'),
      secret('legacy', 'legacy-keys', { username: 'legacyuser', password: 'legacypassword123' }),
    ]);
    await target.apply(RookObjectStores, {
      apiVersion: RookObjectStores.apiVersion,
      kind: 'ObjectStore',
      metadata: { name: 'legacy-store', namespace: 'legacy' },
      spec: { scope: { nodeCount: 4 }, credentials: { name: 'legacy-keys', namespace: 'legacy' } },
    } as KubeObjectLike);
    await applyManifests(control, [
      managedStore('imported', 'demo-kubernetes', 'legacy', { 'crossplane.io/external-name': 'legacy-store' }),
    ]);
    const mr = await eventually(
      async () => {
        const m = await getManaged('imported');
        return cond(m, 'Ready')?.status === 'True' ? m : undefined;
      },
      'imported to be Ready',
      about([kinds.ObjectStore, PLATFORM, 'imported']),
    );
    const store = await target.get<TargetStore>(RookObjectStores, { namespace: 'legacy', name: 'legacy-store' });
    expect(store?.metadata.labels?.['rook.crossplane.io/owner-uid']).toBe(mr.metadata.uid);
    expect(mr.spec.forProvider.credentials).toEqual({ name: 'legacy-keys', namespace: 'legacy' });
  });

  it('reports wrong credentials clearly and recovers, without a restart, once the Secret is fixed', async () => {
    step('Provider "wrong" with a bad token: expecting Synced=False (Unauthorized); then the right token: expecting Ready');
    await applyManifests(control, [
      secret(PLATFORM, 'wrong-creds', { ...env.targets[0].providerSecret, token: 'not-a-valid-token' }),
      provider('wrong', 'wrong-creds'),
      managedStore('with-wrong-creds', 'wrong', 'e2e-creds'),
    ]);
    const failing = await eventually(
      async () => {
        const m = await getManaged('with-wrong-creds');
        return cond(m, 'Synced')?.status === 'False' ? m : undefined;
      },
      'Synced=False',
      about([kinds.ObjectStore, PLATFORM, 'with-wrong-creds']),
    );
    expect(cond(failing, 'Synced')?.reason).toBe('Unauthorized');
    expect(JSON.stringify(failing.status)).not.toContain('not-a-valid-token');
    await applyManifests(control, [secret(PLATFORM, 'wrong-creds', env.targets[0].providerSecret)]);
    await eventually(
      async () => cond(await getManaged('with-wrong-creds'), 'Ready')?.status === 'True',
      'Ready after the fix',
      about([kinds.ObjectStore, PLATFORM, 'with-wrong-creds']),
    );
  }, 180_000);

  it("delivers a claim's credentials where its app runs, says where it cannot, and takes them back with the claim", async () => {
    const [a, b] = env.targets;
    const where = 'app-consumer';
    step(`a claim with two consumers: ${a.name}/${where}, beside its store, and ${b.name}/${where}, which has no way to reach it`);
    await applyManifests(control, [namespace('e2e-consumers'), bucketClass('e2e-consumers', 'rook-minio')]);
    for (const t of env.targets) await applyManifests(t.admin, [namespace(where)]);
    // The platform team's consent, given by each consumer cluster's Provider.
    for (const name of ['demo-kubernetes', 'target-b'])
      await control.mergePatch(
        Providers,
        { namespace: PLATFORM, name },
        {
          spec: { consumers: [{ claimNamespace: 'e2e-consumers', namespaces: [where] }] },
        },
      );
    await control.create(Buckets, {
      ...bucket('e2e-consumers', 'shipped'),
      spec: {
        ...bucket('e2e-consumers', 'shipped').spec,
        consumers: ['demo-kubernetes', 'target-b'].map((name) => ({ providerRef: { name, namespace: PLATFORM }, namespace: where })),
      },
    });
    type Delivery = { to: string; delivered: boolean; endpoint?: string; reason?: string; message?: string };
    const deliveries = await eventually(
      async () => {
        const d = ((await getBucket('e2e-consumers', 'shipped'))?.status as { deliveries?: Delivery[] } | undefined)?.deliveries;
        return d?.length === 2 && d[0]!.delivered && d[1]!.reason ? d : undefined;
      },
      'the claim delivered to its first consumer, and the second one explained',
      about([Buckets, 'e2e-consumers', 'shipped']),
    );
    expect(deliveries[0]).toMatchObject({ to: `${PLATFORM}/demo-kubernetes/${where}`, delivered: true, endpoint: 'ClusterDNS' });
    // The store is in the first target and the class exposes it nowhere else: no endpoint that would not resolve.
    expect(deliveries[1]).toMatchObject({ to: `${PLATFORM}/target-b/${where}`, delivered: false, reason: 'NoEndpointForConsumer' });
    expect(deliveries[1]!.message).toContain('spec.consumers[1]');
    const own = await control.get<KubeObjectLike & { data?: Record<string, string> }>(Secrets, {
      namespace: 'e2e-consumers',
      name: 'shipped-conn',
    });
    const copy = await a.admin.get<KubeObjectLike & { metadata: { labels?: Record<string, string> }; data?: Record<string, string> }>(
      Secrets,
      { namespace: where, name: 'shipped-conn' },
    );
    expect(copy?.data).toEqual(own?.data);
    expect(copy?.metadata.labels?.['rook.crossplane.io/delivered']).toBe('true');
    expect(await b.admin.get(Secrets, { namespace: where, name: 'shipped-conn' })).toBeUndefined();
    if (env.s3RoundTrip) {
      step(`S3 round-trip with the Secret as the app reads it in ${a.name}/${where}`);
      await env.s3RoundTrip(where, 'shipped-conn', a.admin);
    }
    step('deleting the claim: its delivered Secret goes with it');
    await control.delete(Buckets, { namespace: 'e2e-consumers', name: 'shipped' });
    await eventually(
      async () => ((await a.admin.get(Secrets, { namespace: where, name: 'shipped-conn' })) ? undefined : true),
      'the delivered Secret to be removed',
      about([Buckets, 'e2e-consumers', 'shipped']),
    );
    await eventually(async () => ((await getBucket('e2e-consumers', 'shipped')) ? undefined : true), 'the claim to be gone', about());
  }, 180_000);

  it('makes no duplicate when provider-rook is killed mid-create and restarted', async () => {
    step('5 claims, provider killed as soon as the first managed resource appears, then restarted: expecting exactly 5');
    await applyManifests(control, [namespace('e2e-crash'), bucketClass('e2e-crash', 'rook-minio')]);
    const names = ['c0', 'c1', 'c2', 'c3', 'c4'];
    const ours = async () =>
      (
        await control.list<ObjectStore>(kinds.ObjectStore, {
          namespace: PLATFORM,
          labelSelector: 'crossplane.io/claim-namespace=e2e-crash',
        })
      ).items;
    await Promise.all(names.map((n) => control.create(Buckets, bucket('e2e-crash', n))));
    await eventually(async () => (await ours()).length > 0, 'a first managed resource', about());
    await env.provider.kill();
    step(`killed with ${(await ours()).length} managed resource(s) made; restarting`);
    await env.provider.start();
    const claims = await Promise.all(names.map((n) => bound('e2e-crash', n)));
    const managed = await ours();
    expect(managed).toHaveLength(5);
    expect(new Set(managed.map((m) => m.spec.claimRef?.uid))).toEqual(new Set(claims.map((c) => c.metadata.uid)));
  }, 180_000);
});
