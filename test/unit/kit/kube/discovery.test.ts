// What keeps a namespace: namespaceContents and anyLiveIn read every page of a list until they find
// an object that keeps it. Against a client that serves pages of 20 (or 10) as the API server does.
import { describe, expect, it } from '@jest/globals';
import type { KubeClient } from '../../../../src/kit/kube/client.ts';
import { anyLiveIn, namespaceContents } from '../../../../src/kit/kube/discovery.ts';
import type { ResourceType } from '../../../../src/kit/kube/resources.ts';

const Pods: ResourceType = { apiVersion: 'v1', kind: 'Pod', plural: 'pods', namespaced: true };
type Owner = { apiVersion: string; kind: string; controller: boolean };
type Meta = { name: string; deletionTimestamp?: string; ownerReferences?: Owner[] };
/** A served type: its group version, kind, plural and scope. */
type Served = { gv: string; kind: string; plural: string; namespaced: boolean };
const served: Served[] = [
  { gv: 'v1', kind: 'Pod', plural: 'pods', namespaced: true },
  { gv: 'apps/v1', kind: 'ReplicaSet', plural: 'replicasets', namespaced: true },
  { gv: 'example.com/v1', kind: 'ClusterThing', plural: 'clusterthings', namespaced: false },
];

/**
 * An API server that serves `types` (read at each request: a test may add one), by aggregated
 * discovery or (`aggregated: false`) group by group, and lists of `items[plural]` in pages of the
 * limit asked, with a continue token.
 */
function serving(items: Record<string, Meta[]> | Meta[], { types = served, aggregated = true } = {}): KubeClient {
  const byPlural = Array.isArray(items) ? { pods: items } : items;
  const groups = () => [...new Set(types.map((t) => t.gv))];
  const resources = (gv: string) => types.filter((t) => t.gv === gv);
  /** Group name -> its versions, the first listed (the preferred one) first. */
  const byGroup = () => {
    const out = new Map<string, string[]>();
    for (const gv of groups()) {
      const name = gv.includes('/') ? gv.split('/')[0]! : '';
      out.set(name, [...(out.get(name) ?? []), gv]);
    }
    return [...out.entries()];
  };
  return {
    request: async (_method: string, path: string, opts: { query?: Record<string, string>; accept?: string } = {}) => {
      if (path === '/api' || path === '/apis') {
        if (!aggregated || !opts.accept?.includes('APIGroupDiscoveryList'))
          return path === '/apis'
            ? {
                groups: byGroup()
                  .filter(([name]) => name !== '')
                  .map(([, gvs]) => ({
                    preferredVersion: { groupVersion: gvs[0] },
                    versions: gvs.map((groupVersion) => ({ groupVersion })),
                  })),
              }
            : {};
        return {
          kind: 'APIGroupDiscoveryList',
          items: byGroup()
            .filter(([name]) => (path === '/api') === (name === ''))
            .map(([name, gvs]) => ({
              metadata: { name },
              versions: gvs.map((gv) => ({
                version: gv.split('/').pop(),
                resources: resources(gv).map((t) => ({
                  resource: t.plural,
                  responseKind: { kind: t.kind },
                  scope: t.namespaced ? 'Namespaced' : 'Cluster',
                  verbs: ['list'],
                })),
              })),
            })),
        };
      }
      const legacy = path === '/api/v1' ? 'v1' : path.startsWith('/apis/') && path.split('/').length === 4 ? path.slice(6) : undefined;
      if (legacy)
        return { resources: resources(legacy).map((t) => ({ name: t.plural, kind: t.kind, namespaced: t.namespaced, verbs: ['list'] })) };
      const list = byPlural[path.split('/').pop()!] ?? [];
      const limit = Number(opts.query?.limit ?? list.length);
      const from = Number(opts.query?.continue ?? 0);
      const next = from + limit < list.length ? String(from + limit) : undefined;
      return {
        kind: 'PartialObjectMetadataList',
        items: list.slice(from, from + limit).map((metadata) => ({ metadata })),
        metadata: { continue: next },
      };
    },
  } as unknown as KubeClient;
}
const terminating = (n: number): Meta[] =>
  Array.from({ length: n }, (_, i) => ({ name: `gone-${i}`, deletionTimestamp: '2026-11-29T00:00:00Z' }));
const controlled = (n: number, by: Omit<Owner, 'controller'> = { apiVersion: 'apps/v1', kind: 'ReplicaSet' }): Meta[] =>
  Array.from({ length: n }, (_, i) => ({ name: `made-${i}`, ownerReferences: [{ ...by, controller: true }] }));

describe('what keeps a namespace', () => {
  it('anyLiveIn finds a live object behind a first page of objects being deleted', async () => {
    expect(await anyLiveIn(serving([...terminating(24), { name: 'live' }]), Pods, 'ns')).toBe(true);
    expect(await anyLiveIn(serving(terminating(24)), Pods, 'ns')).toBe(false);
  });

  it('namespaceContents finds a bare object behind pages of objects being deleted or made by controllers', async () => {
    expect((await namespaceContents(serving([...controlled(25), ...terminating(10), { name: 'bare' }]), 'ns')).found).toEqual(['Pod bare']);
    expect((await namespaceContents(serving([...controlled(25), ...terminating(10)]), 'ns')).found).toEqual([]);
    expect((await namespaceContents(serving([...controlled(25), ...terminating(10)], { aggregated: false }), 'ns')).found).toEqual([]);
  });

  it('namespaceContents counts what an owner of a cluster-scoped or unserved kind made: that owner is listed nowhere here', async () => {
    const byCluster = controlled(1, { apiVersion: 'example.com/v1', kind: 'ClusterThing' });
    const byUnserved = controlled(1, { apiVersion: 'gone.example.com/v1', kind: 'Thing' }).map((m) => ({ ...m, name: 'orphan' }));
    for (const aggregated of [true, false]) {
      const found = (await namespaceContents(serving([...byCluster, ...byUnserved], { aggregated }), 'ns')).found;
      expect(found).toEqual(['Pod made-0', 'Pod orphan']);
    }
  });

  it("namespaceContents lists a kind a group serves only in a version that is not its preferred one (Gateway API's TCPRoute)", async () => {
    const types = [
      ...served,
      { gv: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', plural: 'httproutes', namespaced: true },
      { gv: 'gateway.networking.k8s.io/v1alpha2', kind: 'TCPRoute', plural: 'tcproutes', namespaced: true },
    ];
    for (const aggregated of [true, false]) {
      const client = serving({ pods: [], tcproutes: [{ name: 'db' }] }, { types, aggregated });
      expect((await namespaceContents(client, 'ns')).found).toEqual(['TCPRoute db']);
    }
  });

  it('namespaceContents asks discovery afresh each time: a type served since the last check is listed', async () => {
    const types = [...served];
    const client = serving({ pods: [], widgets: [{ name: 'w' }] }, { types });
    expect((await namespaceContents(client, 'ns')).found).toEqual([]);
    // A CRD installed a moment later: its objects keep the namespace at the next check.
    types.push({ gv: 'example.com/v1', kind: 'Widget', plural: 'widgets', namespaced: true });
    expect((await namespaceContents(client, 'ns')).found).toEqual(['Widget w']);
  });

  it('against a hostile target: an endless list is read only so far and said unchecked, and requests go a few at a time', async () => {
    // Every page only objects being deleted, and a continue token for ever.
    const endless = serving(terminating(100_000));
    expect(await anyLiveIn(endless, Pods, 'ns')).toBe(true); // what waits on it keeps waiting
    expect((await namespaceContents(endless, 'ns')).unchecked).toEqual([expect.stringMatching(/^pods\.v1 \(more than \d+ pages\)$/)]);
    // Thousands of group versions, group by group: never more than a few requests in flight.
    const many = Array.from({ length: 3_000 }, (_, i) => ({
      gv: `g${i}.example.com/v1`,
      kind: `K${i}`,
      plural: `k${i}s`,
      namespaced: true,
    }));
    const client = serving([], { types: many, aggregated: false });
    let inFlight = 0;
    let most = 0;
    const counting = {
      request: async (...args: Parameters<KubeClient['request']>) => {
        most = Math.max(most, ++inFlight);
        try {
          return await client.request(...args);
        } finally {
          inFlight--;
        }
      },
    } as unknown as KubeClient;
    const contents = await namespaceContents(counting, 'ns');
    expect(most).toBeLessThanOrEqual(10);
    expect(contents.unchecked.length).toBeGreaterThan(0); // past the bound: not checked, so the namespace is kept
  });
});
