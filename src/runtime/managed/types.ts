// The contract between the generic managed reconciler and a provider (crossplane-runtime's
// ExternalConnecter / ExternalClient): the provider only connects, observes, creates, updates, deletes,
// and marks what a deletion keeps.
import type { Reason } from '../reasons.ts';
import type { Condition } from '../../kit/conditions.ts';
import type { KubeObjectLike } from '../../kit/kube/client.ts';
import type { ObjectMeta } from '../../kit/meta.ts';
import type { LabelSelector } from '../../kit/kube/selector.ts';

/** Plain-text connection values (endpoint, username, password); written base64 into a Secret. */
export type ConnectionDetails = Record<string, string>;

export interface ManagedResource extends KubeObjectLike {
  metadata: ObjectMeta & { name: string };
  spec: {
    providerRef?: { name: string; namespace?: string };
    /** Until providerRef is set, the Providers the scheduler may choose from. */
    providerSelector?: LabelSelector;
    reclaimPolicy?: 'Delete' | 'Retain' | 'Orphan';
    /** Crossplane's current name for reclaimPolicy (the CRD refuses the two set differently). */
    deletionPolicy?: 'Delete' | 'Orphan';
    writeConnectionSecretToRef?: { name: string };
    [key: string]: unknown;
  };
  status?: {
    conditions?: Condition[];
    bindingPhase?: 'Unbound' | 'Bound' | 'Released';
    [key: string]: unknown;
  };
}

export interface ExternalObservation {
  /** The external resource exists (and is ours, or may be adopted). */
  exists: boolean;
  /** It matches the desired state; false triggers update(). */
  upToDate: boolean;
  /** observe() filled spec fields the user left empty; the reconciler persists the spec. */
  lateInitialized?: boolean;
  connectionDetails?: ConnectionDetails;
  /** What differs, for debug logs. */
  diff?: string;
  /** Annotations the managed resource should carry (e.g. what proves its external resource); the reconciler persists them. */
  annotations?: Record<string, string>;
  /** Look again no later than this (e.g. when a grace period ends), even if the poll interval is longer. */
  recheckAfterMs?: number;
}

export interface ExternalCreation {
  connectionDetails?: ConnectionDetails;
  /** Annotations to record on the managed resource with the create's outcome, in the same write. */
  annotations?: Record<string, string>;
}

export interface ExternalDeletion {
  gone: boolean;
  /** Whether its deletion was asked now (announced then); false when it was already going or gone. Unsaid: asked. */
  requested?: boolean;
  /**
   * Why it waits (what else must go first, or what an operator has yet to undo), until a watch wakes
   * it or, where one may not, recheckAfterMs has passed. Said as Synced=False and once as an Event.
   */
  waiting?: { reason: Reason; message: string; recheckAfterMs?: number };
}

export interface ExternalClient<MR extends ManagedResource> {
  /** Must not change the external resource; may set mr.status (Ready, atProvider). */
  observe(mr: MR, signal: AbortSignal): Promise<ExternalObservation>;
  create(mr: MR, signal: AbortSignal): Promise<ExternalCreation>;
  /** The name a create gives the external resource when the resource names none (its own, unset). */
  externalName?(mr: MR): string;
  /** Repairs drift; annotations (what proves an object it made again) are recorded on the managed resource. */
  update(mr: MR, signal: AbortSignal): Promise<{ connectionDetails?: ConnectionDetails; annotations?: Record<string, string> }>;
  /**
   * Idempotent: succeeds when the resource is already gone. Saying it is gone lets the finalizer go
   * in the same pass; otherwise the next observe must confirm it.
   */
  delete(mr: MR, signal: AbortSignal): Promise<ExternalDeletion | void>;
  /**
   * The resource lets go of what it made without deleting it (reclaim policy Retain or Orphan, or no
   * Delete among its policies): marks that say so where they still say otherwise, so that nothing
   * deletes it later. Idempotent; unset, there is nothing to mark.
   */
  keep?(mr: MR, signal: AbortSignal): Promise<void>;
}

export interface ExternalConnecter<MR extends ManagedResource> {
  connect(mr: MR, signal: AbortSignal): Promise<ExternalClient<MR>>;
}

/**
 * Marks a resource bindable by a claim once it is ready (unless bound or released already). One a
 * claim's class made for that claim (claimRef and classRef both set at its creation) is Bound at
 * once: it was never available to any other claim, and the claim's controller need not write it again.
 */
export function setBindable(mr: ManagedResource): void {
  const phase = mr.status?.bindingPhase;
  if (phase === 'Bound' || phase === 'Released') return;
  mr.status = { ...mr.status, bindingPhase: mr.spec.claimRef && mr.spec.classRef ? 'Bound' : 'Unbound' };
}

/** What happens to the external resource on deletion: deletionPolicy (the current name), else reclaimPolicy, else Delete. */
export function reclaimPolicyOf(spec: ManagedResource['spec']): 'Delete' | 'Retain' | 'Orphan' {
  return spec.deletionPolicy ?? spec.reclaimPolicy ?? 'Delete';
}

/**
 * An update that failed after it made something the managed resource must record (what proves an
 * object made again): the reconciler records `annotations`, then reports `cause`.
 */
export class RecordedError extends Error {
  override readonly cause: unknown;
  readonly annotations: Record<string, string>;
  constructor(cause: unknown, annotations: Record<string, string>) {
    super((cause as Error)?.message ?? String(cause));
    this.cause = cause;
    this.annotations = annotations;
    this.name = 'RecordedError';
  }
}
