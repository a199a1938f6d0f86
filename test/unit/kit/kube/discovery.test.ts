// What keeps a namespace: namespaceContents and anyLiveIn read every page of a list until they find
// an object that keeps it. Against a client that serves pages of 20 (or 10) as the API server does.
import { describe, expect, it } from '@jest/globals';
import type { KubeClient } from '../../../../src/kit/kube/client.ts';
import { anyLiveIn, namespaceContents } from '../../../../src/kit/kube/discovery.ts';
import type { ResourceType } from '../../../../src/kit/kube/resources.ts';

const Pods: ResourceType = { apiVersion: 'v1', kind: 'Pod', plural: 'pods', namespaced: true };
type Meta = { name: string; deletionTimestamp?: string; ownerReferences?: { controller: boolean }[] };

/** Discovery that serves pods only, and lists of `items` in pages of the limit asked, with a continue token. */
function serving(items: Meta[]): KubeClient {
  return {
    request: async (_method: string, path: string, opts: { query?: Record<string, string> } = {}) => {
      if (path === '/apis') return { groups: [] };
      if (path === '/api/v1') return { resources: [{ name: 'pods', kind: 'Pod', namespaced: true, verbs: ['list'] }] };
      const limit = Number(opts.query?.limit ?? items.length);
      const from = Number(opts.query?.continue ?? 0);
      const next = from + limit < items.length ? String(from + limit) : undefined;
      return {
        kind: 'PartialObjectMetadataList',
        items: items.slice(from, from + limit).map((metadata) => ({ metadata })),
        metadata: { continue: next },
      };
    },
  } as unknown as KubeClient;
}
const terminating = (n: number): Meta[] =>
  Array.from({ length: n }, (_, i) => ({ name: `gone-${i}`, deletionTimestamp: '2026-11-29T00:00:00Z' }));
const controlled = (n: number): Meta[] =>
  Array.from({ length: n }, (_, i) => ({ name: `made-${i}`, ownerReferences: [{ controller: true }] }));

describe('what keeps a namespace', () => {
  it('anyLiveIn finds a live object behind a first page of objects being deleted', async () => {
    expect(await anyLiveIn(serving([...terminating(24), { name: 'live' }]), Pods, 'ns')).toBe(true);
    expect(await anyLiveIn(serving(terminating(24)), Pods, 'ns')).toBe(false);
  });

  it('namespaceContents finds a bare object behind pages of objects being deleted or made by controllers', async () => {
    expect((await namespaceContents(serving([...controlled(25), ...terminating(10), { name: 'bare' }]), 'ns')).found).toEqual(['Pod bare']);
    expect((await namespaceContents(serving([...controlled(25), ...terminating(10)]), 'ns')).found).toEqual([]);
  });
});
