// Management policies, with crossplane-runtime's semantics (reference B3): which of Observe,
// Create, Update, Delete and LateInitialize provider-rook may do for a managed resource. Unset is
// ["*"], everything. ["Observe"] imports read-only: status and connection details are filled and
// nothing is written to the target. Leaving out Delete orphans the external resource on deletion.
import { reclaimPolicyOf, type ManagedResource } from './types.ts';
export type ManagementAction = 'Observe' | 'Create' | 'Update' | 'Delete' | 'LateInitialize' | '*';

const O = 'Observe';
const C = 'Create';
const U = 'Update';
const D = 'Delete';
const LI = 'LateInitialize';

/** The combinations crossplane-runtime supports (and the CRDs' CEL rule allows); any other is refused. */
export const SUPPORTED_POLICIES: ManagementAction[][] = [
  ['*'],
  [O, C, U, D, LI],
  [O],
  [],
  [O, C, U, D],
  [O, C, U, LI],
  [O, C, U],
  [O, C, D, LI],
  [O, C, LI],
  [O, C, D],
  [O, C],
  [O, D],
  [O, U],
  [O, LI],
  [O, U, LI],
];

export interface Policy {
  valid: boolean;
  paused: boolean;
  onlyObserve: boolean;
  create: boolean;
  update: boolean;
  delete: boolean;
  lateInitialize: boolean;
}

const sameSet = (a: string[], b: string[]): boolean => a.length === b.length && a.every((x) => b.includes(x));

export function policyOf(spec: { managementPolicies?: string[] }): Policy {
  const set = spec.managementPolicies ?? ['*'];
  const has = (action: ManagementAction): boolean => set.includes(action) || set.includes('*');
  return {
    valid: SUPPORTED_POLICIES.some((s) => sameSet(s, set)),
    paused: set.length === 0,
    onlyObserve: sameSet(set, [O]),
    create: has(C),
    update: has(U),
    delete: has(D),
    lateInitialize: has(LI),
  };
}

/** The CEL rule the CRDs carry: the set is one of SUPPORTED_POLICIES (order free; the list is a set). */
export function supportedPoliciesRule(): string {
  return SUPPORTED_POLICIES.map((s) =>
    s.length ? `(size(self) == ${s.length} && ${s.map((a) => `'${a}' in self`).join(' && ')})` : 'size(self) == 0',
  ).join(' || ');
}

/** Whether its deletion leaves what it made in place: reclaim policy Retain or Orphan, or no Delete among its policies. */
export function keepsOnDeletion(spec: ManagedResource['spec']): boolean {
  return reclaimPolicyOf(spec) !== 'Delete' || !policyOf(spec as { managementPolicies?: string[] }).delete;
}
