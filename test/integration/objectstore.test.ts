// The managed ObjectStore against two real API servers: control (provider-rook's CRs) and target
// (where the minio.rook.io ObjectStore lands). The MinIO operator is played by a test double.
import { registry } from '../../src/kit/metrics.ts';
import { describe, expect, it } from '@jest/globals';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { ObjectStore } from '../../src/backends/rook-minio/api.ts';
import { RookObjectStores } from '../../src/backends/rook-minio/objectstore.ts';
import type { KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Namespaces, Secrets } from '../../src/kit/kube/resources.ts';
import { Providers } from '../../src/runtime/system/provider-status.ts';
import { secretText } from '../../src/runtime/providers/credentials.ts';
import { testCluster, uniqueName } from '../kit/env.ts';
import { eventsFor, providerSecretKeys, writeSecret } from '../kit/provider.ts';
import { s3Keys } from '../kit/s3-keys.ts';
import { eventually } from '../kit/eventually.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { cond } from '../kit/conditions.ts';

type Target = KubeObjectLike & {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: { scope: { nodeCount: number }; credentials: { name: string; namespace: string } };
};

const env = withProviderRook({
  namespaces: { apps: 'mr' },
  app: { pollIntervalMs: 2_000 },
  before: async () => {
    await provider('target', providerSecretKeys(testCluster('target')));
  },
});

function store(
  name: string,
  extra: {
    annotations?: Record<string, string>;
    reclaimPolicy?: string;
    provider?: string;
    targetNamespace?: string;
    nodeCount?: number;
  } = {},
) {
  return {
    apiVersion: kinds.ObjectStore.apiVersion,
    kind: 'ObjectStore',
    metadata: { name, namespace: env.ns.apps, ...(extra.annotations ? { annotations: extra.annotations } : {}) },
    spec: {
      forProvider: { scope: { nodeCount: extra.nodeCount ?? 4 } },
      targetNamespace: extra.targetNamespace ?? uniqueName('minio'),
      providerRef: { name: extra.provider ?? 'target' },
      reclaimPolicy: extra.reclaimPolicy ?? 'Delete',
      writeConnectionSecretToRef: { name: `${name}-conn` },
    },
  };
}

async function getStore(name: string): Promise<ObjectStore | undefined> {
  return env.control.get<ObjectStore>(kinds.ObjectStore, { namespace: env.ns.apps, name });
}

async function waitForCondition(name: string, type: string, status: string, reason?: string, timeoutMs = 30_000): Promise<ObjectStore> {
  return eventually(
    async () => {
      const mr = await getStore(name);
      const c = cond(mr, type);
      return c?.status === status && (!reason || c.reason === reason) ? mr : undefined;
    },
    `${name} to be ${type}=${status}${reason ? ` (${reason})` : ''}`,
    timeoutMs,
  );
}

async function provider(name: string, secretKeys: Record<string, string> | undefined): Promise<void> {
  const secretName = `${name}-creds`;
  if (secretKeys) await writeSecret(env.control, { namespace: env.ns.apps, name: secretName }, secretKeys);
  await env.control.apply(Providers, {
    apiVersion: Providers.apiVersion,
    kind: 'Provider',
    metadata: { name, namespace: env.ns.apps },
    spec: { credentialsSecretRef: { name: secretName } },
  });
}

describe('managed ObjectStore', () => {
  it('creates the store in the target, reports Ready and writes the connection Secret', async () => {
    const name = uniqueName('create');
    const mr = store(name);
    await env.control.create(kinds.ObjectStore, mr);
    const ready = await waitForCondition(name, 'Ready', 'True', 'Available');
    expect(cond(ready, 'Synced')?.status).toBe('True');
    expect(ready.metadata.finalizers).toContain('finalizer.managedresource.crossplane.io');
    expect(ready.metadata.annotations?.['crossplane.io/external-name']).toBe(name);
    expect(ready.status?.bindingPhase).toBe('Unbound');

    const obj = await env.target.get<Target>(RookObjectStores, { namespace: mr.spec.targetNamespace, name });
    expect(obj?.spec.scope.nodeCount).toBe(4);
    expect(obj?.metadata.labels?.['rook.crossplane.io/control-plane']).toBe(env.app.controlPlaneId);
    expect(obj?.metadata.labels?.['rook.crossplane.io/owner-uid']).toBe(ready.metadata.uid);
    expect(obj?.spec.credentials).toEqual({ name: `${name}-access-keys`, namespace: mr.spec.targetNamespace });

    const keys = await env.target.get<KubeObjectLike & { data: Record<string, string> }>(Secrets, {
      namespace: mr.spec.targetNamespace,
      name: `${name}-access-keys`,
    });
    const generated = secretText(keys?.data);
    expect(generated.username).toMatch(/^[A-Za-z0-9]{20}$/);
    expect(generated.password).toMatch(/^[A-Za-z0-9]{40}$/);

    const conn = await eventually(
      () =>
        env.control.get<KubeObjectLike & { data: Record<string, string>; type: string }>(Secrets, {
          namespace: env.ns.apps,
          name: `${name}-conn`,
        }),
      'the connection Secret',
    );
    expect(conn.type).toBe('connection.crossplane.io/v1alpha1');
    const host = `${name}-s3.${mr.spec.targetNamespace}.svc.cluster.local`;
    // A store made for no claim has no bucket: its Secret says where it is, and never holds the root keys.
    expect(secretText(conn.data)).toEqual(s3Keys(`http://${host}:9000`, { host: host, port: '9000' }));
    // Late initialization: the access-keys Secret we chose is recorded in the spec.
    expect(ready.spec.forProvider.credentials).toEqual({ name: `${name}-access-keys`, namespace: mr.spec.targetNamespace });
    expect(ready.status?.atProvider).toMatchObject({
      readyReplicas: 4,
      endpoint: `http://${name}-s3.${mr.spec.targetNamespace}.svc.cluster.local:9000`,
    });
    // No secret value ever reaches status or events.
    const events = await eventsFor(env.control, { namespace: env.ns.apps, name });
    expect(events.map((e) => e.reason)).toContain('CreatedExternalResource');
    expect(JSON.stringify([ready.status, events])).not.toContain(generated.password);
  });

  it("never uses a Secret it did not make as a store's keys", async () => {
    const name = uniqueName('keys');
    const mr = store(name);
    await env.target.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: mr.spec.targetNamespace } });
    await writeSecret(
      env.target,
      { namespace: mr.spec.targetNamespace, name: `${name}-access-keys` },
      { username: 'mine', password: 'my-own-secret-key' },
    );
    await env.control.create(kinds.ObjectStore, mr);
    await waitForCondition(name, 'Synced', 'False');
    expect(cond(await env.control.get<ObjectStore>(kinds.ObjectStore, { namespace: env.ns.apps, name }), 'Synced')?.reason).toBe(
      'CompanionNotOwned',
    );
    expect(await env.control.get(Secrets, { namespace: env.ns.apps, name: `${name}-conn` })).toBeUndefined();
    expect(await env.target.get(RookObjectStores, { namespace: mr.spec.targetNamespace, name })).toBeUndefined();
  });

  it('repairs drift in the target: an edited spec and a deleted object', async () => {
    const name = uniqueName('drift');
    const mr = store(name);
    await env.control.create(kinds.ObjectStore, mr);
    await waitForCondition(name, 'Ready', 'True');
    const tns = mr.spec.targetNamespace;

    const obj = (await env.target.get<Target>(RookObjectStores, { namespace: tns, name }))!;
    await env.target.update(RookObjectStores, { ...obj, spec: { ...obj.spec, scope: { nodeCount: 8 } } });
    await eventually(
      async () => (await env.target.get<Target>(RookObjectStores, { namespace: tns, name }))?.spec.scope.nodeCount === 4,
      'the edited spec to be repaired',
      15_000,
    );

    const before = (await env.target.get<Target>(RookObjectStores, { namespace: tns, name }))!;
    await env.target.delete(RookObjectStores, { namespace: tns, name });
    const recreated = await eventually(
      async () => {
        const o = await env.target.get<Target>(RookObjectStores, { namespace: tns, name });
        return o && o.metadata.uid !== before.metadata.uid ? o : undefined;
      },
      'the deleted object to be recreated',
      15_000,
    );
    expect(recreated.spec.scope.nodeCount).toBe(4);
  });

  it("exports crossplane-runtime's managed resource metrics: counts by state, and first readiness, drift and deletion times", async () => {
    const gvk = `gvk="${kinds.ObjectStore.apiVersion}, Kind=ObjectStore"`;
    const scrape = async (): Promise<Map<string, number>> =>
      new Map(
        (await registry.metrics())
          .split('\n')
          .filter((l) => l.startsWith('crossplane_managed_resource_') && l.includes(gvk))
          .map((l) => [l.slice(0, l.indexOf('{')) + (l.match(/le="[^"]+"/)?.[0] ?? ''), Number(l.split(' ').pop())]),
      );
    const before = await scrape();
    const count = (m: Map<string, number>, name: string): number => m.get(`crossplane_managed_resource_${name}_seconds_count`) ?? 0;

    const name = uniqueName('metrics');
    const mr = store(name);
    await env.control.create(kinds.ObjectStore, mr);
    await waitForCondition(name, 'Ready', 'True');
    const cached = (await env.control.list<ObjectStore>(kinds.ObjectStore, { namespace: env.ns.apps })).items;
    const during = await scrape();
    expect(during.get('crossplane_managed_resource_exists')).toBe(cached.length);
    expect(during.get('crossplane_managed_resource_ready')).toBe(cached.filter((o) => cond(o, 'Ready')?.status === 'True').length);
    expect(during.get('crossplane_managed_resource_synced')).toBe(cached.filter((o) => cond(o, 'Synced')?.status === 'True').length);
    expect(count(during, 'first_time_to_readiness') - count(before, 'first_time_to_readiness')).toBe(1);
    expect(count(during, 'first_time_to_reconcile') - count(before, 'first_time_to_reconcile')).toBe(1);

    const obj = (await env.target.get<Target>(RookObjectStores, { namespace: mr.spec.targetNamespace, name }))!;
    await env.target.update(RookObjectStores, { ...obj, spec: { ...obj.spec, scope: { nodeCount: 8 } } });
    await eventually(async () => count(await scrape(), 'drift') > count(during, 'drift'), 'a drift to be measured', 15_000);

    await env.control.delete(kinds.ObjectStore, { namespace: env.ns.apps, name });
    await eventually(async () => (await getStore(name)) === undefined, 'the managed resource to be gone');
    const after = await scrape();
    expect(count(after, 'deletion') - count(during, 'deletion')).toBe(1);
    expect(after.get('crossplane_managed_resource_exists')).toBe(cached.length - 1);
  });

  it('deletes the target store with reclaimPolicy Delete, then releases the finalizer', async () => {
    const name = uniqueName('del');
    const mr = store(name);
    await env.control.create(kinds.ObjectStore, mr);
    await waitForCondition(name, 'Ready', 'True');
    await env.control.delete(kinds.ObjectStore, { namespace: env.ns.apps, name });
    await eventually(async () => (await getStore(name)) === undefined, 'the managed resource to be gone');
    expect(await env.target.get(RookObjectStores, { namespace: mr.spec.targetNamespace, name })).toBeUndefined();
    expect(await env.target.get(Secrets, { namespace: mr.spec.targetNamespace, name: `${name}-access-keys` })).toBeUndefined();
    expect(await env.control.get(Secrets, { namespace: env.ns.apps, name: `${name}-conn` })).toBeUndefined();
  });

  it.each(['Retain', 'Orphan'])('keeps the target store with reclaimPolicy %s', async (policy) => {
    const name = uniqueName(policy.toLowerCase());
    const mr = store(name, { reclaimPolicy: policy });
    await env.control.create(kinds.ObjectStore, mr);
    await waitForCondition(name, 'Ready', 'True');
    await env.control.delete(kinds.ObjectStore, { namespace: env.ns.apps, name });
    await eventually(async () => (await getStore(name)) === undefined, 'the managed resource to be gone');
    expect(await env.target.get(RookObjectStores, { namespace: mr.spec.targetNamespace, name })).toBeDefined();
  });

  /** A store someone made in the target before provider-rook, with its own keys, and a managed resource naming it. */
  async function legacyStore(prefix: string, nodeCount: number) {
    const name = uniqueName(prefix);
    const existing = uniqueName('legacy');
    const mr = store(name, { annotations: { 'crossplane.io/external-name': existing } });
    await env.target.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: mr.spec.targetNamespace } });
    await writeSecret(
      env.target,
      { namespace: mr.spec.targetNamespace, name: 'legacy-keys' },
      { username: 'legacy', password: 'legacy-password' },
    );
    await env.target.create(RookObjectStores, {
      apiVersion: RookObjectStores.apiVersion,
      kind: 'ObjectStore',
      metadata: { name: existing, namespace: mr.spec.targetNamespace },
      spec: { scope: { nodeCount }, credentials: { name: 'legacy-keys', namespace: mr.spec.targetNamespace } },
    });
    return { name, existing, mr };
  }

  it('adopts an existing store when the external-name names it (import); the keys it names stay in the target', async () => {
    const { name, existing, mr } = await legacyStore('import', 4);
    await env.control.create(kinds.ObjectStore, mr);
    await waitForCondition(name, 'Ready', 'True');
    const adopted = (await env.target.get<Target>(RookObjectStores, { namespace: mr.spec.targetNamespace, name: existing }))!;
    expect(adopted.metadata.labels?.['rook.crossplane.io/control-plane']).toBe(env.app.controlPlaneId);
    expect((await env.control.get<ObjectStore>(kinds.ObjectStore, { namespace: env.ns.apps, name }))?.spec.forProvider.credentials).toEqual(
      {
        name: 'legacy-keys',
        namespace: mr.spec.targetNamespace,
      },
    );
    const conn = await eventually(
      () => env.control.get<KubeObjectLike & { data: Record<string, string> }>(Secrets, { namespace: env.ns.apps, name: `${name}-conn` }),
      'the connection Secret',
    );
    // The imported store's keys stay in the target: its Secret says where it is.
    const published = secretText(conn.data);
    expect(published.endpoint).toBe(`http://${existing}-s3.${mr.spec.targetNamespace}.svc.cluster.local:9000`);
    expect(JSON.stringify(published)).not.toContain('legacy-password');
    expect(await env.target.get(RookObjectStores, { namespace: mr.spec.targetNamespace, name })).toBeUndefined();
  });

  it('refuses an import that would change what the operator applies only at creation', async () => {
    const { name, existing, mr } = await legacyStore('mismatch', 6);
    await env.control.create(kinds.ObjectStore, mr);
    await waitForCondition(name, 'Synced', 'False');
    const synced = cond(await env.control.get<ObjectStore>(kinds.ObjectStore, { namespace: env.ns.apps, name }), 'Synced');
    expect(synced).toMatchObject({ reason: 'ImportMismatch', message: expect.stringContaining('.spec.scope.nodeCount') });
    const left = (await env.target.get<Target>(RookObjectStores, { namespace: mr.spec.targetNamespace, name: existing }))!;
    expect(left.spec.scope.nodeCount).toBe(6);
    expect(left.metadata.labels?.['rook.crossplane.io/control-plane']).toBeUndefined();
  });

  it('leaves an unowned object in the way untouched and says so', async () => {
    const name = uniqueName('conflict');
    const mr = store(name);
    await env.target.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: mr.spec.targetNamespace } });
    const theirs = await env.target.create<Target>(RookObjectStores, {
      apiVersion: RookObjectStores.apiVersion,
      kind: 'ObjectStore',
      metadata: { name, namespace: mr.spec.targetNamespace },
      spec: { scope: { nodeCount: 6 }, credentials: { name: 'theirs', namespace: mr.spec.targetNamespace } },
    } as unknown as Target);
    await env.control.create(kinds.ObjectStore, mr);
    const failed = await waitForCondition(name, 'Synced', 'False', 'ExternalResourceConflict');
    expect(cond(failed, 'Synced')?.message).toMatch(/already exists in the target cluster and is not owned by this resource/);
    const after = (await env.target.get<Target>(RookObjectStores, { namespace: mr.spec.targetNamespace, name }))!;
    expect(after.metadata.resourceVersion).toBe(theirs.metadata.resourceVersion);
    const events = await eventsFor(env.control, { namespace: env.ns.apps, name });
    expect(events.some((e) => e.type === 'Warning' && e.reason === 'CannotObserveExternalResource')).toBe(true);
  });
});

describe('bad credentials', () => {
  const cases: [string, () => Promise<string>, string, RegExp][] = [
    ['a missing Provider', async () => 'nope', 'ProviderNotFound', /Provider .* does not exist/],
    [
      'a missing Secret',
      async () => {
        const p = uniqueName('p');
        await provider(p, undefined);
        return p;
      },
      'SecretNotFound',
      /Secret .* does not exist/,
    ],
    [
      'a Secret without credentials',
      async () => {
        const p = uniqueName('p');
        await provider(p, { endpoint: testCluster('target').server, clusterCA: providerSecretKeys(testCluster('target')).clusterCA! });
        return p;
      },
      'SecretKeyMissing',
      /has no credentials/,
    ],
    [
      'a malformed CA',
      async () => {
        const p = uniqueName('p');
        await provider(p, { ...providerSecretKeys(testCluster('target')), clusterCA: 'not a certificate' });
        return p;
      },
      'InvalidCredentials',
      /clusterCA.*not a valid PEM certificate/,
    ],
    [
      'a malformed client key',
      async () => {
        const p = uniqueName('p');
        await provider(p, {
          ...providerSecretKeys(testCluster('target')),
          clientKey: '-----BEGIN PRIVATE KEY-----\nxx\n-----END PRIVATE KEY-----',
        });
        return p;
      },
      'InvalidCredentials',
      /clientKey.*not a valid PEM private key/,
    ],
    [
      'the wrong CA',
      async () => {
        const p = uniqueName('p');
        await provider(p, {
          ...providerSecretKeys(testCluster('target')),
          clusterCA: providerSecretKeys(testCluster('control')).clusterCA!,
        });
        return p;
      },
      'TLSVerificationFailed',
      /TLS handshake .* failed/,
    ],
    [
      'a token the target rejects',
      async () => {
        const keys = providerSecretKeys(testCluster('target'));
        const p = uniqueName('p');
        await provider(p, { endpoint: keys.endpoint!, clusterCA: keys.clusterCA!, token: 'not-a-valid-token' });
        return p;
      },
      'Unauthorized',
      /rejected the credentials/,
    ],
  ];

  it.each(cases)('%s gives Synced=False with a precise reason and an event', async (_what, makeProvider, reason, message) => {
    const providerName = await makeProvider();
    const name = uniqueName('bad');
    await env.control.create(kinds.ObjectStore, store(name, { provider: providerName }));
    const mr = await waitForCondition(name, 'Synced', 'False', reason);
    expect(cond(mr, 'Synced')?.message).toMatch(message);
    expect(cond(mr, 'Synced')?.message).not.toContain('BEGIN');
    const events = await eventually(
      async () =>
        (await eventsFor(env.control, { namespace: env.ns.apps, name })).find(
          (e) => e.reason === 'CannotConnectToProvider' || e.reason === 'CannotObserveExternalResource',
        ),
      'a warning event',
    );
    expect(events.message).toMatch(message);
    // Nothing reached the target.
    expect(await env.target.get(RookObjectStores, { namespace: mr.spec.targetNamespace, name })).toBeUndefined();
  });

  /** A resource with our finalizer and these marks on a Provider that does not exist (a typo, or one deleted meanwhile). */
  const onMissingProvider = async (name: string, marks: (now: string) => Record<string, string>): Promise<void> => {
    const mr = store(name, { provider: 'nope' });
    const now = new Date().toISOString().replace(/\.\d+Z/, 'Z');
    const metadata = { ...mr.metadata, finalizers: ['finalizer.managedresource.crossplane.io'], annotations: marks(now) };
    await env.control.create(kinds.ObjectStore, { ...mr, metadata });
  };
  const gone = (name: string, what: string) => eventually(async () => (await getStore(name)) === undefined, what, 20_000);
  /** Deleted, it waits, saying why; Retain lets it go, touching nothing (no Provider reaches its target now). */
  const waitsThenRetained = async (name: string): Promise<void> => {
    await env.control.delete(kinds.ObjectStore, { namespace: env.ns.apps, name });
    const said = /cannot be deleted: create the Provider again\. Setting spec\.reclaimPolicy to Retain lets this resource go without it/;
    const kept = await eventually(async () => {
      const mr = await getStore(name);
      return said.test(cond(mr, 'Synced')?.message ?? '') ? mr : undefined;
    }, 'the resource to say why it waits, and what letting it go would leave');
    expect(cond(kept, 'Synced')?.reason).toBe('ProviderNotFound');
    expect(kept.metadata.deletionTimestamp).toBeDefined();
    await env.control.mergePatch(kinds.ObjectStore, { namespace: env.ns.apps, name }, { spec: { reclaimPolicy: 'Retain' } });
    await gone(name, 'the resource to be gone under Retain');
  };

  it('lets go of a resource a claim made on a Provider that does not exist, once it is deleted', async () => {
    // As a claim makes its resource: our finalizer and a create marked pending.
    const name = uniqueName('orphan');
    await onMissingProvider(name, (now) => ({ 'crossplane.io/external-create-pending': now }));
    await waitForCondition(name, 'Synced', 'False', 'ProviderNotFound');
    await env.control.delete(kinds.ObjectStore, { namespace: env.ns.apps, name });
    await gone(name, 'the resource to be gone');
    const said = await eventually(
      async () => (await eventsFor(env.control, { namespace: env.ns.apps, name })).find((e) => e.reason === 'ProviderNotFound'),
      'an event saying why nothing was deleted in a target',
    );
    expect(said.message).toMatch(/Provider .*nope does not exist.*nothing is recorded as made in a target/);
    // A claim marks its resource's create pending before any ran: one cut short is possible, and said.
    expect(said.message).toMatch(
      /should a create have run and its record been cut short \(a crash\), a Provider that reaches that cluster later sweeps what it made as a leak/,
    );
  });

  it('keeps a resource that made its store on a Provider now gone, and says what letting it go would leave', async () => {
    const name = uniqueName('stranded');
    await onMissingProvider(name, (now) => ({
      'crossplane.io/external-name': name,
      'crossplane.io/external-create-pending': now,
      'crossplane.io/external-create-succeeded': now,
    }));
    await waitsThenRetained(name);
  });

  it('keeps one whose create was never recorded but whose object was (its uid), on a Provider now gone', async () => {
    const name = uniqueName('proven');
    await onMissingProvider(name, (now) => ({
      'crossplane.io/external-create-pending': now,
      'rook.crossplane.io/target-uid': 'a-uid-observe-recorded',
    }));
    await waitsThenRetained(name);
  });

  it('refuses a providerRef into another namespace', async () => {
    const name = uniqueName('xns');
    const mr = store(name);
    await env.control.create(kinds.ObjectStore, {
      ...mr,
      spec: { ...mr.spec, providerRef: { name: 'target', namespace: 'kube-system' } },
    });
    const failed = await waitForCondition(name, 'Synced', 'False', 'CrossNamespaceReference');
    expect(cond(failed, 'Synced')?.message).toMatch(/differs from this resource's namespace/);
  });

  it('rejects an invalid nodeCount at the API', async () => {
    const result = await env.control.create(kinds.ObjectStore, store(uniqueName('odd'), { nodeCount: 5 })).then(
      () => 'accepted',
      (e: Error) => e.message,
    );
    expect(result).toMatch(/scope.nodeCount must be at least 4 and even/);
  });
});
