// The leak sweeper's judgement of objects whose owner is gone, against a fake target: an owner must be
// read gone by two sweeps the grace period apart, one object that cannot be deleted stops neither
// the sweep nor the other deletions, a store it keeps keeps its companions (its root keys), a store
// whose deletion needs a teardown is kept, and an object of no known age is never judged.
import { describe, expect, it } from '@jest/globals';
import type { KubeClient } from '../../../../src/kit/kube/client.ts';
import { KubeError } from '../../../../src/kit/kube/errors.ts';
import { Jobs, Namespaces, Secrets, type ResourceType } from '../../../../src/kit/kube/resources.ts';
import { silentLogger } from '../../../../src/kit/logger.ts';
import { MemoryEventRecorder } from '../../../../src/kit/controller/events.ts';
import type { ManagedResource } from '../../../../src/runtime/managed/types.ts';
import type { NativeKind, TargetObject } from '../../../../src/runtime/native/kind.ts';
import { LeakSweeper } from '../../../../src/runtime/native/leaks.ts';
import { OwnershipKey } from '../../../../src/runtime/ownership/key.ts';
import { OwnershipMarks, type Owner } from '../../../../src/runtime/ownership/marks.ts';
import type { ProviderResolver } from '../../../../src/runtime/providers/resolver.ts';

const Stores: ResourceType = { apiVersion: 'x.example.com/v1', kind: 'Store', plural: 'stores', namespaced: true };
const Managed: ResourceType = { apiVersion: 'c.example.com/v1', kind: 'Thing', plural: 'things', namespaced: true };
const marks = new OwnershipMarks('cp-1', new OwnershipKey(Buffer.alloc(32, 7)));
const plainKind: NativeKind<ManagedResource> = {
  resource: 'things.c',
  target: Stores,
  companionTypes: [Secrets],
  desired: (_mr, name) => ({ apiVersion: Stores.apiVersion, kind: 'Store', metadata: { name } }),
  inspect: async () => ({ ready: true }),
};
/** A kind whose deletion revokes its bucket users first; an access Job of an owner's shows it made one. */
const withUsersKind: NativeKind<ManagedResource> = {
  ...plainKind,
  companionTypes: [Secrets, Jobs],
  teardown: () => undefined,
  superseded: { type: Jobs, labelSelector: 'work', matches: (labels) => 'work' in labels },
};
/** The kind a sweeper() sweeps. */
let kind = plainKind;
const HOUR = 3_600_000;
const GRACE = 5 * 60_000;
const madeAt = Date.parse('2026-11-01T00:00:00Z');
const owner = (name: string): Owner => ({ resource: 'things.c', namespace: 'infra', name, uid: `${name}-uid`, reclaimPolicy: 'Delete' });
/** An object provider-rook made for `of` (signed and stamped), as the target lists it. */
const made = (type: ResourceType, name: string, of: string, created: string | null = new Date(madeAt).toISOString()): TargetObject => {
  const obj = marks.stamped(
    type,
    marks.mark(type, { apiVersion: type.apiVersion, kind: type.kind, metadata: { name, namespace: 'ns' } }, owner(of)),
    madeAt,
  );
  return { ...obj, metadata: { ...obj.metadata, uid: `${name}-uid`, ...(created ? { creationTimestamp: created } : {}) } } as TargetObject;
};

/**
 * `present`: whether an owner exists at its nth read (from 1); none does unless it says so.
 * `unserved`: the control cluster does not serve the managed kind (its CRD replaced, say), and answers
 * as an API server does then: a GET says 404 as for a missing object, a list fails.
 */
function sweeper(
  objects: TargetObject[],
  refuse: string[] = [],
  present: (name: string, read: number) => boolean = () => false,
  unserved = false,
  targetList?: KubeClient['list'],
) {
  const deleted: string[] = [];
  const reads: string[] = [];
  const recorder = new MemoryEventRecorder();
  const client = {
    list: targetList ?? (async (type: ResourceType) => ({ items: objects.filter((o) => o.kind === type.kind), resourceVersion: '1' })),
    delete: async (type: ResourceType, { name }: { name: string }) => {
      if (refuse.includes(name)) throw new KubeError(403, 'Forbidden', `deleting ${name} is forbidden`);
      deleted.push(`${type.kind} ${name}`);
      return 'deleted';
    },
    get: async () => undefined,
    // Lists a namespace's check asks for: nothing there.
    request: async () => ({ kind: 'PartialObjectMetadataList', items: [] }),
  } as unknown as KubeClient;
  const target = { server: 'https://target', fingerprint: 't', client };
  const provider = { metadata: { name: 'p', namespace: 'infra' }, spec: {} };
  const leaks = new LeakSweeper<ManagedResource>({
    kind,
    marks,
    resolver: { resolve: async () => target } as unknown as ProviderResolver,
    providers: { list: () => [provider] as never },
    // Every owner is gone, but where `present` says otherwise.
    control: {
      get: async () => undefined,
      list: async (_type: ResourceType, { fieldSelector }: { fieldSelector: string }) => {
        if (unserved) throw new KubeError(404, 'NotFound', 'the server could not find the requested resource');
        const name = fieldSelector.replace('metadata.name=', '');
        reads.push(name);
        return { items: present(name, reads.filter((r) => r === name).length) ? [{ metadata: { name } }] : [] };
      },
    } as unknown as KubeClient,
    managedType: Managed,
    graceMs: GRACE,
    reportOnly: false,
    recorder,
    log: silentLogger,
  });
  // Two sweeps the grace period apart: the owners they both read gone are judged by the second.
  const sweepTwice = async (at: number) => {
    await leaks.sweep(undefined, at - GRACE);
    return leaks.sweep(undefined, at);
  };
  return { leaks, deleted, recorder, sweepTwice };
}

describe('LeakSweeper', () => {
  it('deletes only what two sweeps the grace period apart found without its owner: an owner back in between takes its objects back', async () => {
    let there = false;
    const { leaks, deleted, recorder } = sweeper([made(Stores, 'a', 'a'), made(Secrets, 'a-keys', 'a')], [], () => there);
    // A control cluster being restored: the first sweep reads the owner gone, and says nothing.
    expect(await leaks.sweep(undefined, madeAt + HOUR)).toEqual([]);
    expect(await leaks.sweep(undefined, madeAt + HOUR + GRACE - 2_000)).toEqual([]); // closer than the grace period (and its second of slack)
    there = true;
    expect(await leaks.sweep(undefined, madeAt + HOUR + GRACE)).toEqual([]);
    // Gone again: counted afresh.
    there = false;
    expect(await leaks.sweep(undefined, madeAt + 2 * HOUR)).toEqual([]);
    expect(deleted).toEqual([]);
    expect(recorder.events).toEqual([]);
    await leaks.sweep(undefined, madeAt + 2 * HOUR + GRACE);
    expect(deleted).toEqual(['Store a', 'Secret a-keys']);
  });

  it('forgets an owner read there again, though a list of another type fails at every sweep', async () => {
    let there = false;
    const objects = [made(Stores, 'a', 'a')];
    const list = (async (type: ResourceType) => {
      if (type.kind === 'Secret') throw new KubeError(500, 'InternalError', 'etcdserver: request timed out');
      return { items: objects.filter((o) => o.kind === type.kind), resourceVersion: '1' };
    }) as unknown as KubeClient['list'];
    const { leaks, deleted } = sweeper(objects, [], () => there, false, list);
    await leaks.sweep(undefined, madeAt + HOUR);
    there = true; // back (a re-apply, a restore under way)
    await leaks.sweep(undefined, madeAt + HOUR + GRACE);
    there = false;
    await leaks.sweep(undefined, madeAt + HOUR + 2 * GRACE); // a first sighting again
    expect(deleted).toEqual([]);
    await leaks.sweep(undefined, madeAt + HOUR + 3 * GRACE);
    expect(deleted).toEqual(['Store a']);
  });

  it("takes a companion's type the target does not serve (its CRD not installed) for one with nothing there", async () => {
    const objects = [made(Stores, 'a', 'a')];
    const list = (async (type: ResourceType) => {
      if (type.kind === 'Secret') throw new KubeError(404, 'NotFound', 'the server could not find the requested resource');
      return { items: objects.filter((o) => o.kind === type.kind), resourceVersion: '1' };
    }) as unknown as KubeClient['list'];
    const { sweepTwice, deleted } = sweeper(objects, [], undefined, false, list);
    await sweepTwice(madeAt + HOUR);
    expect(deleted).toEqual(['Store a']);
  });

  it('says once that it keeps a leak, not at every sweep (an Event each is a write at rest), and what it does once it can', async () => {
    const refused = ['a'];
    const { leaks, recorder, sweepTwice } = sweeper([made(Stores, 'a', 'a')], refused);
    const said = () => recorder.events.map((e) => `${e.reason}: ${e.message.replace(/ in the target cluster.*not deleted:/, ':')}`);
    await sweepTwice(madeAt + HOUR);
    await leaks.sweep(undefined, madeAt + 2 * HOUR);
    expect(said()).toEqual(['FoundLeakedObject: found Store ns/a: its deletion failed: deleting a is forbidden']);
    refused.length = 0;
    await leaks.sweep(undefined, madeAt + 3 * HOUR);
    expect(said()[1]).toMatch(/^DeletedLeakedObject: deleted Store ns\/a/);
  });

  it("judges no companion of a target whose stores it cannot list: a kept store's root keys are among them", async () => {
    const secret = made(Secrets, 'a-keys', 'a');
    const { sweepTwice, deleted } = sweeper([secret], [], undefined, false, (async (type: ResourceType) => {
      if (type.kind === Stores.kind) throw new KubeError(500, 'InternalError', 'conversion webhook failed');
      return { items: type.kind === secret.kind ? [secret] : [], resourceVersion: '1' };
    }) as unknown as KubeClient['list']);
    await sweepTwice(madeAt + HOUR);
    expect(deleted).toEqual([]);
  });

  it('remembers what it kept in a target whose stores it could not list for a sweep: not said again once it can', async () => {
    let failing = false;
    const objects = [made(Stores, 'a', 'a')];
    const list = (async (type: ResourceType) => {
      if (failing && type.kind === Stores.kind) throw new KubeError(500, 'InternalError', 'conversion webhook failed');
      return { items: objects.filter((o) => o.kind === type.kind), resourceVersion: '1' };
    }) as unknown as KubeClient['list'];
    const { recorder, sweepTwice, leaks } = sweeper(objects, ['a'], undefined, false, list);
    await sweepTwice(madeAt + HOUR);
    failing = true;
    await leaks.sweep(undefined, madeAt + 2 * HOUR);
    failing = false;
    await leaks.sweep(undefined, madeAt + 3 * HOUR);
    await leaks.sweep(undefined, madeAt + 4 * HOUR);
    expect(recorder.events.map((e) => e.reason)).toEqual(['FoundLeakedObject']);
  });

  it('says nothing of a leaked namespace gone by the time it is judged: it deleted nothing', async () => {
    const ns = made(Namespaces, 'ns-a', 'a');
    const { sweepTwice, deleted, recorder } = sweeper([ns]); // its target answers no namespace to a get
    const reports = await sweepTwice(madeAt + HOUR);
    expect(reports.filter((r) => r.kind === 'Namespace')).toEqual([]);
    expect(deleted).toEqual([]);
    expect(recorder.events.filter((e) => e.reason === 'DeletedLeakedObject')).toEqual([]);
  });

  it('keeps the companions of an owner one of whose stores it keeps, though it deletes another of the same owner', async () => {
    // A copy it may not delete, listed before the store it deletes: the copy still needs the keys.
    const copy = made(Stores, 'a-copy', 'a');
    const { sweepTwice, deleted } = sweeper([copy, made(Stores, 'a', 'a'), made(Secrets, 'a-keys', 'a')], ['a-copy']);
    await sweepTwice(madeAt + HOUR);
    expect(deleted).toEqual(['Store a']);
  });

  it('keeps the companions of a store going already or too young to judge, whose owner is gone', async () => {
    const going = {
      ...made(Stores, 'a', 'a'),
      metadata: { ...made(Stores, 'a', 'a').metadata, deletionTimestamp: '2026-11-01T00:30:00Z' },
    };
    const { sweepTwice, deleted } = sweeper([going as TargetObject, made(Secrets, 'a-keys', 'a')]);
    await sweepTwice(madeAt + HOUR);
    expect(deleted).toEqual([]);
    // Made again a moment ago (within the grace period) beside older keys of the same owner.
    const young = made(Stores, 'b', 'b', new Date(madeAt + HOUR - 60_000).toISOString());
    const again = sweeper([young, made(Secrets, 'b-keys', 'b')]);
    await again.sweepTwice(madeAt + HOUR);
    expect(again.deleted).toEqual([]);
  });

  it("goes on past an object it cannot delete, and keeps that store's companions (its keys) with it", async () => {
    const { sweepTwice, deleted } = sweeper(
      [made(Stores, 'a', 'a'), made(Stores, 'b', 'b'), made(Secrets, 'a-keys', 'a'), made(Secrets, 'b-keys', 'b')],
      ['a'],
    );
    const reports = await sweepTwice(madeAt + HOUR);
    expect(deleted).toEqual(['Store b', 'Secret b-keys']);
    expect(reports.map((r) => [r.name, r.deleted, r.kept])).toEqual([
      ['a', false, 'its deletion failed: deleting a is forbidden'],
      ['b', true, undefined],
      ['a-keys', false, 'kept with the Store of the same owner, which this sweep did not delete'],
      ['b-keys', true, undefined],
    ]);
  });

  it('keeps, with its companions, a store whose deletion would revoke a bucket user first, and one where that cannot be told', async () => {
    kind = withUsersKind;
    try {
      // Its work label is not among what the signature covers: the marks stay proven.
      const access = made(Jobs, 'a-access', 'a');
      const job = { ...access, metadata: { ...access.metadata, labels: { ...access.metadata.labels, work: 'access' } } } as TargetObject;
      const objects = [made(Stores, 'a', 'a'), made(Stores, 'b', 'b'), made(Secrets, 'a-keys', 'a'), made(Secrets, 'b-keys', 'b')];
      const { sweepTwice, deleted } = sweeper([...objects, job]);
      const reports = await sweepTwice(madeAt + HOUR);
      // b made no user: its deletion needs no teardown, and it goes.
      expect(deleted).toEqual(['Store b', 'Secret b-keys']);
      expect(reports.find((r) => r.name === 'a')?.kept).toMatch(
        /^its deletion runs a teardown first \(its bucket users revoked, a bucket that holds objects kept\)/,
      );
      expect(reports.find((r) => r.name === 'a-keys')?.kept).toBe('kept with the Store of the same owner, which this sweep did not delete');
      // Jobs that cannot be listed: no store is known to have made none.
      const noJobs = (async (type: ResourceType) => {
        if (type.kind === 'Job') throw new KubeError(403, 'Forbidden', 'jobs are forbidden');
        return { items: objects.filter((o) => o.kind === type.kind), resourceVersion: '1' };
      }) as unknown as KubeClient['list'];
      const failing = sweeper(objects, [], undefined, false, noJobs);
      await failing.sweepTwice(madeAt + HOUR);
      expect(failing.deleted).toEqual([]);
    } finally {
      kind = plainKind;
    }
  });

  it('reads an owner again before it deletes anything of it: one restored while the sweep ran takes its objects back', async () => {
    // a is back at its third read: the second sweep's re-read before it deletes.
    const { sweepTwice, deleted } = sweeper([made(Stores, 'a', 'a'), made(Stores, 'b', 'b')], [], (name, read) => name === 'a' && read > 2);
    const reports = await sweepTwice(madeAt + HOUR);
    expect(deleted).toEqual(['Store b']);
    expect(reports.map((r) => [r.name, r.deleted, r.kept])).toEqual([
      ['a', false, 'its owner exists again (restored while this sweep ran)'],
      ['b', true, undefined],
    ]);
  });

  it('judges nothing while the control cluster does not serve the managed kind: a 404 for the type says nothing of an owner', async () => {
    const { sweepTwice, deleted } = sweeper([made(Stores, 'a', 'a'), made(Secrets, 'a-keys', 'a')], [], undefined, true);
    expect(await sweepTwice(madeAt + HOUR)).toEqual([]);
    expect(deleted).toEqual([]);
  });

  it('sweeps on a timer one at a time, each within the interval: a target that never finishes a list holds none for longer', async () => {
    let listing = 0;
    let most = 0;
    let lists = 0;
    // A target that answers no list until the caller gives up.
    const hanging = ((_type: ResourceType, opts?: { signal?: AbortSignal }) => {
      lists++;
      if (opts?.signal?.aborted) return Promise.reject(new Error('aborted'));
      most = Math.max(most, ++listing);
      return new Promise((_resolve, reject) =>
        opts?.signal?.addEventListener('abort', () => {
          listing--;
          reject(new Error('aborted'));
        }),
      );
    }) as unknown as KubeClient['list'];
    const { leaks } = sweeper([], [], undefined, false, hanging);
    leaks.start(30);
    try {
      await new Promise((resolve) => setTimeout(resolve, 250));
    } finally {
      leaks.stop();
    }
    expect(most).toBe(1);
    // Each sweep gave up at its deadline, so later ones ran (three types a sweep).
    expect(lists).toBeGreaterThan(3);
  });

  it('begins each sweep with the next target: one that stalls every sweep to its deadline keeps no other from being swept', async () => {
    const deleted: string[] = [];
    const stalled = {
      server: 'https://stalled',
      fingerprint: 'stalled',
      client: {
        // Answers no list until the caller gives up.
        list: (_type: ResourceType, opts?: { signal?: AbortSignal }) =>
          new Promise((_resolve, reject) => {
            if (opts?.signal?.aborted) reject(new Error('aborted'));
            opts?.signal?.addEventListener('abort', () => reject(new Error('aborted')));
          }),
      } as unknown as KubeClient,
    };
    const healthy = {
      server: 'https://healthy',
      fingerprint: 'healthy',
      client: {
        list: async (type: ResourceType) => ({ items: type.kind === 'Store' ? [made(Stores, 'a', 'a')] : [], resourceVersion: '1' }),
        delete: async (type: ResourceType, { name }: { name: string }) => {
          deleted.push(`${type.kind} ${name}`);
          return 'deleted';
        },
      } as unknown as KubeClient,
    };
    const providers = ['stalled', 'healthy'].map((name) => ({ metadata: { name, namespace: 'infra' }, spec: {} }));
    const leaks = new LeakSweeper<ManagedResource>({
      kind,
      marks,
      resolver: { resolve: async (p: { metadata: { name: string } }) => (p.metadata.name === 'stalled' ? stalled : healthy) } as never,
      providers: { list: () => providers as never },
      control: { list: async () => ({ items: [] }) } as unknown as KubeClient,
      managedType: Managed,
      graceMs: GRACE,
      reportOnly: false,
      recorder: new MemoryEventRecorder(),
      log: silentLogger,
    });
    // Each sweep cut off at its deadline, as start() gives them: the second and the fourth begin with
    // the healthy target, and read its owner gone an hour apart.
    for (let i = 0; i < 4; i++) await leaks.sweep(AbortSignal.timeout(50), madeAt + (i + 1) * HOUR);
    expect(deleted).toEqual(['Store a']);
  });

  it('does not judge an object of no known age', async () => {
    const { sweepTwice, deleted } = sweeper([made(Stores, 'a', 'a', null)]);
    expect(await sweepTwice(madeAt + HOUR)).toEqual([]);
    expect(deleted).toEqual([]);
  });
});
