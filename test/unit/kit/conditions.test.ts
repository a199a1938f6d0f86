import { describe, expect, it } from '@jest/globals';
import { getCondition, setCondition } from '../../../src/kit/conditions.ts';
import { Ready, Synced } from '../../../src/runtime/reasons.ts';

const t0 = new Date('2026-01-01T00:00:00Z');
const t1 = new Date('2026-01-01T00:05:00Z');

describe('setCondition', () => {
  it('returns the same list when nothing changed, so no status write follows', () => {
    const list = setCondition(undefined, { ...Synced.success(), observedGeneration: 1 }, t0);
    expect(setCondition(list, { ...Synced.success(), observedGeneration: 1 }, t1)).toBe(list);
  });

  it('keeps lastTransitionTime while the status stays the same', () => {
    const a = setCondition(undefined, Synced.error('SecretNotFound', 'x'), t0);
    const b = setCondition(a, Synced.error('Unreachable', 'y'), t1);
    expect(b[0]).toMatchObject({ reason: 'Unreachable', message: 'y', lastTransitionTime: '2026-01-01T00:00:00Z' });
  });

  it('moves lastTransitionTime when the status flips, and keeps one condition per type', () => {
    const a = setCondition(setCondition(undefined, Ready.creating(), t0), Synced.success(), t0);
    const b = setCondition(a, Ready.available(), t1);
    expect(b).toHaveLength(2);
    expect(getCondition(b, 'Ready')).toMatchObject({ status: 'True', lastTransitionTime: '2026-01-01T00:05:00Z' });
  });
});
