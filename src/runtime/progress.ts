// Progress is written at most once per window per object. A resource on its way to Ready passes
// through several messages ("waiting for the StatefulSet", "0/4 servers ready", ...) in as many
// passes; writing each costs the API server a write, and a watch event to every reader, for news
// that is stale a moment later. A status that only changes such a message (the same conditions,
// True or False as before; not Ready, no error) waits until the window since our last write ends,
// and the pass comes back then to write what holds by that time. Everything else is written at once:
// a first status, Ready, an error, a recovery, a new binding phase.
import { getCondition, type Condition } from '../kit/conditions.ts';

/** How long a progress message may lag behind: well under what a person watching notices as stuck. */
export const PROGRESS_WINDOW_MS = 2_000;

interface StatusLike {
  conditions?: readonly Condition[];
  bindingPhase?: string;
}

export class ProgressWrites {
  private readonly last = new Map<string, number>();
  private readonly windowMs: number;

  constructor(windowMs = PROGRESS_WINDOW_MS) {
    this.windowMs = windowMs;
  }

  /** How long to wait before writing `next` over `current` (0: write now). */
  wait(key: string, next: StatusLike | undefined, current: StatusLike | undefined, now: number): number {
    return this.waitIf(key, onlyProgress(next, current), now);
  }

  /** The same, for a write its caller judged to be progress only (e.g. a Provider's count of users). */
  waitIf(key: string, progressOnly: boolean, now: number): number {
    if (!progressOnly) return 0;
    const at = this.last.get(key);
    return at === undefined ? 0 : Math.max(0, at + this.windowMs - now);
  }

  /** Records a status write of ours (forgetting those whose window has long ended). */
  wrote(key: string, now: number): void {
    this.last.delete(key);
    this.last.set(key, now);
    // Insertion order is time order: the oldest are first.
    for (const [k, at] of this.last) {
      if (at > now - this.windowMs) break;
      this.last.delete(k);
    }
  }
}

/** The same conditions, each True or False as before, the same phase; not Ready and no error. */
function onlyProgress(next: StatusLike | undefined, current: StatusLike | undefined): boolean {
  const a = next?.conditions ?? [];
  const b = current?.conditions ?? [];
  if (a.length === 0 || a.length !== b.length || next?.bindingPhase !== current?.bindingPhase) return false;
  for (const c of a) {
    if (getCondition(b, c.type)?.status !== c.status) return false;
    if ((c.type === 'Ready' && c.status !== 'False') || (c.type === 'Synced' && c.status !== 'True')) return false;
  }
  return true;
}
