// Where a Gateway exposure leads, from what its controllers wrote: an endpoint only on the listener
// the route is pinned to, or on the Gateway's one HTTP or HTTPS listener. What a multi-cluster
// export waits for, in words of bounded length.
import { describe, expect, it } from '@jest/globals';
import type { ResourceType } from '../../../../src/kit/kube/resources.ts';
import { exposureState, type S3Service } from '../../../../src/runtime/native/exposure.ts';
import type { TargetObject } from '../../../../src/runtime/native/kind.ts';

const svc: S3Service = { store: 'orders', name: 'orders-s3', namespace: 'stores', port: 8333, selector: { app: 'orders' } };
const listeners = [
  { name: 'web', port: 80, protocol: 'HTTP', allowedRoutes: { namespaces: { from: 'All' } } },
  { name: 's3', port: 443, protocol: 'HTTPS', hostname: '*.s3.example.com' },
];
const gateway = { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'Gateway', metadata: { name: 'edge', namespace: 'gw' } };
const read = (ls: object[]) => ({
  get: async (type: ResourceType) =>
    type.kind === 'Gateway' ? { ...gateway, spec: { listeners: ls }, status: { addresses: [{ value: '192.0.2.1' }] } } : undefined,
});
/** The route provider-rook made, Accepted by the Gateway as it is now (its generation). */
const routeWith = (generation: number, acceptedAt: number, hostnames = ['orders.s3.example.com']) =>
  ({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'orders-s3', namespace: 'stores', generation },
    spec: { hostnames },
    status: {
      parents: [
        {
          parentRef: { name: 'edge', namespace: 'gw' },
          conditions: [{ type: 'Accepted', status: 'True', observedGeneration: acceptedAt }],
        },
      ],
    },
  }) as TargetObject;
const route = routeWith(1, 1);
const state = (gatewayRef: { name: string; namespace: string; sectionName?: string }, ls: object[] = listeners, made = route) =>
  exposureState({ gateway: { gatewayRef, hostname: '*.s3.example.com' } }, svc, made, read(ls) as never, new AbortController().signal);

describe('a Gateway exposure', () => {
  it('publishes nothing while the route names no listener and the Gateway has several: which one apps should call is a guess', async () => {
    const s = await state({ name: 'edge', namespace: 'gw' });
    expect(s?.endpoint).toBeUndefined();
    expect(s?.waiting).toMatch(
      /has 2 HTTP and HTTPS listeners \(web, s3\): name the stores' one in this store's spec\.exposure\.gateway\.gatewayRef\.sectionName \(and in its class's/,
    );
  });

  it('publishes the listener the route is pinned to', async () => {
    expect(await state({ name: 'edge', namespace: 'gw', sectionName: 's3' })).toEqual({
      via: 'Gateway',
      endpoint: 'https://orders.s3.example.com',
    });
  });

  it("publishes a Gateway's one HTTP or HTTPS listener, with its port", async () => {
    expect(await state({ name: 'edge', namespace: 'gw' }, [{ name: 'web', port: 8080, protocol: 'HTTP', allowedRoutes: {} }])).toEqual({
      via: 'Gateway',
      endpoint: 'http://orders.s3.example.com:8080',
    });
  });
});

describe('a Gateway route changed since it was Accepted', () => {
  const pinned = { name: 'edge', namespace: 'gw', sectionName: 's3' };
  it('waits for the Gateway to judge it again: its acceptance was of an earlier generation', async () => {
    expect(await state(pinned, listeners, routeWith(2, 1))).toEqual({
      via: 'Gateway',
      waiting: 'HTTPRoute stores/orders-s3 on Gateway gw/edge is not Accepted yet',
    });
  });

  it('waits while the route does not name the host name it is to be published under (its repair still to come)', async () => {
    expect((await state(pinned, listeners, routeWith(1, 1, ['old.s3.example.com'])))?.waiting).toBe(
      'HTTPRoute stores/orders-s3 on Gateway gw/edge does not route orders.s3.example.com yet',
    );
  });
});

describe('a multi-cluster exposure', () => {
  it("waits on a refused export, saying why in at most 128 characters of the target's words", async () => {
    const exported = (reason: string) =>
      ({
        apiVersion: 'multicluster.x-k8s.io/v1alpha1',
        kind: 'ServiceExport',
        metadata: { name: 'orders-s3', namespace: 'stores' },
        status: { conditions: [{ type: 'Valid', status: 'False', reason }] },
      }) as TargetObject;
    const waiting = async (reason: string) =>
      (await exposureState({ multiCluster: {} }, svc, exported(reason), read([]) as never, new AbortController().signal))?.waiting;
    expect(await waiting('NoService')).toBe('ServiceExport stores/orders-s3 is not exported: NoService');
    expect(await waiting('X'.repeat(100_000))).toBe(`ServiceExport stores/orders-s3 is not exported: ${'X'.repeat(128)}`);
  });
});
