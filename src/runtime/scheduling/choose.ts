// The choice itself, a pure function (kube-scheduler's filter and score, OCM Placement's
// predicates and prioritizers, cut to what a target cluster needs): keep the Providers the selector
// matches, then those usable now, then those with room; among them the one with the fewest managed
// resources, ties broken by name so every replica and every retry decides alike.
import { Reasons } from '../reasons.ts';
import { describeSelector, matchesSelector, type LabelSelector } from '../../kit/kube/selector.ts';

export interface Candidate {
  name: string;
  labels?: Record<string, string>;
  /** Why its target cannot be used now (unreachable, not yet checked), or undefined when it can. */
  unreachable?: string;
  /** Why it may not take this resource at all (a target namespace it does not allow). */
  refuses?: string;
  /** The backend's operator in its target; undefined when the kind needs none. */
  operator?: 'present' | 'installable' | 'missing';
  /** Managed resources using or reserved for it. */
  used: number;
  /** Its declared capacity (spec.capacity.maxResources), if any. */
  maxResources?: number;
}

export type NotScheduledReason = typeof Reasons.NoMatchingProvider | typeof Reasons.NoUsableProvider | typeof Reasons.CapacityExhausted;

export interface Counts {
  providers: number;
  matching: number;
  usable: number;
  withRoom: number;
}

export type Decision =
  | { provider: string; message: string; counts: Counts }
  | { provider?: undefined; reason: NotScheduledReason; message: string; counts: Counts };

const LISTED = 5;
function list(items: string[]): string {
  return items.length <= LISTED ? items.join('; ') : `${items.slice(0, LISTED).join('; ')}; and ${items.length - LISTED} more`;
}

export function hasRoom(c: Candidate): boolean {
  return c.maxResources === undefined || c.used < c.maxResources;
}

export function chooseProvider(candidates: Candidate[], selector: LabelSelector, operator?: string): Decision {
  const wanted = describeSelector(selector);
  const matching = candidates
    .filter((c) => matchesSelector(selector, c.labels))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const problem = (c: Candidate): string | undefined =>
    c.unreachable !== undefined
      ? `${c.name}: ${c.unreachable}`
      : c.refuses !== undefined
        ? `${c.name}: ${c.refuses}`
        : c.operator === 'missing'
          ? `${c.name}: no ${operator ?? 'required'} operator in its target, and its Provider does not allow installing one`
          : undefined;
  const usable = matching.filter((c) => !problem(c));
  const withRoom = usable.filter(hasRoom);
  const counts: Counts = { providers: candidates.length, matching: matching.length, usable: usable.length, withRoom: withRoom.length };
  const of = `${matching.length} of ${candidates.length} Provider(s) match ${wanted}`;
  if (!matching.length) return { reason: Reasons.NoMatchingProvider, counts, message: `${of}` };
  if (!usable.length)
    return { reason: Reasons.NoUsableProvider, counts, message: `${of}; none is usable: ${list(matching.map((c) => problem(c)!))}` };
  if (!withRoom.length) {
    return {
      reason: Reasons.CapacityExhausted,
      counts,
      message: `${of}; ${usable.length} usable, all at capacity: ${list(usable.map((c) => `${c.name} ${c.used}/${c.maxResources}`))}`,
    };
  }
  const best = withRoom.reduce((a, b) => (b.used < a.used ? b : a));
  return {
    provider: best.name,
    counts,
    message: `Provider ${best.name}: the fewest managed resources (${best.used}) of ${withRoom.length} usable with room; ${of}`,
  };
}
