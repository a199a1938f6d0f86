// What our client and informer rely on, checked against a real API server: a DELETE's answer and
// preconditions (the proof of ownership when deleting from a cached copy), trimmed caches, and a
// list whose objects are too large for one answer.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { adminClient, testCluster, uniqueName } from '../kit/env.ts';
import { Informer } from '../../src/kit/controller/informer.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { isConflict } from '../../src/kit/kube/errors.ts';
import { Namespaces, type ResourceType } from '../../src/kit/kube/resources.ts';
import { readLive } from '../../src/kit/kube/live.ts';
import { silentLogger } from '../../src/kit/logger.ts';
import { eventually } from '../kit/eventually.ts';

const ConfigMaps: ResourceType = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
type ConfigMap = KubeObjectLike & {
  data?: Record<string, string>;
  metadata: KubeObjectLike['metadata'] & { finalizers?: string[]; labels?: Record<string, string>; deletionTimestamp?: string };
};

let target: KubeClient;
beforeAll(() => {
  target = adminClient(testCluster('target'));
});
afterAll(() => target.close());
const client = (): KubeClient => target;

describe('DELETE as the API server answers it', () => {
  const make = (name: string, extra: Partial<ConfigMap['metadata']> = {}) =>
    client().create<ConfigMap>(ConfigMaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: 'default', ...extra },
      data: { k: 'v' },
    });

  it('is refused with a Conflict when the object changed since the copy its preconditions name', async () => {
    const copy = await make(uniqueName('cm'));
    await client().update(ConfigMaps, { ...copy, data: { k: 'changed' } });
    const refused = await client()
      .delete(
        ConfigMaps,
        { namespace: 'default', name: copy.metadata.name },
        { uid: copy.metadata.uid, resourceVersion: copy.metadata.resourceVersion },
      )
      .catch((e: unknown) => e);
    expect(isConflict(refused)).toBe(true);
    expect(await client().get(ConfigMaps, { namespace: 'default', name: copy.metadata.name })).toBeDefined();
  });

  it('says "deleted" when the object is gone, "pending" while finalizers hold it, "absent" when it was not there', async () => {
    const plain = await make(uniqueName('cm'));
    expect(
      await client().delete(
        ConfigMaps,
        { namespace: 'default', name: plain.metadata.name },
        {
          uid: plain.metadata.uid,
          resourceVersion: plain.metadata.resourceVersion,
        },
      ),
    ).toBe('deleted');
    expect(await client().get(ConfigMaps, { namespace: 'default', name: plain.metadata.name })).toBeUndefined();
    expect(await client().delete(ConfigMaps, { namespace: 'default', name: plain.metadata.name })).toBe('absent');

    const held = await make(uniqueName('cm'), { finalizers: ['example.com/hold'] });
    expect(await client().delete(ConfigMaps, { namespace: 'default', name: held.metadata.name })).toBe('pending');
    const terminating = (await client().get<ConfigMap>(ConfigMaps, { namespace: 'default', name: held.metadata.name }))!;
    expect(terminating.metadata.deletionTimestamp).toBeDefined();
    await client().update(ConfigMaps, { ...terminating, metadata: { ...terminating.metadata, finalizers: [] } });
  });
});

describe('whether an object is gone, read live', () => {
  // A kind of provider-rook's group at a version no CRD serves: what a removed or replaced CRD looks like.
  const Unserved: ResourceType = {
    apiVersion: 'minio.rook.crossplane.io/v9',
    kind: 'ObjectStore',
    plural: 'objectstores',
    namespaced: true,
  };

  it('a GET answers "not found" for a type the server does not serve too; the live read fails there instead of calling its object gone', async () => {
    expect(await client().get(Unserved, { namespace: 'default', name: 'anything' })).toBeUndefined();
    await expect(readLive(client(), Unserved, { namespace: 'default', name: 'anything' })).rejects.toMatchObject({ code: 404 });
  });

  it('finds an object that is there, and none where its type is served and it is not', async () => {
    const name = uniqueName('live');
    await client().create<ConfigMap>(ConfigMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' } });
    expect((await readLive(client(), ConfigMaps, { namespace: 'default', name }))?.metadata.name).toBe(name);
    expect(await readLive(client(), ConfigMaps, { namespace: 'default', name: `${name}-not` })).toBeUndefined();
    // A name no object can have changes no selector: refused before any request.
    await expect(readLive(client(), ConfigMaps, { namespace: 'default', name: `${name},metadata.namespace=x` })).rejects.toThrow(
      /not an object name/,
    );
    await client().delete(ConfigMaps, { namespace: 'default', name });
  });
});

describe('a server-side apply as the API server answers it', () => {
  // What repairing from a cached copy relies on: the copy's uid and resourceVersion in the applied
  // object are preconditions, so nothing is written over an object that changed since.
  it('is refused with a Conflict when the object changed since the copy its resourceVersion names, and applied when it did not', async () => {
    const name = uniqueName('cm');
    const copy = await client().create<ConfigMap>(ConfigMaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: 'default' },
      data: { k: 'v' },
    });
    const applied = (rv: string | undefined) =>
      client().apply<ConfigMap>(ConfigMaps, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace: 'default', uid: copy.metadata.uid, resourceVersion: rv },
        data: { k: 'ours' },
      });
    const changed = await client().update(ConfigMaps, { ...copy, data: { k: 'changed' } });
    expect(isConflict(await applied(copy.metadata.resourceVersion).catch((e: unknown) => e))).toBe(true);
    expect((await client().get<ConfigMap>(ConfigMaps, { namespace: 'default', name }))?.data).toEqual({ k: 'changed' });
    const ours = await applied(changed.metadata.resourceVersion);
    expect(ours.data).toEqual({ k: 'ours' });
    // Gone since the copy was read: refused too, never made anew from the copy's metadata.
    await client().delete(ConfigMaps, { namespace: 'default', name });
    const gone = await applied(ours.metadata.resourceVersion).catch((e: unknown) => e);
    expect(isConflict(gone)).toBe(true);
    expect(await client().get(ConfigMaps, { namespace: 'default', name })).toBeUndefined();
  });
});

describe('an informer told what to keep', () => {
  it('caches metadata and the kept fields only, and still reports every change', async () => {
    const client = target;
    const label = uniqueName('keep');
    const informer = new Informer<ConfigMap>(client, ConfigMaps, {
      namespaces: ['default'],
      labelSelector: `test=${label}`,
      keep: [],
      log: silentLogger,
    });
    const updates: string[] = [];
    informer.on({ updated: (_old, obj) => updates.push(obj.metadata.resourceVersion!) });
    try {
      await informer.start();
      const name = uniqueName('cm');
      const made = await client.create<ConfigMap>(ConfigMaps, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace: 'default', labels: { test: label } },
        data: { big: 'x'.repeat(4096) },
      });
      const cached = await eventually(async () => informer.get(`default/${name}`), 'the ConfigMap in the cache');
      expect(cached.data).toBeUndefined();
      expect(cached.metadata.labels).toEqual({ test: label });
      expect((cached.metadata as { managedFields?: unknown }).managedFields).toBeUndefined();
      // A change to a field it does not keep is still news: its owner may need to look.
      const changed = await client.update<ConfigMap>(ConfigMaps, { ...made, data: { big: 'y' } });
      await eventually(async () => updates.includes(changed.metadata.resourceVersion!) || undefined, 'the update reported');
    } finally {
      await informer.stop();
    }
  });
});

describe('a list of objects others made large', () => {
  it('reads a page past what one answer may be (64 MiB) in smaller pages, and every object in it', async () => {
    const client = target;
    const namespace = uniqueName('big');
    await client.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    // 80 ConfigMaps of 1 MB: 80 MB in the first page of 500.
    const big = 'x'.repeat(1_000_000);
    try {
      for (let i = 0; i < 80; i++)
        await client.create(ConfigMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `big-${i}`, namespace }, data: { big } });
      const listed = await client.list<ConfigMap>(ConfigMaps, { namespace, labelSelector: '' });
      expect(listed.items.filter((cm) => cm.metadata.name.startsWith('big-'))).toHaveLength(80);
    } finally {
      await client.delete(Namespaces, { name: namespace });
    }
  }, 120_000);
});
