// Which controller a claim is for, decided before it is queued (crossplane's class-kind predicate):
// the kind of the resource it is bound to, else the kind its portable class points at. Each claim
// controller checks again when it takes the claim from its queue: a claim may change in between.
import { type ReadonlyDeep } from '../../kit/controller/informer.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import type { ManagedResource } from '../managed/types.ts';
import { hasFinalizer, isDeleting } from '../../kit/meta.ts';
import { claimRefOf, FINALIZER_CLAIM, refersTo, type Claim, type PortableClass } from './claim.ts';
import type { Cache } from '../../kit/controller/informer.ts';

/** A served class kind, the managed kind made from it, and (for hand-written references) its cache. */
export interface ServedKind {
  class: ResourceType;
  managed: ResourceType;
  managedCache?: Pick<Cache<ManagedResource>, 'get'>;
}

/**
 * The index (in the served list) of the kind whose controller takes the claim; 'unserved' for one no
 * served kind can take (a missing class, a kind nothing serves), which the claim machinery reports
 * itself; 'none' for one no claim controller acts on.
 */
export type Route = number | 'unserved' | 'none';

export class ClaimRouter {
  private readonly served: ServedKind[];
  private readonly portable: Pick<Cache<PortableClass>, 'get'>;

  constructor(served: ServedKind[], portable: Pick<Cache<PortableClass>, 'get'>) {
    this.served = served;
    this.portable = portable;
  }

  route(claim: ReadonlyDeep<Claim>): Route {
    const ref = claim.spec?.resourceRef;
    // Bound (or reserved): the kind of its resource, which no class change moves.
    if (ref?.kind) {
      const i = this.served.findIndex((s) => ref.kind === s.managed.kind && (!ref.apiVersion || ref.apiVersion === s.managed.apiVersion));
      if (i >= 0) return i;
      // Deleting behind our finalizer (added before the claim named a kind no controller here serves):
      // let go by the unserved reconciler, or the claim, and its namespace, would never go.
      return isDeleting(claim.metadata) && hasFinalizer(claim.metadata, FINALIZER_CLAIM) ? 'unserved' : 'none';
    }
    // Neither class nor resource: the default-class controller's to fill in.
    if (!claim.spec?.classRef && !ref && !isDeleting(claim.metadata)) return 'none';
    const kind = this.classKindOf(claim);
    const byClass = kind ? this.served.findIndex((s) => s.class.kind === kind.kind && s.class.apiVersion === kind.apiVersion) : -1;
    if (byClass >= 0) return byClass;
    // A resourceRef written without a kind: the kind that holds a resource reserved for this claim there.
    const byRef = ref?.namespace ? this.served.findIndex((s) => reservedFor(s.managedCache?.get(ref), claim)) : -1;
    return byRef >= 0 ? byRef : 'unserved';
  }

  /** The class kind the claim's portable class points at, as cached. */
  private classKindOf(claim: ReadonlyDeep<Claim>): { apiVersion: string; kind: string } | undefined {
    const name = claim.spec?.classRef?.name;
    return name ? this.portable.get({ namespace: claim.metadata.namespace, name })?.classRef : undefined;
  }
}

const reservedFor = (mr: ReadonlyDeep<ManagedResource> | undefined, claim: ReadonlyDeep<Claim>): boolean =>
  mr !== undefined && refersTo(claimRefOf(mr), claim);
