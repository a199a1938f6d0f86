// Progress messages are written at most once per window; everything a user acts on at once.
import { describe, expect, it } from '@jest/globals';
import type { Condition } from '../../../src/kit/conditions.ts';
import { ProgressWrites } from '../../../src/runtime/progress.ts';

const cond = (type: string, status: 'True' | 'False', reason: string, message = ''): Condition => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: '',
});
const waiting = (message: string, bindingPhase?: string) => ({
  conditions: [cond('Ready', 'False', 'Unavailable', message), cond('Synced', 'True', 'ReconcileSuccess')],
  ...(bindingPhase ? { bindingPhase } : {}),
});

describe('ProgressWrites', () => {
  it('lets a new progress message wait until the window since the last write ends', () => {
    const p = new ProgressWrites(2_000);
    expect(p.wait('a', waiting('0/4 ready'), waiting('creating'), 10_000)).toBe(0); // no write of ours yet
    p.wrote('a', 10_000);
    expect(p.wait('a', waiting('1/4 ready'), waiting('0/4 ready'), 10_500)).toBe(1_500);
    expect(p.wait('b', waiting('1/4 ready'), waiting('0/4 ready'), 10_500)).toBe(0); // another object
    expect(p.wait('a', waiting('2/4 ready'), waiting('0/4 ready'), 12_000)).toBe(0);
  });

  it('writes at once a first status, Ready, an error, a recovery and a new binding phase', () => {
    const p = new ProgressWrites(2_000);
    p.wrote('a', 0);
    const ready = { conditions: [cond('Ready', 'True', 'Available'), cond('Synced', 'True', 'ReconcileSuccess')] };
    const failing = { conditions: [cond('Ready', 'False', 'Unavailable'), cond('Synced', 'False', 'ReconcileError', 'boom')] };
    expect(p.wait('a', waiting('creating'), undefined, 100)).toBe(0);
    expect(p.wait('a', ready, waiting('0/4 ready'), 100)).toBe(0);
    expect(p.wait('a', failing, waiting('0/4 ready'), 100)).toBe(0);
    expect(p.wait('a', waiting('0/4 ready'), failing, 100)).toBe(0);
    expect(p.wait('a', waiting('0/4 ready', 'Bound'), waiting('0/4 ready', 'Unbound'), 100)).toBe(0);
    expect(p.wait('a', { conditions: [...waiting('x').conditions, cond('Scheduled', 'True', 'Scheduled')] }, waiting('x'), 100)).toBe(0);
  });

  it('forgets writes whose window ended', () => {
    const p = new ProgressWrites(1_000);
    for (let i = 0; i < 100; i++) p.wrote(`k${i}`, i);
    p.wrote('last', 5_000);
    expect((p as unknown as { last: Map<string, number> }).last.size).toBe(1);
  });
});
