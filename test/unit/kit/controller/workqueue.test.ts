import { describe, expect, it, jest } from '@jest/globals';
import { TokenBucket, WorkQueue } from '../../../../src/kit/controller/workqueue.ts';

describe('WorkQueue', () => {
  it('holds a key once however often it is added', async () => {
    const q = new WorkQueue();
    q.add('a');
    q.add('a');
    q.add('b');
    expect(q.length).toBe(2);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
  });

  it('never hands one key to two workers; a re-add during processing comes back after done', async () => {
    const q = new WorkQueue();
    q.add('a');
    const key = await q.get();
    q.add('a');
    expect(q.length).toBe(0);
    q.done(key!);
    expect(q.length).toBe(1);
    expect(await q.get()).toBe('a');
  });

  it('wakes a waiting worker when a key arrives', async () => {
    const q = new WorkQueue();
    const got = q.get();
    q.add('x');
    expect(await got).toBe('x');
  });

  it('backs off exponentially per key and forgets on success', () => {
    const q = new WorkQueue({ baseMs: 10, maxMs: 35 });
    const delays: number[] = [];
    const original = q.addAfter.bind(q);
    q.addAfter = (key: string, ms: number) => {
      delays.push(ms);
      original(key, ms);
    };
    for (let i = 0; i < 4; i++) q.addRateLimited('k');
    expect(delays).toEqual([10, 20, 35, 35]);
    expect(q.retries('k')).toBe(4);
    q.forget('k');
    expect(q.retries('k')).toBe(0);
    q.shutdown();
  });

  it('keeps the earliest of two delayed adds', async () => {
    const q = new WorkQueue();
    q.addAfter('k', 60_000);
    q.addAfter('k', 5);
    expect(await q.get()).toBe('k');
    q.shutdown();
  });

  it('releases waiting workers on shutdown', async () => {
    const q = new WorkQueue();
    const got = q.get();
    q.shutdown();
    expect(await got).toBeUndefined();
  });
});

describe('TokenBucket', () => {
  it('is not thrown by a step of the wall clock (NTP, a VM resumed): no worker waits it out', () => {
    const bucket = new TokenBucket(10, 3);
    const wall = jest.spyOn(Date, 'now').mockReturnValue(Date.now() - 60_000);
    try {
      expect([bucket.reserve(), bucket.reserve(), bucket.reserve()]).toEqual([0, 0, 0]);
    } finally {
      wall.mockRestore();
    }
  });

  it('allows a burst, then spaces requests at the rate', () => {
    const bucket = new TokenBucket(10, 3);
    expect([bucket.reserve(), bucket.reserve(), bucket.reserve()]).toEqual([0, 0, 0]);
    const wait = bucket.reserve();
    expect(wait).toBeGreaterThan(50);
    expect(wait).toBeLessThanOrEqual(100);
  });
});

describe('WorkQueue priorities', () => {
  it('hands out keys added because something changed before keys whose timer fired', async () => {
    const q = new WorkQueue();
    q.addAfter('poll-1', 0);
    q.addAfter('poll-2', 0);
    q.add('changed-1');
    q.add('changed-2');
    expect([await q.get(), await q.get(), await q.get(), await q.get()]).toEqual(['changed-1', 'changed-2', 'poll-1', 'poll-2']);
  });

  it('moves a key waiting on a timer-fired re-check ahead when it changes, without queueing it twice', async () => {
    const q = new WorkQueue();
    q.addAfter('a', 0);
    q.addAfter('b', 0);
    q.add('c');
    q.add('b');
    expect(q.length).toBe(3);
    expect([await q.get(), await q.get(), await q.get()]).toEqual(['c', 'b', 'a']);
  });

  it('keeps the priority of a key re-added while in flight', async () => {
    const q = new WorkQueue();
    q.add('a');
    const key = await q.get();
    q.addAfter('a', 0);
    q.add('b', 'timer');
    q.add('a');
    q.done(key!);
    expect([await q.get(), await q.get()]).toEqual(['a', 'b']);
  });
});
