// What the claim controllers need to know about claims, classes and their references, whatever the
// concrete kinds: a claim names a portable class in its own namespace; the portable class names a
// provider-specific ("non-portable") class anywhere; a managed resource is made from the latter.
import { keyOf } from '../../kit/controller/result.ts';
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import { createHash } from 'node:crypto';
import type { Condition } from '../../kit/conditions.ts';
import type { KubeObject, ObjectMeta } from '../../kit/meta.ts';
import { ReasonedError } from '../../kit/conditions.ts';
import type { KubeObjectLike } from '../../kit/kube/client.ts';
import type { ObjectKey } from '../../kit/kube/object-key.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import { Reasons } from '../reasons.ts';
import { bothSelectors, describeSelector, matchesSelector, type LabelSelector } from '../../kit/kube/selector.ts';
import type { Cache } from '../../kit/controller/informer.ts';

/** The claim controllers' finalizer: a claim goes once what it bound is released. */
export const FINALIZER_CLAIM = 'finalizer.resourceclaim.crossplane.io';

export interface ObjectReference {
  apiVersion?: string;
  kind?: string;
  name: string;
  namespace?: string;
  uid?: string;
}

export interface Claim extends KubeObjectLike {
  metadata: ObjectMeta & { name: string };
  spec?: {
    classRef?: { name: string };
    resourceRef?: ObjectReference;
    writeConnectionSecretToRef?: { name: string };
    providerSelector?: LabelSelector;
  };
  status?: {
    conditions?: Condition[];
    bindingPhase?: 'Unbound' | 'Bound' | 'Released';
    providerRef?: { name: string };
    protected?: boolean;
    /** Its keys' rotation, mirrored from its resource. */
    credentials?: Record<string, unknown>;
  };
}

export interface PortableClass extends KubeObjectLike {
  classRef?: { apiVersion: string; kind: string; name: string; namespace: string };
}

/** A namespace's default portable class, as a policy object names it. */
export interface DefaultClassPolicy extends KubeObjectLike {
  spec?: { defaultClassRef?: { name: string } };
}

export function referenceTo(obj: ReadonlyDeep<KubeObjectLike & { metadata: { uid?: string } }>): ObjectReference {
  return { apiVersion: obj.apiVersion, kind: obj.kind, name: obj.metadata.name, namespace: obj.metadata.namespace, uid: obj.metadata.uid };
}

/** The claim a managed resource names (its spec.claimRef). */
export function claimRefOf(mr: { readonly spec: Readonly<Record<string, unknown>> }): ObjectReference | undefined {
  return mr.spec.claimRef as ObjectReference | undefined;
}

/** A reference names this claim (by kind, namespace and name; by uid too when it records one). */
export function refersTo(ref: ReadonlyDeep<ObjectReference> | undefined, claim: ReadonlyDeep<Claim>): boolean {
  return (
    ref !== undefined &&
    ref.kind === claim.kind &&
    ref.name === claim.metadata.name &&
    ref.namespace === claim.metadata.namespace &&
    (!ref.uid || ref.uid === claim.metadata.uid)
  );
}

/**
 * A managed resource the claim holds, to release with it: one whose claimRef names it with its uid,
 * or a reservation (a claimRef without uid, written before the claim existed) only when it is the
 * very resource the claim's resourceRef names. A reservation the claim never bound is not its to
 * release, nor, under reclaim policy Delete, to delete; nor is one another object controls (binding
 * refuses it, whatever its claimRef says).
 */
export function heldBy(mr: ReadonlyDeep<KubeObject & { spec: Record<string, unknown> }>, claim: ReadonlyDeep<Claim>): boolean {
  const ref = claimRefOf(mr);
  if (!refersTo(ref, claim) || mr.metadata.ownerReferences?.some((r) => r.controller)) return false;
  if (ref!.uid) return true;
  const bound = claim.spec?.resourceRef;
  return bound !== undefined && bound.name === mr.metadata.name && bound.namespace === mr.metadata.namespace && bound.kind === mr.kind;
}

// The alphabet Kubernetes uses for generateName suffixes: no vowels, no look-alikes.
const SUFFIX_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/**
 * The managed resource's name for a claim: "<claim namespace>-<claim name>-<5 characters>", shaped
 * like a generateName result but derived from the claim's uid. A retry after a crash, or a second
 * replica, therefore names the same object and gets AlreadyExists instead of a duplicate. It stays
 * within 52 characters so that names derived from it in the target (StatefulSet pods) stay valid.
 */
export function managedNameFor(claim: Claim): string {
  const digest = createHash('sha256')
    .update(claim.metadata.uid ?? keyOf(claim.metadata))
    .digest();
  const suffix = Array.from(digest.subarray(0, 5), (b) => SUFFIX_ALPHABET[b % SUFFIX_ALPHABET.length]).join('');
  const prefix = `${claim.metadata.namespace}-${claim.metadata.name}`
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .slice(0, 46)
    .replace(/-+$/, '');
  return `${prefix}-${suffix}`;
}

/** Refuses a claim from a namespace the class does not list in spec.allowedNamespaces (when it has the list). */
export function refuseUnlessAllowed(cls: KubeObjectLike & { spec: { allowedNamespaces?: string[] } }, claim: Claim): void {
  const allowed = cls.spec.allowedNamespaces;
  const ns = claim.metadata.namespace!;
  if (!allowed || allowed.includes(ns)) return;
  throw new ReasonedError(
    Reasons.NamespaceNotAllowed,
    `${cls.kind ?? 'class'} ${cls.metadata.namespace}/${cls.metadata.name} does not allow claims from namespace ${ns} (allowed: ${allowed.join(', ') || 'none'})`,
  );
}

/** A label value of at most 63 characters: a longer one keeps its start and ends in a hash of the whole. */
export function labelValue(value: string): string {
  if (value.length <= 63) return value;
  const hash = createHash('sha256').update(value).digest('hex').slice(0, 10);
  return `${value.slice(0, 52).replace(/[-_.]+$/, '')}-${hash}`;
}

/** The labels of a managed resource made for a claim (crossplane's); names of up to 253 characters fit. */
export function claimLabels(claim: Claim): Record<string, string> {
  return { 'crossplane.io/claim-namespace': claim.metadata.namespace!, 'crossplane.io/claim-name': labelValue(claim.metadata.name) };
}

/** The condition reasons of a claim or resource not (yet) placed on a Provider. */
export const NOT_SCHEDULED = new Set<string>([Reasons.NoMatchingProvider, Reasons.NoUsableProvider, Reasons.CapacityExhausted]);

export interface PlacingClass extends KubeObjectLike {
  spec: { providerRef?: { name: string; namespace?: string }; providerSelector?: LabelSelector };
}

/**
 * Where a claim's managed resource goes: the class's one Provider, or the Providers both the class's
 * and the claim's selectors match, for the scheduler to choose from. A claim's selector only
 * narrows: on a class with one Provider, that Provider must match it (looked up in `providers`).
 */
export function placementFor(
  cls: PlacingClass,
  claim: Claim,
  providers: Pick<Cache<{ metadata: { labels?: Record<string, string> } }>, 'get'>,
): { providerRef: { name: string; namespace?: string } } | { providerSelector: LabelSelector } {
  const wanted = claim.spec?.providerSelector;
  const { providerRef, providerSelector } = cls.spec;
  if (providerSelector) return { providerSelector: bothSelectors(providerSelector, wanted) };
  if (!providerRef)
    throw new ReasonedError(
      Reasons.ClassHasNoProvider,
      `${cls.kind ?? 'class'} ${cls.metadata.namespace}/${cls.metadata.name} names neither providerRef nor providerSelector`,
    );
  refuseUnwanted(cls, providerRef.name, claim, providers);
  return { providerRef: { ...providerRef } };
}

/**
 * Refuses a claim whose providerSelector the Provider its class places it on (named by the class,
 * or by what the class shares: a store's) does not match.
 */
export function refuseUnwanted(
  cls: Pick<PlacingClass, 'kind' | 'metadata'>,
  provider: string,
  claim: Claim,
  providers: Pick<Cache<{ metadata: { labels?: Record<string, string> } }>, 'get'>,
): void {
  const wanted = claim.spec?.providerSelector;
  if (!wanted) return;
  const found = providers.get({ namespace: cls.metadata.namespace, name: provider });
  if (found && matchesSelector(wanted, found.metadata.labels)) return;
  throw new ReasonedError(
    Reasons.NoMatchingProvider,
    `${cls.kind ?? 'class'} ${cls.metadata.namespace}/${cls.metadata.name} places every claim on Provider ${provider}, ` +
      `which ${found ? 'does not match' : 'does not exist, so it cannot match'} this claim's providerSelector (${describeSelector(wanted)})`,
  );
}

/** Reads of the control cluster's caches that a class's configure may make (the kinds its backend names in lookups). */
export interface Lookup {
  get<T>(type: ResourceType, key: ObjectKey): T | undefined;
}
