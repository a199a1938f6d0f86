// Coalescer: one check at a time per key; callers that arrive during a run share the next one.
import { describe, expect, it } from '@jest/globals';
import { Coalescer } from '../../../src/kit/coalesce.ts';

/** A check whose runs we end by hand, counting them. */
function gate(): { runs: number; check: () => Promise<number>; finish: (error?: Error) => void } {
  const pending: { resolve: (v: number) => void; reject: (e: Error) => void }[] = [];
  const g = {
    runs: 0,
    check: () =>
      new Promise<number>((resolve, reject) => {
        g.runs++;
        pending.push({ resolve, reject });
      }),
    finish: (error?: Error) => {
      const p = pending.shift()!;
      if (error) p.reject(error);
      else p.resolve(g.runs);
    },
  };
  return g;
}
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('Coalescer', () => {
  it("answers a burst of callers with two runs: the first caller's, then one for all who came during it", async () => {
    const c = new Coalescer<number>();
    const g = gate();
    const first = c.run('ns', g.check);
    const during = Array.from({ length: 15 }, () => c.run('ns', g.check));
    expect(g.runs).toBe(1);
    g.finish();
    expect(await first).toBe(1);
    await tick();
    expect(g.runs).toBe(2); // started only after the first ended
    g.finish();
    expect(await Promise.all(during)).toEqual(Array(15).fill(2));
    // Idle again: the next caller runs a check of its own.
    const later = c.run('ns', g.check);
    expect(g.runs).toBe(3);
    g.finish();
    expect(await later).toBe(3);
  });

  it('keeps keys apart, and hands a failure to exactly the callers of that run', async () => {
    const c = new Coalescer<number>();
    const g = gate();
    const h = gate();
    const a = c.run('a', g.check);
    const b = c.run('b', h.check);
    const aDuring = c.run('a', g.check);
    expect([g.runs, h.runs]).toEqual([1, 1]);
    g.finish(new Error('list failed'));
    await expect(a).rejects.toThrow('list failed');
    await tick();
    g.finish();
    await expect(aDuring).resolves.toBe(2);
    h.finish();
    await expect(b).resolves.toBe(1);
  });
});
