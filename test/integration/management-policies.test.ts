// Management policies with crossplane-runtime's semantics, against real API
// servers: ["Observe"] imports a store read-only (status and connection details filled, nothing
// written to the target), widening the policies takes it over, leaving out Delete orphans it, and
// combinations crossplane-runtime does not support are refused at admission.
import { describe, expect, it } from '@jest/globals';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { ObjectStore } from '../../src/backends/rook-minio/api.ts';
import { RookObjectStores } from '../../src/backends/rook-minio/objectstore.ts';
import type { KubeObjectLike } from '../../src/kit/kube/client.ts';
import { KubeError } from '../../src/kit/kube/errors.ts';
import { Namespaces, Secrets, Services, StatefulSets } from '../../src/kit/kube/resources.ts';
import { secretText } from '../../src/runtime/providers/credentials.ts';
import { uniqueName } from '../kit/env.ts';
import { writeSecret } from '../kit/provider.ts';
import { eventually } from '../kit/eventually.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { cond } from '../kit/conditions.ts';

type Target = KubeObjectLike & {
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string>; ownerReferences?: { uid: string }[] };
  spec: { scope: { nodeCount: number } };
};
type Cond = { type: string; status: string; reason: string; message?: string };

const env = withProviderRook({ namespaces: { platform: 'mp-infra' }, provider: { name: 'target', in: 'platform' } });

/** A store someone made in the target before provider-rook, with keys of its own. */
async function legacy(nodeCount = 4): Promise<{ name: string; namespace: string }> {
  const name = uniqueName('legacy');
  const namespace = uniqueName('mp-minio');
  await env.target.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  await writeSecret(env.target, { namespace, name: 'legacy-keys' }, { username: 'legacy', password: 'legacy-password' });
  await env.target.create(RookObjectStores, {
    apiVersion: RookObjectStores.apiVersion,
    kind: 'ObjectStore',
    metadata: { name, namespace },
    spec: { scope: { nodeCount }, credentials: { name: 'legacy-keys', namespace } },
  });
  return { name, namespace };
}

const managed = (name: string, external: string, namespace: string, policies: string[] | undefined, nodeCount = 4) =>
  ({
    apiVersion: kinds.ObjectStore.apiVersion,
    kind: 'ObjectStore',
    metadata: { name, namespace: env.ns.platform, annotations: { 'crossplane.io/external-name': external } },
    spec: {
      forProvider: { scope: { nodeCount } },
      targetNamespace: namespace,
      providerRef: { name: 'target' },
      writeConnectionSecretToRef: { name: `${name}-conn` },
      ...(policies ? { managementPolicies: policies } : {}),
    },
  }) as KubeObjectLike;

/** Two sweeps an hour apart, as it takes the leak sweeper to judge an owner gone. */
const sweepTwice = async () => {
  const at = Date.now() + 3_600_000;
  await env.app.leaks.sweep(new AbortController().signal, at);
  await env.app.leaks.sweep(new AbortController().signal, at + 3_600_000);
};
const get = (name: string) =>
  env.control.get<ObjectStore & { status?: { conditions?: Cond[] } }>(kinds.ObjectStore, { namespace: env.ns.platform, name });
const condition = (name: string, type: string, status: string) =>
  eventually(
    async () => {
      const c = cond(await get(name), type);
      return c?.status === status ? c : undefined;
    },
    `${name}: ${type}=${status}`,
    { explain: async () => JSON.stringify((await get(name))?.status?.conditions) },
  );

describe('management policies', () => {
  it('["Observe"] imports a store read-only: Ready and its endpoint, and not one write to the target', async () => {
    const { name: existing, namespace } = await legacy();
    const before = (await env.target.get<Target>(RookObjectStores, { namespace, name: existing }))!;
    await env.control.create(kinds.ObjectStore, managed('observed', existing, namespace, ['Observe']));
    await condition('observed', 'Ready', 'True');
    expect(cond(await get('observed'), 'Synced')?.status).toBe('True');
    const conn = secretText(
      (
        await eventually(
          () =>
            env.control.get<KubeObjectLike & { data?: Record<string, string> }>(Secrets, {
              namespace: env.ns.platform,
              name: 'observed-conn',
            }),
          'the connection Secret',
        )
      ).data,
    );
    // provider-rook made no Service for it: the endpoint is the operator's own, made for this very store.
    expect(conn.endpoint).toBe(`http://${existing}.${namespace}.svc.cluster.local:9000`);
    expect((await env.target.get<Target>(Services, { namespace, name: existing }))?.metadata.ownerReferences?.[0]?.uid).toBe(
      before.metadata.uid,
    );
    expect(JSON.stringify(conn)).not.toContain('legacy-password');
    // The passes that made it Ready wrote nothing: the store is the very object it was (same
    // resourceVersion, no marks), and none of what provider-rook makes beside a store exists.
    const after = (await env.target.get<Target>(RookObjectStores, { namespace, name: existing }))!;
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect(after.metadata.labels ?? {}).toEqual({});
    expect(after.spec.scope.nodeCount).toBe(4);
    expect(await env.target.get(Services, { namespace, name: `${existing}-s3` })).toBeUndefined();
    expect(await env.target.get(Secrets, { namespace, name: `${existing}-access-keys` })).toBeUndefined();
    // Nor in the control cluster's spec: without LateInitialize, the store's keys Secret is not copied in.
    expect((await get('observed'))?.spec.forProvider.credentials).toBeUndefined();
    // Widening the policies takes it over: it carries provider-rook's marks, and its spec is filled in.
    await env.control.mergePatch(
      kinds.ObjectStore,
      { namespace: env.ns.platform, name: 'observed' },
      { spec: { managementPolicies: ['*'] } },
    );
    await eventually(
      async () =>
        (await env.target.get<Target>(RookObjectStores, { namespace, name: existing }))?.metadata.labels?.[
          'rook.crossplane.io/control-plane'
        ] === env.app.controlPlaneId,
      'the store taken over',
    );
    await eventually(
      async () => (await get('observed'))?.spec.forProvider.credentials?.name === 'legacy-keys',
      'its keys Secret late-initialized',
    );
  }, 60_000);

  it('["Observe"] of a store no Service leads to publishes no endpoint, and says why', async () => {
    const { name: existing, namespace } = await legacy();
    // The operator made its Service; someone removed it (the operator never makes it again once its StatefulSet exists).
    await eventually(
      async () => (await env.target.get(StatefulSets, { namespace, name: existing })) !== undefined,
      "the operator's StatefulSet",
    );
    const service = (await env.target.get<Target>(Services, { namespace, name: existing }))!;
    await env.target.delete(Services, { namespace, name: existing });
    await env.control.create(kinds.ObjectStore, managed('unreachable', existing, namespace, ['Observe']));
    const ready = await condition('unreachable', 'Ready', 'False');
    expect(ready.reason).toBe('EndpointNotProven');
    expect(ready.message).toContain('no Service in the target leads to this store');
    expect(ready.message).toContain(`the operator's own Service ${namespace}/${existing} does not exist`);
    expect(cond(await get('unreachable'), 'Synced')).toMatchObject({ status: 'False', reason: 'EndpointNotProven' });
    // Nothing names an endpoint that leads nowhere: no connection Secret at all, and none made in the target.
    expect(await env.control.get(Secrets, { namespace: env.ns.platform, name: 'unreachable-conn' })).toBeUndefined();
    expect(await env.target.get(Services, { namespace, name: `${existing}-s3` })).toBeUndefined();

    // The Service back (as the operator's, owned by the store): the watch of what the operator makes
    // wakes the resource that observes the store, though the store carries none of our marks. Well
    // within the 30 s after which a resource not Ready is looked at again anyway.
    const {
      uid: _uid,
      resourceVersion: _rv,
      ...metadata
    } = service.metadata as Target['metadata'] & { uid?: string; resourceVersion?: string };
    await env.target.create(Services, { ...service, metadata });
    await eventually(async () => cond(await get('unreachable'), 'Ready')?.status === 'True', 'Ready once the Service is back', 10_000);
    expect(cond(await get('unreachable'), 'Synced')?.status).toBe('True');
  });

  it('leaving out Delete orphans the store on deletion', async () => {
    const { name: existing, namespace } = await legacy();
    await env.control.create(kinds.ObjectStore, managed('kept', existing, namespace, ['Observe', 'Create', 'Update', 'LateInitialize']));
    await condition('kept', 'Ready', 'True');
    await eventually(
      async () =>
        (await env.target.get<Target>(RookObjectStores, { namespace, name: existing }))?.metadata.labels?.[
          'rook.crossplane.io/control-plane'
        ] === env.app.controlPlaneId,
      'the store taken over',
    );
    // Its marks say it stays, so the leak sweeper keeps it once its owner is gone.
    expect(
      (await env.target.get<Target>(RookObjectStores, { namespace, name: existing }))?.metadata.annotations?.[
        'rook.crossplane.io/reclaim-policy'
      ],
    ).toBe('Orphan');
    await env.control.delete(kinds.ObjectStore, { namespace: env.ns.platform, name: 'kept' });
    await eventually(async () => (await get('kept')) === undefined, 'the managed resource to be gone');
    await sweepTwice();
    expect(await env.target.get(RookObjectStores, { namespace, name: existing })).toBeDefined();
  });

  it('a store made under Delete, then observed only and deleted, has its marks say Orphan before it is let go: the leak sweeper keeps it', async () => {
    const { name: existing, namespace } = await legacy();
    await env.control.create(kinds.ObjectStore, managed('switched', existing, namespace, undefined));
    await condition('switched', 'Ready', 'True');
    const reclaimMark = async () =>
      (await env.target.get<Target>(RookObjectStores, { namespace, name: existing }))?.metadata.annotations?.[
        'rook.crossplane.io/reclaim-policy'
      ];
    await eventually(async () => (await reclaimMark()) === 'Delete', 'the store taken over, to be deleted with its resource');
    // Observed only, nothing is written to the target any more: the marks still say Delete when it goes.
    await env.control.mergePatch(
      kinds.ObjectStore,
      { namespace: env.ns.platform, name: 'switched' },
      { spec: { managementPolicies: ['Observe'] } },
    );
    await env.control.delete(kinds.ObjectStore, { namespace: env.ns.platform, name: 'switched' });
    await eventually(async () => (await get('switched')) === undefined, 'the managed resource to be gone');
    expect(await reclaimMark()).toBe('Orphan');
    await sweepTwice();
    expect(await env.target.get(RookObjectStores, { namespace, name: existing })).toBeDefined();
  });

  it('observing a store that does not exist says so, and makes nothing', async () => {
    const namespace = uniqueName('mp-none');
    await env.control.create(kinds.ObjectStore, managed('absent', 'no-such-store', namespace, ['Observe']));
    const synced = await condition('absent', 'Synced', 'False');
    expect(synced.message).toBe('observe failed: external resource does not exist');
    expect(await env.target.get(Namespaces, { name: namespace })).toBeUndefined();
  });

  it('takes deletionPolicy as the current name of reclaimPolicy, and refuses the two set differently', async () => {
    const { name: existing, namespace } = await legacy();
    const mr = managed('orphaned', existing, namespace, undefined) as KubeObjectLike & { spec: Record<string, unknown> };
    const both = {
      ...mr,
      metadata: { ...mr.metadata, name: 'both' },
      spec: { ...mr.spec, deletionPolicy: 'Orphan', reclaimPolicy: 'Delete' },
    };
    const err = await env.control.create(kinds.ObjectStore, both).then(
      () => undefined,
      (e: unknown) => e as KubeError,
    );
    expect(err?.message).toContain('deletionPolicy and reclaimPolicy say different things');
    await env.control.create(kinds.ObjectStore, { ...mr, spec: { ...mr.spec, deletionPolicy: 'Orphan' } });
    await condition('orphaned', 'Ready', 'True');
    await env.control.delete(kinds.ObjectStore, { namespace: env.ns.platform, name: 'orphaned' });
    await eventually(async () => (await get('orphaned')) === undefined, 'the managed resource to be gone');
    expect(await env.target.get(RookObjectStores, { namespace, name: existing })).toBeDefined();
  });

  it('refuses combinations crossplane-runtime does not support, naming the field', async () => {
    for (const policies of [['Create'], ['Update', 'Delete'], ['Observe', 'Observe']]) {
      const err = await env.control.create(kinds.ObjectStore, managed(uniqueName('bad'), 'x', 'ns', policies)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(KubeError);
      expect((err as KubeError).message).toContain('spec.managementPolicies');
    }
  });
});
