// The rotation plan (src/runtime/native/rotation.ts): when keys rotate, which older generations are
// still in the store, and which of them may go (never the published ones, the replaced ones after
// their grace period counted from the publication).
import { describe, expect, it } from '@jest/globals';
import type { ManagedResource } from '../../../../src/runtime/managed/types.ts';
import { ANNOTATION_ROTATE } from '../../../../src/runtime/labels.ts';
import {
  ANNOTATION_CREDENTIALS,
  durationMs,
  planFor,
  planRotation,
  retiredBy,
  retirement,
  rotationRequest,
  rotationStatus,
  settleRotation,
} from '../../../../src/runtime/native/rotation.ts';
import type { NativeKind } from '../../../../src/runtime/native/kind.ts';
import { testContext } from '../../../kit/kind-context.ts';
import { cond } from '../../../kit/conditions.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const AT = '2026-01-01T00:00:00Z';
const mr = (annotations: Record<string, string> = {}, credentialRotation?: object): ManagedResource => ({
  metadata: { name: 'm', namespace: 'ns', creationTimestamp: AT, annotations },
  spec: { ...(credentialRotation ? { credentialRotation } : {}) },
});
const record = (o: object) => ({ [ANNOTATION_CREDENTIALS]: JSON.stringify(o) });

describe('planRotation', () => {
  it('does nothing until asked', () => {
    expect(planRotation(mr(), T0 + 1000, true)).toEqual({
      state: { generation: 0, retired: -1 },
      view: { generation: 0, outstanding: [], due: [] },
    });
  });

  it('a new request value steps the generation; the published keys are kept while the new ones are made', () => {
    const plan = planRotation(mr({ [ANNOTATION_ROTATE]: 'a' }), T0, true);
    expect(plan.next).toEqual({ generation: 1, retired: -1, rotatedAt: AT, request: 'a' });
    expect(plan.view).toEqual({ generation: 1, outstanding: [0], due: [] });
  });

  it('the same request is answered once', () => {
    const annotations = { [ANNOTATION_ROTATE]: 'a', ...record({ generation: 1, retired: -1, rotatedAt: AT, request: 'a' }) };
    expect(planRotation(mr(annotations), T0 + 5, true).next).toBeUndefined();
  });

  it('once new keys are published, the ones they replaced keep a grace period (1h unless set) from then', () => {
    const published = record({ generation: 1, retired: -1, rotatedAt: AT, published: 1, publishedAt: '2026-01-01T00:10:00Z', previous: 0 });
    const plan = planRotation(mr(published), T0 + 600_000, true);
    expect(plan.view.due).toEqual([]);
    expect(plan.previousUntil).toBe(T0 + 600_000 + 3_600_000);
    expect(plan.recheckAt).toBe(T0 + 600_000 + 3_600_000);
  });

  it('when the grace period ends, the replaced generation is due for removal', () => {
    const annotations = record({ generation: 1, retired: -1, rotatedAt: AT, published: 1, publishedAt: AT, previous: 0 });
    expect(planRotation(mr(annotations, { gracePeriod: '30s' }), T0 + 29_999, true).view.due).toEqual([]);
    expect(planRotation(mr(annotations, { gracePeriod: '30s' }), T0 + 30_000, true).view).toEqual({
      generation: 1,
      outstanding: [0],
      due: [0],
    });
  });

  it('keys a consumer still holds are not due, and are looked at again within 30 s (nothing wakes the resource when it catches up)', () => {
    const annotations = record({ generation: 1, retired: -1, rotatedAt: AT, published: 1, publishedAt: AT, previous: 0 });
    const kind = { rotation: {} } as unknown as NativeKind<ManagedResource>;
    const held = planFor(kind, mr(annotations, { gracePeriod: '30s' }), T0 + 60_000, true, 'cluster b holds generation 0');
    expect([held.view.due, held.recheckAt]).toEqual([[], T0 + 60_000 + 30_000]);
    // The resource says why, where it would say they are being removed.
    expect(rotationStatus(held, {}).condition?.message).toBe(
      'keys of generation 1 in use since 2026-01-01T00:00:00Z; cluster b holds generation 0',
    );
    expect(planFor(kind, mr(annotations, { gracePeriod: '30s' }), T0 + 60_000, true).view.due).toEqual([0]);
  });

  it('requests coalesce: one made while new keys are still being made waits for them, however long ago the last began', () => {
    const annotations = { [ANNOTATION_ROTATE]: 'b', ...record({ generation: 1, retired: -1, rotatedAt: AT, request: 'a' }) };
    const plan = planRotation(mr(annotations), T0 + 3_600_000, true);
    expect(plan.next).toBeUndefined();
    expect(plan.view).toEqual({ generation: 1, outstanding: [0], due: [] });
  });

  it('a request sooner than 10s after the last rotation waits until then, and only the latest value is answered', () => {
    const published = { generation: 1, retired: -1, rotatedAt: AT, request: 'a', published: 1, publishedAt: AT, previous: 0 };
    const annotations = { [ANNOTATION_ROTATE]: 'c', ...record(published) };
    const early = planRotation(mr(annotations), T0 + 4_000, true);
    expect(early.next).toBeUndefined();
    expect(early.recheckAt).toBe(T0 + 10_000);
    expect(planRotation(mr(annotations), T0 + 10_000, true).next).toMatchObject({ generation: 2, request: 'c' });
  });

  it('fifteen requests within three seconds make two rotations, not fifteen', () => {
    let annotations: Record<string, string> = {};
    const generations = new Set<number>();
    for (let i = 0; i < 15; i++) {
      const now = T0 + i * 200;
      annotations = { ...annotations, [ANNOTATION_ROTATE]: `r${i}` };
      const plan = planRotation(mr(annotations), now, true);
      let state = plan.next ?? plan.state;
      // The new keys work at once here: published on the pass that sees them.
      if (state.generation > (state.published ?? 0))
        state = { ...state, published: state.generation, publishedAt: new Date(now).toISOString(), previous: state.published ?? 0 };
      annotations = { ...annotations, ...record(state) };
      generations.add(state.generation);
    }
    const last = planRotation(mr(annotations), T0 + 20_000, true);
    expect(last.next?.generation).toBe(2);
    expect(last.next?.request).toBe('r14');
    expect([...generations]).toEqual([1]);
  });

  it('a request value of any length is recorded bounded: as itself up to 63 characters, else as its digest', () => {
    const long = 'x'.repeat(140_000);
    const next = planRotation(mr({ [ANNOTATION_ROTATE]: long }), T0, true).next!;
    expect(next.request).toMatch(/^sha256-[0-9a-f]{32}$/);
    expect(rotationRequest(long)).toBe(next.request);
    expect(rotationRequest('1700000000')).toBe('1700000000');
    const again = { [ANNOTATION_ROTATE]: long, ...record({ ...next, published: 1, publishedAt: AT, previous: 0 }) };
    expect(planRotation(mr(again), T0 + 60_000, true).next).toBeUndefined();
  });

  it('a grace period longer than 90d is refused, naming the field', () => {
    expect(() => planRotation(mr({ [ANNOTATION_ROTATE]: 'a' }, { gracePeriod: '999999d999999d999999d999999d' }), T0, true)).toThrow(
      'spec.credentialRotation.gracePeriod (999999d999999d999999d999999d) is longer than the longest allowed, 90d',
    );
    expect(planRotation(mr({ [ANNOTATION_ROTATE]: 'a' }, { gracePeriod: '90d' }), T0, true).next?.generation).toBe(1);
  });

  it('once newer keys are published, anything older than the keys they replaced goes at once (rotate twice to revoke leaked keys)', () => {
    const annotations = record({ generation: 2, retired: -1, rotatedAt: AT, published: 2, publishedAt: AT, previous: 1 });
    expect(planRotation(mr(annotations), T0 + 1000, true).view).toEqual({ generation: 2, outstanding: [0, 1], due: [0] });
  });

  it('keys a rotation left unpublished go only with the older keys still in their grace period, never ahead of them', () => {
    // A schedule that comes while the last rotation's keys are still being made rotates all the same:
    // generation 2 is never published, and generation 1 is replaced by 3.
    const making = record({ generation: 2, retired: 0, rotatedAt: AT, published: 1, publishedAt: AT, previous: 0 });
    expect(planRotation(mr(making, { every: '20s', gracePeriod: '10s' }), T0 + 20_000, true).next?.generation).toBe(3);
    const published = record({ generation: 3, retired: 0, rotatedAt: AT, published: 3, publishedAt: AT, previous: 1 });
    const settings = { every: '1h', gracePeriod: '30s' };
    // Removing generation 2 alone would record every generation up to 2 as removed, generation 1 with it.
    expect(planRotation(mr(published, settings), T0 + 1000, true).view).toEqual({ generation: 3, outstanding: [1, 2], due: [] });
    expect(planRotation(mr(published, settings), T0 + 30_000, true).view.due).toEqual([1, 2]);
    const kind = { rotation: {} } as unknown as NativeKind<ManagedResource>;
    expect(planFor(kind, mr(published, settings), T0 + 30_000, true, 'cluster b holds generation 1').view.due).toEqual([]);
  });

  it('a schedule rotates `every` after the last rotation, or the creation', () => {
    expect(planRotation(mr({}, { every: '1d' }), T0 + 86_399_999, true).next).toBeUndefined();
    expect(planRotation(mr({}, { every: '1d' }), T0 + 86_400_000, true).next?.generation).toBe(1);
    expect(planRotation(mr({}, { every: '20s', gracePeriod: '10s' }), T0 + 20_000, true).next?.generation).toBe(1);
  });

  it('a schedule shorter than 10s, or not longer than the grace period, is refused', () => {
    expect(() => planRotation(mr({}, { every: '5s' }), T0, true)).toThrow(/at least 10s and longer than gracePeriod/);
    expect(() => planRotation(mr({}, { every: '1h' }), T0, true)).toThrow(/at least 10s and longer than gracePeriod/);
  });

  it('where keys cannot rotate, or nothing may be written, nothing is planned however it is asked', () => {
    expect(planRotation(mr({ [ANNOTATION_ROTATE]: 'a' }, { every: '2h' }), T0 + 10_000_000, false).next).toBeUndefined();
  });

  it('a record edited into nonsense is refused, not guessed at', () => {
    for (const bad of [
      '{',
      '{"generation":1}',
      '{"generation":1,"retired":1}',
      '{"generation":-1,"retired":-1}',
      '{"generation":1,"retired":-1,"published":2}',
      'null',
      // A time that does not read as one would restart the grace period at every pass.
      '{"generation":1,"retired":-1,"published":1,"previous":0,"publishedAt":"soon"}',
      '{"generation":1,"retired":-1,"rotatedAt":5}',
    ])
      expect(() => planRotation(mr({ [ANNOTATION_CREDENTIALS]: bad }), T0, true)).toThrow(/no longer reads as one/);
  });
});

describe('settleRotation', () => {
  const kind = { rotation: {} } as unknown as NativeKind<ManagedResource>;
  // Generation 2 is being made; generation 1's keys are the ones published.
  const making = () =>
    mr({
      [ANNOTATION_ROTATE]: 'b',
      ...record({ generation: 2, retired: 0, rotatedAt: AT, request: 'b', published: 1, publishedAt: AT, previous: 0 }),
    });
  const settle = (inspection: { ready: boolean; message?: string; rotating?: string }) => {
    const resource = making();
    const settled = settleRotation(kind, resource, planRotation(resource, T0 + 60_000, true), { inspection, now: T0 + 60_000 });
    return { settled, condition: cond(resource, 'CredentialsRotated') };
  };

  it('publishes new keys once the kind reads them as working and the resource is ready', () => {
    const { settled } = settle({ ready: true });
    expect(JSON.parse(settled.annotations![ANNOTATION_CREDENTIALS]!)).toMatchObject({ published: 2, previous: 1 });
  });

  it('does not publish them while the resource is not ready, though the kind says nothing of them: the previous keys stay published', () => {
    const { settled, condition } = settle({ ready: false, message: "waiting for the user's policy" });
    expect(settled.annotations).toBeUndefined();
    expect(condition).toMatchObject({ status: 'False', reason: 'Rotating', message: "waiting for the user's policy" });
  });
});

describe('durationMs', () => {
  it.each([
    ['90s', 90_000],
    ['1h30m', 5_400_000],
    ['30d', 2_592_000_000],
  ])('%s', (text, ms) => expect(durationMs(text)).toBe(ms));
  it('refuses what is not a duration', () => expect(() => durationMs('soon')).toThrow(/not a duration/));
});

describe('retirement by deleting what holds the keys (Rotation.retiredBy)', () => {
  const held = (name: string) => ({
    type: { apiVersion: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true },
    name,
    namespace: 't',
    purpose: 'keys',
    build: () => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 't' } }),
  });
  const kind = {
    resource: 'xs.example.com',
    target: { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true },
    desired: () => ({ metadata: { name: 'x' } }),
    inspect: async () => ({ ready: true }),
    rotation: { retiredBy: () => [held('creds-g0'), held('keys-g0')] },
  } as unknown as NativeKind<ManagedResource>;
  const ctx = (due: number[]) => ({ ...testContext, credentials: { generation: 1, outstanding: [0], due } });
  const reading = (present: string[]) => ({
    get: async <T>(_t: unknown, { name }: { name: string }) =>
      (present.includes(name) ? { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 't' } } : undefined) as T | undefined,
  });
  const trusted: string[] = [];
  const trust = (c: { name: string }) => void trusted.push(c.name);
  const signal = new AbortController().signal;

  it('is drift while any of them is still there (each judged ours first), and retired once none is', async () => {
    const pending = await retirement(kind, { mr: mr(), name: 'x', ctx: ctx([0]), read: reading(['keys-g0']), trust }, signal);
    expect(pending).toEqual({ drift: 'removing keys of generation 0' });
    expect(trusted).toEqual(['keys-g0']);
    const done = await retirement(kind, { mr: mr(), name: 'x', ctx: ctx([0]), read: reading([]), trust }, signal);
    // With the companions that held them, which leave the resource's record of its companions.
    expect({ ...done, gone: done.gone?.map((c) => c.name) }).toEqual({ retired: 0, gone: ['creds-g0', 'keys-g0'] });
  });

  it('does nothing while no generation is due', async () => {
    expect(await retirement(kind, { mr: mr(), name: 'x', ctx: ctx([]), read: reading(['creds-g0', 'keys-g0']), trust }, signal)).toEqual(
      {},
    );
    expect(retiredBy(kind, mr(), 'x', ctx([]))).toEqual([]);
  });
});
