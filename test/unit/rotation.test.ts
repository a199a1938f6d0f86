// The rotation plan (src/runtime/native/rotation.ts): when keys rotate, which older generations are
// still in the store, and which of them may go (never the published ones, the replaced ones after
// their grace period counted from the publication).
import { describe, expect, it } from '@jest/globals';
import type { ManagedResource } from '../../src/runtime/managed/types.ts';
import { ANNOTATION_ROTATE } from '../../src/runtime/meta.ts';
import { ANNOTATION_CREDENTIALS, durationMs, planRotation } from '../../src/runtime/native/rotation.ts';

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

  it('keys never published, or still in use, are never due: rotating twice before new keys work keeps the published ones', () => {
    const annotations = { [ANNOTATION_ROTATE]: 'b', ...record({ generation: 1, retired: -1, rotatedAt: AT, request: 'a' }) };
    expect(planRotation(mr(annotations), T0 + 1000, true).view).toEqual({ generation: 2, outstanding: [0, 1], due: [] });
  });

  it('once newer keys are published, anything older than the keys they replaced goes at once (rotate twice to revoke leaked keys)', () => {
    const annotations = record({ generation: 2, retired: -1, rotatedAt: AT, published: 2, publishedAt: AT, previous: 1 });
    expect(planRotation(mr(annotations), T0 + 1000, true).view).toEqual({ generation: 2, outstanding: [0, 1], due: [0] });
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
    ])
      expect(() => planRotation(mr({ [ANNOTATION_CREDENTIALS]: bad }), T0, true)).toThrow(/no longer reads as one/);
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
