// What one leak sweep leaves the next (leaks.ts): the leaks it kept and said so, the namespaces it
// kept for their contents, and since when each owner has been read gone. Each sweep starts a new
// memory and keeps only what it finds again, or what it could not look at.
/** What one sweep leaves the next, by key: only what it found again, or could not look at. */
export class SweepMemory {
  /**
   * Leaks found and kept, by target and uid, with why: they stay until someone acts (or a sweep can
   * delete them), and one Event says so, not one at every sweep.
   */
  readonly reportedKept = new Map<string, string>();
  /** Leaked namespaces kept for their contents, by target and uid: when each may be checked again. */
  readonly keptNamespaces = new Map<string, number>();
  /**
   * Owners (by key) read gone, each with the time of the first sweep in a row that did. In memory
   * only: a restarted process (as after a restore) reads every owner gone twice again before it deletes.
   */
  readonly goneSince = new Map<string, number>();

  /** Owners (by key) this sweep read there: what was remembered of them being gone is never taken over. */
  readonly readAlive = new Set<string>();

  /**
   * Takes what `last` held that this lacks, of one target (by fingerprint) or of all: a sweep that
   * could not look there. With `owners`, when owners were read gone too (which target's they are is
   * not known), but those this sweep read there.
   */
  keep(last: SweepMemory, { fingerprint, owners }: { fingerprint?: string; owners: boolean }): void {
    const prefix = fingerprint === undefined ? '' : `${fingerprint} `;
    for (const [from, to] of [
      [last.reportedKept, this.reportedKept],
      [last.keptNamespaces, this.keptNamespaces],
    ] as [Map<string, unknown>, Map<string, unknown>][])
      for (const [key, value] of from) if (key.startsWith(prefix) && !to.has(key)) to.set(key, value);
    if (!owners) return;
    for (const [key, at] of last.goneSince) if (!this.goneSince.has(key) && !this.readAlive.has(key)) this.goneSince.set(key, at);
  }
}
