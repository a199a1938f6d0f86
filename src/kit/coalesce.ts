// One check at a time per key, shared by everyone who asked while it ran.

/**
 * Runs an idempotent check at most once at a time per key. A caller that arrives while one runs
 * does not share that run (it may have started before the caller's own changes): it waits for the
 * next, which starts when the current one ends and answers everyone who arrived meanwhile. A burst
 * of N callers costs two runs instead of N, and every answer is at least as fresh as its question.
 */
interface Slot<T> {
  /** Callers waiting for the next run. */
  waiters: { resolve: (v: T) => void; reject: (e: unknown) => void }[];
  check: () => Promise<T>;
}

export class Coalescer<T> {
  private readonly slots = new Map<string, Slot<T>>();

  run(key: string, check: () => Promise<T>): Promise<T> {
    const slot = this.slots.get(key);
    if (slot) {
      slot.check = check; // the newest caller's (its signal is the least likely to have ended)
      return new Promise((resolve, reject) => slot.waiters.push({ resolve, reject }));
    }
    const fresh: Slot<T> = { waiters: [], check };
    this.slots.set(key, fresh);
    return check().finally(() => this.next(key, fresh));
  }

  private next(key: string, slot: Slot<T>): void {
    const waiters = slot.waiters.splice(0);
    if (waiters.length === 0) {
      this.slots.delete(key);
      return;
    }
    slot
      .check()
      .then(
        (v) => {
          for (const w of waiters) w.resolve(v);
        },
        (e: unknown) => {
          for (const w of waiters) w.reject(e);
        },
      )
      .finally(() => this.next(key, slot));
  }
}
