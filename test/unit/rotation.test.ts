// The rotation plan (src/runtime/native/rotation.ts): when keys rotate, which older generations are
// still in the store, and which of them are past their grace period.
import { describe, expect, it } from '@jest/globals';
import type { ManagedResource } from '../../src/runtime/managed/types.ts';
import { ANNOTATION_ROTATE } from '../../src/runtime/meta.ts';
import { ANNOTATION_CREDENTIALS, durationMs, planRotation } from '../../src/runtime/native/rotation.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const mr = (annotations: Record<string, string> = {}, credentialRotation?: object): ManagedResource => ({
  metadata: { name: 'm', namespace: 'ns', creationTimestamp: '2026-01-01T00:00:00Z', annotations },
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

  it('a new request value steps the generation; the one it replaces has a grace period (1h unless set)', () => {
    const plan = planRotation(mr({ [ANNOTATION_ROTATE]: 'a' }), T0, true);
    expect(plan.next).toEqual({ generation: 1, retired: -1, rotatedAt: '2026-01-01T00:00:00Z', request: 'a' });
    expect(plan.view).toEqual({ generation: 1, outstanding: [0], due: [] });
    expect(plan.previousUntil).toBe(T0 + 3_600_000);
    expect(plan.recheckAt).toBe(T0 + 3_600_000);
  });

  it('the same request is answered once', () => {
    const plan = planRotation(
      mr({ [ANNOTATION_ROTATE]: 'a', ...record({ generation: 1, retired: -1, rotatedAt: '2026-01-01T00:00:00Z', request: 'a' }) }),
      T0 + 5,
      true,
    );
    expect(plan.next).toBeUndefined();
  });

  it('once the grace period ends, the previous generation is due for removal', () => {
    const annotations = record({ generation: 1, retired: -1, rotatedAt: '2026-01-01T00:00:00Z', request: 'a' });
    expect(planRotation(mr(annotations, { gracePeriod: '30s' }), T0 + 29_999, true).view.due).toEqual([]);
    expect(planRotation(mr(annotations, { gracePeriod: '30s' }), T0 + 30_000, true).view).toEqual({
      generation: 1,
      outstanding: [0],
      due: [0],
    });
  });

  it('rotating again within the grace period makes the older generation due at once', () => {
    const annotations = {
      [ANNOTATION_ROTATE]: 'b',
      ...record({ generation: 1, retired: -1, rotatedAt: '2026-01-01T00:00:00Z', request: 'a' }),
    };
    expect(planRotation(mr(annotations), T0 + 1000, true).view).toEqual({ generation: 2, outstanding: [0, 1], due: [0] });
  });

  it('a schedule rotates `every` after the last rotation, or the creation', () => {
    expect(planRotation(mr({}, { every: '1d' }), T0 + 86_399_999, true).next).toBeUndefined();
    expect(planRotation(mr({}, { every: '1d' }), T0 + 86_400_000, true).next?.generation).toBe(1);
  });

  it('where keys cannot rotate, nothing is planned however it is asked', () => {
    expect(planRotation(mr({ [ANNOTATION_ROTATE]: 'a' }, { every: '1s' }), T0 + 10_000, false).next).toBeUndefined();
  });

  it('a record edited into nonsense is refused, not guessed at', () => {
    for (const bad of ['{', '{"generation":1}', '{"generation":1,"retired":1}', '{"generation":-1,"retired":-1}'])
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
