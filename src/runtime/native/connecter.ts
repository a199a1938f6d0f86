// NativeConnecter: managed resource -> its Provider -> the Provider's Secret -> a (cached) client for
// the target cluster (ProviderResolver, resolver.ts) -> a nativeExternal that manages one object there.
import { formatObjectKey, type ObjectKey } from '../../kit/kube/object-key.ts';
import { keyOf } from '../../kit/controller/result.ts';
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import { ReasonedError } from '../../kit/conditions.ts';
import type { ExternalClient, ExternalConnecter, ManagedResource } from '../managed/types.ts';
import { keepsOnDeletion } from '../managed/policies.ts';
import { ANNOTATION_CREATE_FAILED, ANNOTATION_CREATE_PENDING, ANNOTATION_CREATE_SUCCEEDED, isDeleting } from '../../kit/meta.ts';
import type { EventRecorder } from '../../kit/controller/events.ts';
import { NativeExternal } from './external.ts';
import { ANNOTATION_COMPANION_UIDS, ANNOTATION_TARGET_UID, importRequested } from '../ownership/marks.ts';
import { kindContext, type NativeExternalOptions } from './pass.ts';
import { nameOf, type NativeKind } from './kind.ts';
import { providerNotFound, type ProviderResolver } from '../providers/resolver.ts';
import { operatorNamespaces, type OperatorInstaller } from '../operators/operator.ts';
import {
  allowsNamespace,
  fieldsHolding,
  namespaceNotAllowed,
  operatorSettings,
  protectedNamespaces,
  type ProviderObject as Provider,
} from '../providers/provider.ts';
import type { Owner, OwnershipMarks } from '../ownership/marks.ts';
import type { Target } from '../providers/targets.ts';
import { Reasons } from '../reasons.ts';

export interface NativeConnecterOptions {
  /** The operator of this kind, shared with the Provider's status. */
  installer?: OperatorInstaller;
  recorder?: EventRecorder;
  /** Called when an operator was found present or missing unlike the Provider's status says (e.g. just installed). */
  operatorChanged?: (provider: ReadonlyDeep<Provider>) => void;
  /**
   * Called on every connect: which target a resource ("namespace/name") uses, and, when it imports
   * an object it did not make, that object's key there: no watch of our marks sees it change.
   */
  connected?: (key: string, target: Target, imports?: string) => void;
  /** The control cluster's managed resources a kind's endpoint may come from (NativeKind.endpointFrom). */
  managed?: NativeExternalOptions['managed'];
  retirementHold?: NativeExternalOptions['retirementHold'];
  usedBy?: NativeExternalOptions['usedBy'];
  stillHeld?: NativeExternalOptions['stillHeld'];
}

export class NativeConnecter<MR extends ManagedResource> implements ExternalConnecter<MR> {
  private readonly resolver: ProviderResolver;
  private readonly kind: NativeKind<MR>;
  private readonly marks: OwnershipMarks;
  private readonly opts: NativeConnecterOptions;

  constructor(resolver: ProviderResolver, kind: NativeKind<MR>, marks: OwnershipMarks, opts: NativeConnecterOptions = {}) {
    this.resolver = resolver;
    this.kind = kind;
    this.marks = marks;
    this.opts = opts;
  }

  async connect(mr: MR, signal: AbortSignal): Promise<ExternalClient<MR>> {
    const ref = mr.spec.providerRef;
    const namespace = mr.metadata.namespace!;
    if (!ref?.name) throw new ReasonedError(Reasons.ProviderRefMissing, 'spec.providerRef.name is not set');
    // A reference into another namespace would let anyone who can create this kind use credentials
    // they cannot read: refuse it.
    if (ref.namespace && ref.namespace !== namespace) {
      throw new ReasonedError(
        Reasons.CrossNamespaceReference,
        `spec.providerRef.namespace '${ref.namespace}' differs from this resource's namespace '${namespace}'; Providers are only used from their own namespace`,
      );
    }
    const key = { namespace, name: ref.name };
    const provider = this.resolver.cached(key) ?? (await this.withoutProvider(mr, key, signal));
    if (!provider) return leftAsItIs;
    // Before the target is reached; a deletion still removes what is ours there, and makes nothing.
    const makesNothing = isDeleting(mr.metadata) ? this.refusedNamespaces(provider, mr)?.message : this.refuseNamespaces(provider, mr);
    const target = await this.resolver.resolve(provider, signal);
    this.opts.connected?.(keyOf({ namespace, name: mr.metadata.name }), target, importRequested(mr) ? this.targetKey(mr) : undefined);
    const installer = this.opts.installer;
    const ensureOperator =
      installer &&
      ((s: AbortSignal) =>
        installer.ensure(
          target,
          {
            provider,
            owner: providerOwner(provider),
            seen: (present) => {
              const reported = provider.status?.operators?.find((o) => o.name === installer.bundle.name)?.present;
              if (reported !== present) this.opts.operatorChanged?.(provider);
            },
          },
          s,
        ));
    return new NativeExternal(this.kind, target.client, this.marks, {
      prerequisite: ensureOperator,
      recorder: this.opts.recorder,
      reader: target.informers,
      managed: this.opts.managed,
      retirementHold: this.opts.retirementHold,
      usedBy: this.opts.usedBy,
      stillHeld: this.opts.stillHeld,
      ...(makesNothing ? { makesNothing } : {}),
      ...(installer
        ? {
            operatorNamespace:
              operatorSettings(provider, installer.bundle.name, installer.bundle.legacy).namespace ?? installer.bundle.defaultNamespace,
          }
        : {}),
    });
  }

  /**
   * Its Provider is not in the cache: why not, thrown. A deleting resource whose Provider is gone
   * (read live) and that never recorded a create (a claim made it on a Provider that was never there,
   * or one deleted as the scheduler chose it) has nothing in any target to delete: it is let go
   * (undefined), and says so. One that made its object waits, saying how to let it go: its data is kept;
   * one whose deletion keeps what it made (Retain, Orphan) is let go, with a Warning that it could not be marked kept.
   */
  private async withoutProvider(mr: MR, key: Required<ObjectKey>, signal: AbortSignal): Promise<undefined> {
    if (!isDeleting(mr.metadata) || !(await this.resolver.gone(key, signal))) throw providerNotFound(key);
    const marks = mr.metadata.annotations ?? {};
    const missing = providerNotFound(key).message;
    // An import, or anything recorded of a target (a create's outcome, a proven object's uid), says it may hold something.
    const made =
      importRequested(mr) ||
      [ANNOTATION_CREATE_SUCCEEDED, ANNOTATION_CREATE_FAILED, ANNOTATION_TARGET_UID, ANNOTATION_COMPANION_UIDS].some((a) => marks[a]);
    // Let go without deleting: what it made cannot be marked kept with no Provider; it is let go as asked, and says the risk.
    if (made && keepsOnDeletion(mr.spec)) {
      this.opts.recorder?.warning(
        mr,
        Reasons.ProviderNotFound,
        `${missing}; let go as its reclaim policy asks, but what it made in its target could not be marked to be kept: ` +
          'a Provider that reaches that cluster later may sweep it as a leak, unless it was made under Retain',
      );
      return undefined;
    }
    if (made) {
      throw new ReasonedError(
        Reasons.ProviderNotFound,
        `${missing}, so what this resource made or adopted in its target cannot be deleted: create the Provider again. ` +
          'Setting spec.reclaimPolicy to Retain lets this resource go without it, but what it made keeps its mark to be deleted: ' +
          'a Provider that reaches that cluster later sweeps it as a leak',
      );
    }
    // A claim makes its resource with the create marked pending, before any create ran: pending alone
    // cannot tell a create never tried from one whose record was cut short (a crash, a lost answer).
    const after = keepsOnDeletion(mr.spec)
      ? 'what it made stays, as its reclaim policy asks'
      : 'a Provider that reaches that cluster later sweeps what it made as a leak';
    const tried = marks[ANNOTATION_CREATE_PENDING] ? `; should a create have run and its record been cut short (a crash), ${after}` : '';
    this.opts.recorder?.warning(
      mr,
      Reasons.ProviderNotFound,
      `${missing}; nothing is recorded as made in a target for this resource, so it is let go without deleting anything there${tried}`,
    );
    return undefined;
  }

  /** The key of the resource's object in the target's caches ("namespace/name", or the name). */
  private targetKey(mr: MR): string {
    const name = nameOf(this.kind, mr);
    const namespace = this.kind.target.namespaced ? this.kind.desired(mr, name, kindContext(this.marks)).metadata.namespace : undefined;
    return formatObjectKey(namespace ? { namespace, name } : { name });
  }

  /** Refuses a resource that would put its object, or a companion, in a namespace its Provider does not allow. */
  private refuseNamespaces(provider: ReadonlyDeep<Provider>, mr: MR): undefined {
    const err = this.refusedNamespaces(provider, mr);
    if (!err) return undefined;
    this.opts.recorder?.warning(mr, err.reason, err.message);
    throw err;
  }

  /** Why the resource may not use its namespaces in its Provider's target, if it may not. */
  private refusedNamespaces(provider: ReadonlyDeep<Provider>, mr: MR): ReasonedError | undefined {
    const refused = refusedNamespace(provider, namespacesUsed(this.kind, this.marks, mr));
    if (!refused) return undefined;
    return namespaceNotAllowed(provider, refused, fieldsHolding(mr.spec, refused, 'spec').join(', ') || 'the target namespace');
  }
}

/** The client of a resource with nothing in any target: observed absent, so its deletion only lets go. */
const leftAsItIs: ExternalClient<never> = {
  observe: () => Promise.resolve({ exists: false, upToDate: true }),
  create: () => Promise.reject(new Error('a resource without a Provider makes nothing')),
  update: () => Promise.reject(new Error('a resource without a Provider changes nothing')),
  delete: () => Promise.resolve({ gone: true }),
};

/** The target namespaces a resource puts its object and companions in. */
export function namespacesUsed<MR extends ManagedResource>(kind: NativeKind<MR>, marks: OwnershipMarks, mr: MR): string[] {
  const name = nameOf(kind, mr);
  const ctx = kindContext(marks);
  const used = [kind.desired(mr, name, ctx).metadata.namespace, ...(kind.companions?.(mr, name, ctx) ?? []).map((c) => c.namespace)];
  return used.filter((ns): ns is string => ns !== undefined);
}

/** The first of these namespaces the Provider does not allow, if any. */
export function refusedNamespace(provider: ReadonlyDeep<Provider>, namespaces: readonly string[]): string | undefined {
  const protect = protectedNamespaces(provider, operatorNamespaces());
  return namespaces.find((ns) => !allowsNamespace(provider, ns, protect));
}

export function providerOwner(provider: ReadonlyDeep<Provider>): Owner {
  return {
    resource: 'providers.kubernetes.crossplane.io',
    namespace: provider.metadata.namespace ?? '',
    name: provider.metadata.name,
    uid: provider.metadata.uid ?? '',
  };
}
