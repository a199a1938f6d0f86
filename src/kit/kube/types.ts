// What talking to an API server is in terms of: plain JSON objects, lists, and the Client interface
// controllers depend on (KubeClient implements it; a test may hand in a double).
import type { ObjectKey } from './object-key.ts';
import type { ResourceType } from './resources.ts';

export interface KubeObjectLike {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; uid?: string };
}

export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
}

/** Server-side filters for list and watch. */
export interface Selection {
  labelSelector?: string;
  fieldSelector?: string;
}

/** What a DELETE did: removed it, left it to its finalizers, or found nothing. */
export type Deletion = 'deleted' | 'pending' | 'absent';

/** Preconditions and policy of a DELETE. */
export interface DeleteOptions {
  uid?: string;
  resourceVersion?: string;
  propagationPolicy?: string;
  signal?: AbortSignal;
}

/** The verbs controllers use on objects of one API server. */
export interface Client {
  get<T extends KubeObjectLike>(type: ResourceType, key: ObjectKey, signal?: AbortSignal): Promise<T | undefined>;
  list<T extends KubeObjectLike>(
    type: ResourceType,
    opts?: Selection & { namespace?: string; signal?: AbortSignal },
  ): Promise<ListResult<T>>;
  create<T extends KubeObjectLike>(type: ResourceType, obj: T, signal?: AbortSignal): Promise<T>;
  update<T extends KubeObjectLike>(type: ResourceType, obj: T, signal?: AbortSignal): Promise<T>;
  updateStatus<T extends KubeObjectLike>(type: ResourceType, obj: T, signal?: AbortSignal): Promise<T>;
  apply<T extends KubeObjectLike>(type: ResourceType, obj: T, signal?: AbortSignal, opts?: { dryRun?: boolean }): Promise<T>;
  mergePatch<T extends KubeObjectLike>(type: ResourceType, key: ObjectKey, patch: unknown, signal?: AbortSignal): Promise<T>;
  /** RFC 6902 operations, applied all or none: a failing `test` operation fails the whole patch (422). */
  jsonPatch<T extends KubeObjectLike>(type: ResourceType, key: ObjectKey, operations: unknown[], signal?: AbortSignal): Promise<T>;
  delete(type: ResourceType, key: ObjectKey, opts?: DeleteOptions): Promise<Deletion>;
}
