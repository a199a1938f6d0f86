// What lives in a namespace, by every namespaced type the API server serves (discovery), not by a
// fixed list: a namespace is deleted with everything in it, so "empty" must mean empty of every
// type, including other teams' custom resources. Lists ask for metadata only.
import type { KubeClient } from './client.ts';
import { isNotFound } from './errors.ts';
import { resourcePath, type ResourceType } from './resources.ts';

interface APIResource {
  name: string;
  kind: string;
  namespaced: boolean;
  verbs: string[];
}

interface Discovered {
  types: ResourceType[];
  /** "group/Kind" of every namespaced kind served (the core group is ""): an owner of such a kind is listed itself. */
  namespacedKinds: Set<string>;
  /** Group versions whose discovery failed: their types could not be checked. */
  failed: string[];
}

export interface NamespaceContents {
  /** Objects found, as "Kind name" (at most a few per type). */
  found: string[];
  /** Types that could not be listed (forbidden, or their API is unavailable). */
  unchecked: string[];
}

const PARTIAL_METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
const AGGREGATED = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json';

// What a namespace holds by itself, and records rather than residents: none of these keeps it alive.
const BY_ITSELF: Record<string, Set<string> | 'all'> = {
  ConfigMap: new Set(['kube-root-ca.crt']),
  ServiceAccount: new Set(['default']),
  Event: 'all',
  // Mirrors of Services (which are listed themselves), kept by controllers.
  Endpoints: 'all',
};

const kindKey = (apiVersion: string, kind: string): string => `${apiVersion.includes('/') ? apiVersion.split('/')[0] : ''}/${kind}`;

type AggregatedList = {
  kind?: string;
  items?: {
    metadata: { name?: string };
    versions?: {
      version: string;
      freshness?: string;
      resources?: { resource: string; responseKind?: { kind: string }; scope: string; verbs?: string[] }[];
    }[];
  }[];
};

/**
 * Every namespaced type served now. Asked afresh at each check, never cached: a CRD installed a
 * minute ago has objects too, and a namespace is deleted with them. Aggregated discovery answers
 * in two requests; a server without it is asked group by group.
 */
async function discover(client: KubeClient, signal?: AbortSignal): Promise<Discovered> {
  const aggregated = await Promise.all(
    ['/api', '/apis'].map((path) => client.request<AggregatedList>('GET', path, { accept: AGGREGATED, signal }).catch(() => undefined)),
  );
  if (aggregated.every((list) => list?.kind === 'APIGroupDiscoveryList')) return fromAggregated(aggregated as AggregatedList[]);
  const groups = await client.request<{ groups: { preferredVersion: { groupVersion: string }; versions?: { groupVersion: string }[] }[] }>(
    'GET',
    '/apis',
    { signal },
  );
  // Every version, the preferred one first: a kind is listed from the first version that serves it.
  const versions = [
    'v1',
    ...groups.groups.flatMap((g) => [
      g.preferredVersion.groupVersion,
      ...(g.versions ?? []).map((v) => v.groupVersion).filter((gv) => gv !== g.preferredVersion.groupVersion),
    ]),
  ];
  const failed = versions.slice(MAX_GROUP_VERSIONS).map((gv) => String(gv).slice(0, 128));
  const lists = await mapLimited(versions.slice(0, MAX_GROUP_VERSIONS), CONCURRENCY, async (gv) => {
    try {
      const list = await client.request<{ resources: APIResource[] }>('GET', gv === 'v1' ? '/api/v1' : `/apis/${gv}`, { signal });
      return list.resources.map((r) => ({ ...r, apiVersion: gv }));
    } catch {
      failed.push(gv);
      return [];
    }
  });
  const firsts = new Set<string>();
  const namespaced = lists
    .flat()
    .filter((r) => r.namespaced && !r.name.includes('/'))
    .filter((r) => !firsts.has(kindKey(r.apiVersion, r.kind)) && Boolean(firsts.add(kindKey(r.apiVersion, r.kind))));
  return {
    types: namespaced
      .filter((r) => r.verbs.includes('list'))
      .map((r) => ({ apiVersion: r.apiVersion, kind: r.kind, plural: r.name, namespaced: true })),
    namespacedKinds: new Set(namespaced.map((r) => kindKey(r.apiVersion, r.kind))),
    failed,
  };
}

/**
 * Bounds on what a target's discovery and lists may ask of us: a real cluster serves well under a
 * hundred group versions and a few hundred types; a hostile one could list tens of thousands, or
 * answer every page with another continue token. What lies past a bound is reported unchecked, which
 * keeps a namespace, never deleted on a guess.
 */
const MAX_GROUP_VERSIONS = 500;
const MAX_TYPES = 2_000;
const MAX_PAGES = 50;
/** Requests of one check in flight at once. */
const CONCURRENCY = 8;

/** `fn` over `items`, at most `limit` at a time; results in order. */
async function mapLimited<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/**
 * Every kind of each group, from its preferred (first) version, else from the first other version
 * that serves it (a group's versions may hold different kinds: Gateway API's TCPRoute is only in
 * v1alpha2). A version whose aggregated API is unavailable (Stale) could not be checked.
 */
function fromAggregated(lists: AggregatedList[]): Discovered {
  const types: ResourceType[] = [];
  const namespacedKinds = new Set<string>();
  const failed: string[] = [];
  for (const group of lists.flatMap((l) => l.items ?? [])) {
    const seen = new Set<string>();
    for (const version of group.versions ?? []) {
      const apiVersion = group.metadata.name ? `${group.metadata.name}/${version.version}` : version.version;
      if (version.freshness === 'Stale') {
        failed.push(apiVersion);
        continue;
      }
      for (const r of version.resources ?? []) {
        if (r.scope !== 'Namespaced' || !r.responseKind || seen.has(r.responseKind.kind)) continue;
        seen.add(r.responseKind.kind);
        namespacedKinds.add(kindKey(apiVersion, r.responseKind.kind));
        if (r.verbs?.includes('list')) types.push({ apiVersion, kind: r.responseKind.kind, plural: r.resource, namespaced: true });
      }
    }
  }
  return { types, namespacedKinds, failed };
}

/** Everything in `namespace` that is not terminating, not the namespace's own defaults, and not controlled by an owner of a namespaced kind. */
export async function namespaceContents(client: KubeClient, namespace: string, signal?: AbortSignal): Promise<NamespaceContents> {
  const { types: all, namespacedKinds, failed } = await discover(client, signal);
  const found: string[] = [];
  const unchecked = failed.map((gv) => `${gv} (discovery failed)`);
  if (all.length > MAX_TYPES) unchecked.push(`${all.length - MAX_TYPES} more types than the ${MAX_TYPES} listed`);
  const types = all.slice(0, MAX_TYPES);
  const seenKinds = new Set<string>();
  await mapLimited(types, CONCURRENCY, async (type) => {
    const byItself = BY_ITSELF[type.kind];
    if (byItself === 'all') return;
    type Owner = { apiVersion: string; kind: string; controller?: boolean };
    type Item = { metadata: { name: string; deletionTimestamp?: string; ownerReferences?: Owner[] } };
    // Page by page until one object that keeps the namespace is found: a first page of objects being
    // deleted, or made by controllers, says nothing of the next.
    for (let next: string | undefined, page = 0; page === 0 || next; page++) {
      if (page === MAX_PAGES) {
        unchecked.push(`${type.plural}.${type.apiVersion} (more than ${MAX_PAGES} pages)`);
        return;
      }
      let list: { kind?: string; items?: Item[] | null; metadata?: { continue?: string } };
      try {
        list = await client.request('GET', resourcePath(type, namespace), {
          query: { limit: '20', ...(next ? { continue: next } : {}) },
          accept: PARTIAL_METADATA_LIST,
          signal,
        });
      } catch {
        list = {};
      }
      // An empty metadata list has "items: null"; anything that is not a list could not be checked.
      if (!list.kind?.endsWith('List')) {
        unchecked.push(`${type.plural}.${type.apiVersion}`);
        return;
      }
      let kept = false;
      for (const item of list.items ?? []) {
        const meta = item.metadata;
        if (meta.deletionTimestamp || byItself?.has(meta.name)) continue;
        // Made by a controller for an owner of a namespaced kind (a Pod of a ReplicaSet...): the owner
        // is listed itself, or gone, and then the garbage collector takes this. An owner of a kind
        // that is cluster-scoped, or not served, is not listed here: what it made keeps the namespace.
        if (meta.ownerReferences?.some((r) => r.controller && namespacedKinds.has(kindKey(r.apiVersion, r.kind)))) continue;
        const entry = `${type.kind} ${meta.name}`;
        if (!seenKinds.has(entry)) found.push(entry);
        seenKinds.add(entry);
        kept = true;
      }
      if (kept) return;
      next = list.metadata?.continue || undefined;
    }
  });
  return { found: found.sort(), unchecked: unchecked.sort() };
}

type LivePage = { items?: { metadata: { deletionTimestamp?: string } }[] | null; metadata?: { continue?: string } };

/** Whether any live object of `type` is in `namespace` (small metadata-only lists). */
export async function anyLiveIn(client: KubeClient, type: ResourceType, namespace: string, signal?: AbortSignal): Promise<boolean> {
  // Page by page: a first page of objects being deleted says nothing of the next. Past MAX_PAGES of
  // them, something may live there still: said so, which keeps what waits on the answer.
  for (let next: string | undefined, page = 0; page === 0 || next; page++) {
    if (page === MAX_PAGES) return true;
    const list = await client
      .request<LivePage>('GET', resourcePath(type, namespace), {
        query: { limit: '10', ...(next ? { continue: next } : {}) },
        accept: PARTIAL_METADATA_LIST,
        signal,
      })
      // Not served (its operator never installed, or its CRD gone): none lives anywhere.
      .catch((err: unknown): LivePage => {
        if (isNotFound(err)) return { items: [] };
        throw err;
      });
    if ((list.items ?? []).some((i) => !i.metadata.deletionTimestamp)) return true;
    next = list.metadata?.continue || undefined;
  }
  return false;
}

/** "PersistentVolumeClaim data-0, Secret x (+3 more)", for messages. */
export function describeContents(contents: NamespaceContents): string {
  const parts: string[] = [];
  if (contents.found.length) {
    const shown = contents.found.slice(0, 3).join(', ');
    parts.push(`it still holds ${shown}${contents.found.length > 3 ? ` (+${contents.found.length - 3} more)` : ''}`);
  }
  if (contents.unchecked.length) {
    parts.push(
      `${contents.unchecked.length} type(s) could not be listed (${contents.unchecked.slice(0, 3).join(', ')}${contents.unchecked.length > 3 ? ', ...' : ''})`,
    );
  }
  return parts.join('; ');
}
