// The managed reconciler's decisions, table-driven against fakes of our own interfaces
// (crossplane-runtime's test vectors, Part B of the reference).
import type { ObjectKey } from '../../../../src/kit/kube/object-key.ts';
import { describe, expect, it } from '@jest/globals';
import { getCondition, ReasonedError } from '../../../../src/kit/conditions.ts';
import { MemoryEventRecorder } from '../../../../src/kit/controller/events.ts';
import type { KubeClient } from '../../../../src/kit/kube/client.ts';
import { KubeError } from '../../../../src/kit/kube/errors.ts';
import type { ResourceType } from '../../../../src/kit/kube/resources.ts';
import { silentLogger } from '../../../../src/kit/logger.ts';
import { ManagedReconciler } from '../../../../src/runtime/managed/reconciler.ts';
import { madeToCreate } from '../../../../src/runtime/managed/creation.ts';
import {
  RecordedError,
  type ExternalClient,
  type ExternalObservation,
  type ManagedResource,
} from '../../../../src/runtime/managed/types.ts';
import { applyJsonPatch } from '../../../kit/json-patch.ts';
import { UnprovenError } from '../../../../src/runtime/reasons.ts';

const type: ResourceType = { apiVersion: 'x.example.com/v1', kind: 'Thing', plural: 'things', namespaced: true };
const now = new Date('2026-05-01T10:00:00Z');

/** Records writes; can be told to fail them. Like the API server, a write with a stale resourceVersion conflicts. */
class FakeClient {
  writes: string[] = [];
  /** The stored object's resourceVersion, once a write set it. */
  rv?: string;
  private checkFresh(obj: ManagedResource): void {
    if (this.rv !== undefined && obj.metadata.resourceVersion !== this.rv)
      throw new KubeError(409, 'Conflict', 'the object has been modified');
  }
  lastStatus?: ManagedResource['status'];
  failUpdateWith?: Error;
  secrets = new Map<
    string,
    { metadata: { name: string; ownerReferences?: { uid: string; controller?: boolean }[] }; type?: string; data?: Record<string, string> }
  >();
  async update(_t: ResourceType, obj: ManagedResource) {
    if (this.failUpdateWith) throw this.failUpdateWith;
    this.checkFresh(obj);
    this.writes.push(
      `update finalizers=${(obj.metadata.finalizers ?? []).join(',')} annotations=${Object.keys(obj.metadata.annotations ?? {})
        .sort()
        .join(',')}`,
    );
    const specChanged = JSON.stringify(obj.spec) !== JSON.stringify(this.lastSpec ?? obj.spec);
    this.lastSpec = structuredClone(obj.spec);
    const generation = (obj.metadata.generation ?? 1) + (specChanged ? 1 : 0);
    this.rv = String(Number(obj.metadata.resourceVersion ?? 0) + 1);
    this.stored = { ...structuredClone(obj), metadata: { ...obj.metadata, generation, resourceVersion: this.rv } };
    return structuredClone(this.stored);
  }
  /** The object as the server holds it (set by reconcilerFor; a test may change it behind the cache). */
  stored?: ManagedResource;
  /** Like the API server, a JSON patch needs no resourceVersion; a failed test is a 422. */
  async jsonPatch(_t: ResourceType, _key: ObjectKey, ops: unknown[]) {
    const next = applyJsonPatch(this.stored!, ops);
    this.rv = String(Number(this.rv ?? next.metadata.resourceVersion ?? 0) + 1);
    next.metadata.resourceVersion = this.rv;
    this.writes.push(`patch finalizers=${(next.metadata.finalizers ?? []).join(',')}`);
    this.stored = next;
    return structuredClone(next);
  }
  /** The spec as last stored, to bump generation on spec changes as the API server does. */
  lastSpec?: ManagedResource['spec'];
  async updateStatus(_t: ResourceType, obj: ManagedResource) {
    this.checkFresh(obj);
    this.lastStatus = structuredClone(obj.status);
    this.writes.push(`status ${(obj.status?.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`).join(' ')}`);
    return obj;
  }
  async get(_t: ResourceType, { name }: ObjectKey) {
    return this.secrets.get(name);
  }
  async create(_t: ResourceType, obj: { metadata: { name: string } }) {
    this.writes.push(`create secret ${obj.metadata.name}`);
    this.secrets.set(obj.metadata.name, obj as never);
    return obj;
  }
  async mergePatch(_t: ResourceType, { name }: ObjectKey) {
    this.writes.push(`patch secret ${name}`);
    return {};
  }
  async delete(_t: ResourceType, { name }: ObjectKey) {
    this.writes.push(`delete ${name}`);
    return true;
  }
}

function mr(over: Partial<ManagedResource['metadata']> = {}, spec: Partial<ManagedResource['spec']> = {}): ManagedResource {
  return {
    apiVersion: type.apiVersion,
    kind: type.kind,
    metadata: { name: 'm', namespace: 'ns', uid: 'uid-1', generation: 1, resourceVersion: '1', ...over },
    spec: { providerRef: { name: 'p' }, ...spec },
  };
}

function external(obs: Partial<ExternalObservation> | Error, calls: string[] = [], createError?: Error): ExternalClient<ManagedResource> {
  return {
    observe: async () => {
      calls.push('observe');
      if (obs instanceof Error) throw obs;
      return { exists: false, upToDate: false, ...obs };
    },
    create: async () => {
      calls.push('create');
      if (createError) throw createError;
      return {};
    },
    update: async () => {
      calls.push('update');
      return {};
    },
    delete: async () => {
      calls.push('delete');
    },
  };
}

function reconcilerFor(resource: ManagedResource, ext: ExternalClient<ManagedResource> | Error, client = new FakeClient()) {
  client.stored ??= structuredClone(resource);
  const recorder = new MemoryEventRecorder();
  const r = new ManagedReconciler<ManagedResource>({
    type,
    client: client as unknown as KubeClient,
    cache: { get: () => resource },
    recorder,
    log: silentLogger,
    connecter: {
      connect: async () => {
        if (ext instanceof Error) throw ext;
        return ext;
      },
    },
    pollIntervalMs: 60_000,
    pollJitterMs: 0,
    creationGraceMs: 30_000,
    now: () => now,
  });
  return { r, client, recorder, run: () => r.reconcile('ns/m', new AbortController().signal) };
}

const finalized = { finalizers: ['finalizer.managedresource.crossplane.io'] };

describe('ManagedReconciler', () => {
  it('N1: a paused resource is not connected to and is not requeued', async () => {
    const calls: string[] = [];
    const { run, client } = reconcilerFor(mr({ annotations: { 'crossplane.io/paused': 'true' } }), external({}, calls));
    expect(await run()).toEqual({ kind: 'done' });
    expect(calls).toEqual([]);
    expect(client.writes).toEqual(['status Synced=False/ReconcilePaused']);
  });

  it('N6: a connect error sets Synced=False with its own reason, an event, and a rate-limited retry', async () => {
    const { run, client, recorder } = reconcilerFor(mr(finalized), new ReasonedError('SecretNotFound', 'Secret ns/s does not exist'));
    expect(await run()).toEqual({ kind: 'requeue' });
    expect(client.writes).toEqual(['status Synced=False/SecretNotFound']);
    expect(recorder.events).toEqual([
      { type: 'Warning', reason: 'CannotConnectToProvider', message: 'connect failed: Secret ns/s does not exist', name: 'm' },
    ]);
  });

  it('N7: a missing resource is created: pending recorded first, then succeeded, Creating/Success, requeue', async () => {
    const calls: string[] = [];
    const { run, client, recorder } = reconcilerFor(mr(finalized), external({ exists: false }, calls));
    expect(await run()).toEqual({ kind: 'requeue' });
    expect(calls).toEqual(['observe', 'create']);
    expect(client.writes).toEqual([
      'update finalizers=finalizer.managedresource.crossplane.io annotations=crossplane.io/external-create-pending,crossplane.io/external-name',
      'update finalizers=finalizer.managedresource.crossplane.io annotations=crossplane.io/external-create-pending,crossplane.io/external-create-succeeded,crossplane.io/external-name',
      'status Ready=False/Creating Synced=True/ReconcileSuccess',
    ]);
    expect(recorder.events.map((e) => e.reason)).toEqual(['CreatedExternalResource']);
  });

  it("records the name its external client gives the object (a kind's shorter one) where the resource names none, an empty annotation included", async () => {
    for (const annotations of [{}, { 'crossplane.io/external-name': '' }] as Record<string, string>[]) {
      const client = new FakeClient();
      const ext = external({ exists: false });
      const { run } = reconcilerFor(mr({ ...finalized, annotations }), { ...ext, externalName: () => 'short' }, client);
      await run();
      expect(client.stored?.metadata.annotations?.['crossplane.io/external-name']).toBe('short');
    }
  });

  it('a create already marked pending behind our finalizer (as a claim makes its resource) is made with no write before it', async () => {
    const calls: string[] = [];
    const client = new FakeClient();
    const ext = external({ exists: false }, calls);
    const made = madeToCreate(mr(), new Date());
    const { run, recorder } = reconcilerFor(
      made,
      {
        ...ext,
        create: async (m) => {
          calls.push(`create after ${client.writes.length} write(s)`);
          return ext.create(m, new AbortController().signal);
        },
      },
      client,
    );
    expect(await run()).toEqual({ kind: 'requeue' });
    expect(calls).toEqual(['observe', 'create after 0 write(s)', 'create']);
    expect(client.writes).toEqual([
      'update finalizers=finalizer.managedresource.crossplane.io annotations=crossplane.io/external-create-pending,crossplane.io/external-create-succeeded,crossplane.io/external-name',
      'status Ready=False/Creating Synced=True/ReconcileSuccess',
    ]);
    expect(recorder.events.map((e) => e.reason)).toEqual(['CreatedExternalResource']);
  });

  it('N8: a failed create is recorded, then reported as Synced=False with its own reason (on the fresh resourceVersion)', async () => {
    const refusal = new ReasonedError('CompanionNotOwned', 'the access-keys Secret ns/k was not made by provider-rook');
    const { run, client, recorder } = reconcilerFor(mr(finalized), external({ exists: false }, [], refusal));
    expect(await run()).toEqual({ kind: 'requeue' });
    expect(client.writes).toEqual([
      'update finalizers=finalizer.managedresource.crossplane.io annotations=crossplane.io/external-create-pending,crossplane.io/external-name',
      'update finalizers=finalizer.managedresource.crossplane.io annotations=crossplane.io/external-create-failed,crossplane.io/external-create-pending,crossplane.io/external-name',
      'status Ready=False/Creating Synced=False/CompanionNotOwned',
    ]);
    expect(recorder.events.map((e) => e.reason)).toContain('CannotCreateExternalResource');
  });

  it('adds the finalizer before creating anything, in the same write as the create-pending mark', async () => {
    const calls: string[] = [];
    const ext = external({ exists: false }, calls);
    const client = new FakeClient();
    const { run } = reconcilerFor(
      mr(),
      {
        ...ext,
        create: async (m) => {
          calls.push(`create after ${client.writes.length} write(s)`);
          return ext.create(m, new AbortController().signal);
        },
      },
      client,
    );
    await run();
    expect(client.writes[0]).toBe(
      'update finalizers=finalizer.managedresource.crossplane.io annotations=crossplane.io/external-create-pending,crossplane.io/external-name',
    );
    expect(calls).toContain('create after 1 write(s)');
  });

  it('adds a missing finalizer to a resource that exists, alone, by a JSON patch', async () => {
    const { run, client } = reconcilerFor(mr(), external({ exists: true, upToDate: true }));
    await run();
    expect(client.writes[0]).toBe('patch finalizers=finalizer.managedresource.crossplane.io');
    expect(client.writes[1]).toMatch(/^status /); // on the patched object's resourceVersion
  });

  it('adds the finalizer to the list as read, or not at all: a list changed since is a quiet conflict', async () => {
    const client = new FakeClient();
    client.stored = mr({ finalizers: ['example.com/other'] });
    const { run, recorder } = reconcilerFor(mr(), external({ exists: true, upToDate: true }), client);
    expect(await run()).toEqual({ kind: 'requeue' });
    expect(client.writes).toEqual([]);
    expect(recorder.events).toEqual([]);
    expect(client.stored.metadata.finalizers).toEqual(['example.com/other']);
  });

  it('keeps what another writer added since the read when it adds the finalizer (a label) and removes it (a finalizer)', async () => {
    const adding = new FakeClient();
    adding.stored = mr({ labels: { team: 'a' }, resourceVersion: '7' });
    await reconcilerFor(mr(), external({ exists: true, upToDate: true }), adding).run();
    expect(adding.stored.metadata).toMatchObject({ labels: { team: 'a' }, finalizers: ['finalizer.managedresource.crossplane.io'] });

    const removing = new FakeClient();
    const deleting = { deletionTimestamp: '2026-05-01T09:00:00Z', ...finalized };
    removing.stored = mr({ ...deleting, finalizers: [...finalized.finalizers, 'example.com/other'], resourceVersion: '7' });
    expect(await reconcilerFor(mr(deleting), external({ exists: false }), removing).run()).toEqual({ kind: 'done' });
    expect(removing.writes).toEqual(['patch finalizers=example.com/other']);
  });

  it('N10: an up-to-date resource with unchanged status writes nothing and polls', async () => {
    const resource = mr(finalized);
    resource.status = {
      conditions: [
        { type: 'Ready', status: 'True', reason: 'Available', lastTransitionTime: '2026-05-01T09:00:00Z', observedGeneration: 1 },
        { type: 'Synced', status: 'True', reason: 'ReconcileSuccess', lastTransitionTime: '2026-05-01T09:00:00Z', observedGeneration: 1 },
      ],
    };
    const calls: string[] = [];
    const { run, client, recorder } = reconcilerFor(resource, external({ exists: true, upToDate: true }, calls));
    expect(await run()).toEqual({ kind: 'requeueAfter', ms: 60_000 });
    expect(calls).toEqual(['observe']);
    expect(client.writes).toEqual([]);
    expect(recorder.events).toEqual([]);
  });

  it('stamps the generation a late-initializing pass wrote on its conditions, so the next poll writes nothing', async () => {
    const resource = mr(finalized, { forProvider: { size: 1 } });
    const client = new FakeClient();
    client.lastSpec = structuredClone(resource.spec);
    const lateInitializing: ExternalClient<ManagedResource> = {
      ...external({}),
      observe: async (m) => {
        m.spec.forProvider = { size: 1, zone: 'from-the-target' };
        m.status = {
          conditions: [
            {
              type: 'Ready',
              status: 'True',
              reason: 'Available',
              lastTransitionTime: now.toISOString(),
              observedGeneration: m.metadata.generation,
            },
          ],
        };
        return { exists: true, upToDate: true, lateInitialized: true };
      },
    };
    const { run } = reconcilerFor(resource, lateInitializing, client);
    await run();
    expect(client.writes.filter((w) => w.startsWith('status'))).toHaveLength(1);
    expect(client.lastStatus?.conditions?.map((c) => [c.type, c.observedGeneration])).toEqual([
      ['Ready', 2],
      ['Synced', 2],
    ]);
  });

  it('updates a drifted resource and, as it is not Ready yet, looks again within 30 s rather than at the poll', async () => {
    const calls: string[] = [];
    const { run, recorder } = reconcilerFor(
      mr(finalized),
      external({ exists: true, upToDate: false, diff: '.spec.scope.nodeCount' }, calls),
    );
    // What it waits on may be something no watch shows (a Gateway's address); the poll here is 60 s.
    expect(await run()).toEqual({ kind: 'requeueAfter', ms: 30_000 });
    expect(calls).toEqual(['observe', 'update']);
    expect(recorder.events.map((e) => e.message)).toEqual(['Updated the external resource (.spec.scope.nodeCount)']);
  });

  it('records what an update made again even when a later step of it failed, then reports the failure', async () => {
    const ext = external({ exists: true, upToDate: false, diff: 'missing Service' });
    ext.update = async () => {
      throw new RecordedError(new KubeError(500, 'InternalError', 'the server failed'), {
        'rook.crossplane.io/companion-uids': '{"s":"u2"}',
      });
    };
    const { run, client } = reconcilerFor(mr(finalized), ext);
    expect(await run()).toEqual({ kind: 'requeue' });
    expect(client.writes[0]).toBe(
      'update finalizers=finalizer.managedresource.crossplane.io annotations=rook.crossplane.io/companion-uids',
    );
    expect(client.stored?.metadata.annotations?.['rook.crossplane.io/companion-uids']).toBe('{"s":"u2"}');
    expect(getCondition(client.lastStatus?.conditions, 'Synced')?.message).toBe('update failed: the server failed');
  });

  it('a resource that cannot prove its endpoint is not Ready, withholds it from its Secret, and is looked at each poll', async () => {
    const client = new FakeClient();
    client.secrets.set('conn', {
      metadata: { name: 'conn', ownerReferences: [{ uid: 'uid-1', controller: true }] },
      data: { endpoint: 'aHR0cDovL3g=', password: 'cA==' },
    });
    const unproven = new UnprovenError('EndpointNotProven', 'the endpoint Service ns/x-s3 was replaced', ['endpoint', 'BUCKET_HOST']);
    const { run } = reconcilerFor(mr(finalized, { writeConnectionSecretToRef: { name: 'conn' } }), external(unproven), client);
    expect(await run()).toEqual({ kind: 'requeueAfter', ms: 60_000 });
    expect(client.writes).toEqual(['patch secret conn', 'status Ready=False/EndpointNotProven Synced=False/EndpointNotProven']);
    expect(getCondition(client.lastStatus?.conditions, 'Ready')?.message).toBe('the endpoint Service ns/x-s3 was replaced');
  });

  it('N9: a missing resource inside the creation grace period is only requeued', async () => {
    const calls: string[] = [];
    const recent = { ...finalized, annotations: { 'crossplane.io/external-create-succeeded': '2026-05-01T09:59:50Z' } };
    const { run, client } = reconcilerFor(mr(recent), external({ exists: false }, calls));
    expect(await run()).toEqual({ kind: 'requeue' });
    expect(calls).toEqual(['observe']);
    expect(client.writes).toEqual([]);
  });

  it('N13: deletion waits while other finalizers remain, and says for which and since when (their removal wakes it)', async () => {
    const calls: string[] = [];
    const { run, client } = reconcilerFor(
      mr({ deletionTimestamp: '2026-05-01T09:00:00Z', finalizers: ['finalizer.managedresource.crossplane.io', 'other'] }),
      external({ exists: true }, calls),
    );
    expect(await run()).toEqual({ kind: 'requeueAfter', ms: 60_000 });
    expect(calls).toEqual(['observe']);
    expect(client.writes).toEqual(['status Ready=False/Deleting Synced=False/WaitingForFinalizers']);
  });

  it('N14/N15: deletion deletes an existing resource, then releases the finalizer once it is gone', async () => {
    const deleting = { deletionTimestamp: '2026-05-01T09:00:00Z', ...finalized };
    const calls: string[] = [];
    const first = reconcilerFor(mr(deleting), external({ exists: true }, calls));
    expect(await first.run()).toEqual({ kind: 'requeue' });
    expect(calls).toEqual(['observe', 'delete']);
    expect(first.client.writes).toEqual(['status Ready=False/Deleting Synced=True/ReconcileSuccess']);
    const second = reconcilerFor(mr(deleting), external({ exists: false }));
    expect(await second.run()).toEqual({ kind: 'done' });
    expect(second.client.writes).toEqual(['patch finalizers=']);
  });

  it('a delete that reports the resource gone releases the finalizer in the same pass, with no Deleting status', async () => {
    const calls: string[] = [];
    const ext = {
      ...external({ exists: true }, calls),
      delete: async () => {
        calls.push('delete');
        return { gone: true };
      },
    };
    const { run, client, recorder } = reconcilerFor(mr({ deletionTimestamp: '2026-05-01T09:00:00Z', ...finalized }), ext);
    expect(await run()).toEqual({ kind: 'done' });
    expect(calls).toEqual(['observe', 'delete']);
    expect(client.writes).toEqual(['patch finalizers=']);
    expect(recorder.events.map((e) => e.reason)).toEqual(['DeletedExternalResource']);
  });

  it('a delete that reports the resource still going (finalizers in the target) waits for the next observe', async () => {
    const calls: string[] = [];
    const ext = {
      ...external({ exists: true }, calls),
      delete: async () => {
        calls.push('delete');
        return { gone: false };
      },
    };
    const { run, client } = reconcilerFor(mr({ deletionTimestamp: '2026-05-01T09:00:00Z', ...finalized }), ext);
    expect(await run()).toEqual({ kind: 'requeue' });
    expect(client.writes).toEqual(['status Ready=False/Deleting Synced=True/ReconcileSuccess']);
  });

  it('a later pass that finds the resource still being deleted announces nothing again', async () => {
    const deleting = mr({ deletionTimestamp: '2026-05-01T09:00:00Z', ...finalized });
    const pending = (requested: boolean) => ({
      ...external({ exists: true }),
      delete: async () => ({ gone: false, requested }),
    });
    const first = reconcilerFor(deleting, pending(true));
    expect(await first.run()).toEqual({ kind: 'requeue' });
    expect(first.recorder.events.map((e) => e.reason)).toEqual(['DeletedExternalResource']);
    const second = reconcilerFor(deleting, pending(false));
    expect(await second.run()).toEqual({ kind: 'requeue' });
    expect(second.recorder.events).toEqual([]);
  });

  it('N4: Retain deletes nothing: what it made is marked kept, then the finalizer goes', async () => {
    const calls: string[] = [];
    const ext = { ...external({ exists: true }, calls), keep: async () => void calls.push('keep') };
    const { run, client } = reconcilerFor(
      mr({ deletionTimestamp: '2026-05-01T09:00:00Z', ...finalized }, { reclaimPolicy: 'Retain' }),
      ext,
    );
    expect(await run()).toEqual({ kind: 'done' });
    expect(calls).toEqual(['keep']);
    expect(client.writes).toEqual(['patch finalizers=']);
  });

  it('N4: Retain keeps its finalizer while what it made cannot be marked kept (a leak sweep would take it later), and says why', async () => {
    const { run, client, recorder } = reconcilerFor(
      mr({ deletionTimestamp: '2026-05-01T09:00:00Z', ...finalized }, { reclaimPolicy: 'Retain' }),
      new Error('the target cannot be reached'),
    );
    expect(await run()).toEqual({ kind: 'requeue' });
    expect(client.writes.filter((w) => w.startsWith('patch finalizers'))).toEqual([]);
    expect(recorder.events.map((e) => e.reason)).toEqual(['CannotConnectToProvider']);
  });

  it('N17: a conflict is retried quietly, without an event or a status write', async () => {
    const client = new FakeClient();
    client.failUpdateWith = new KubeError(409, 'Conflict', 'the object has been modified');
    const { run, recorder } = reconcilerFor(mr(), external({ exists: false }), client);
    expect(await run()).toEqual({ kind: 'requeue' });
    expect(recorder.events).toEqual([]);
    expect(client.writes).toEqual([]);
  });

  it('publishes connection details only when they change', async () => {
    const resource = mr(finalized, { writeConnectionSecretToRef: { name: 'conn' } });
    const client = new FakeClient();
    const ext = external({ exists: true, upToDate: true, connectionDetails: { endpoint: 'http://e:9000' } });
    await reconcilerFor(resource, ext, client).run();
    expect(client.writes.filter((w) => w.includes('secret'))).toEqual(['create secret conn']);
    client.writes = [];
    await reconcilerFor(resource, ext, client).run();
    expect(client.writes.filter((w) => w.includes('secret'))).toEqual([]);
  });
});
