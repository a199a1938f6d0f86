// The scheduler's pure parts: label selectors, the choice among Providers, and where a claim's
// class puts its resource. Vectors, each one a rule of docs/platform/providers.md's "Placement".
import { describe, expect, it } from '@jest/globals';
import { placementFor, type Claim, type PlacingClass } from '../../../../src/runtime/claims/claim.ts';
import { ReasonedError } from '../../../../src/kit/conditions.ts';
import { chooseProvider, type Candidate } from '../../../../src/runtime/scheduling/choose.ts';
import { needsScheduler, Scheduler } from '../../../../src/runtime/scheduling/scheduler.ts';
import type { ManagedResource } from '../../../../src/runtime/managed/types.ts';
import type { KubeClient } from '../../../../src/kit/kube/client.ts';
import type { ProviderObject } from '../../../../src/runtime/providers/provider.ts';
import { Reservations } from '../../../../src/runtime/scheduling/reservations.ts';
import { ProviderUsage } from '../../../../src/runtime/scheduling/usage.ts';
import { bothSelectors, describeSelector, matchesSelector, type LabelSelector } from '../../../../src/kit/kube/selector.ts';
import { mapCache } from '../../../kit/map-cache.ts';
import { cond } from '../../../kit/conditions.ts';

const eu = { region: 'eu' };
const c = (name: string, labels: Record<string, string>, more: Partial<Candidate> = {}): Candidate => ({ name, labels, used: 0, ...more });

describe('label selectors', () => {
  const vectors: [LabelSelector, Record<string, string>, boolean][] = [
    [{}, {}, true],
    [{}, eu, true],
    [{ matchLabels: eu }, eu, true],
    [{ matchLabels: eu }, { region: 'us' }, false],
    [{ matchLabels: eu }, {}, false],
    [{ matchExpressions: [{ key: 'region', operator: 'In', values: ['eu', 'us'] }] }, { region: 'us' }, true],
    [{ matchExpressions: [{ key: 'region', operator: 'In', values: ['eu'] }] }, {}, false],
    [{ matchExpressions: [{ key: 'region', operator: 'NotIn', values: ['eu'] }] }, {}, true],
    [{ matchExpressions: [{ key: 'region', operator: 'NotIn', values: ['eu'] }] }, eu, false],
    [{ matchExpressions: [{ key: 'gpu', operator: 'Exists' }] }, { gpu: '' }, true],
    [{ matchExpressions: [{ key: 'gpu', operator: 'Exists' }] }, eu, false],
    [{ matchExpressions: [{ key: 'legacy', operator: 'DoesNotExist' }] }, eu, true],
    [{ matchExpressions: [{ key: 'legacy', operator: 'DoesNotExist' }] }, { legacy: 'true' }, false],
    [{ matchLabels: eu, matchExpressions: [{ key: 'tier', operator: 'In', values: ['gold'] }] }, { region: 'eu', tier: 'silver' }, false],
  ];
  it.each(vectors)('%j matches %j: %s', (selector, labels, expected) => {
    expect(matchesSelector(selector, labels)).toBe(expected);
  });

  it('ANDs two selectors: a key both pin to different values matches nothing', () => {
    const both = bothSelectors({ matchLabels: eu }, { matchLabels: { region: 'us' } });
    expect(matchesSelector(both, eu)).toBe(false);
    expect(matchesSelector(both, { region: 'us' })).toBe(false);
    const narrowed = bothSelectors({ matchLabels: eu }, { matchLabels: { zone: 'a' } });
    expect(narrowed).toEqual({ matchLabels: { region: 'eu', zone: 'a' } });
    expect(bothSelectors({ matchLabels: eu }, undefined)).toEqual({ matchLabels: eu });
  });

  it('reads like kubectl -l', () => {
    expect(
      describeSelector({
        matchLabels: eu,
        matchExpressions: [
          { key: 't', operator: 'In', values: ['a', 'b'] },
          { key: 'x', operator: 'DoesNotExist' },
        ],
      }),
    ).toBe('region=eu, t in (a,b), !x');
    expect(describeSelector({})).toBe('everything');
  });
});

describe('chooseProvider', () => {
  it('chooses the matching Provider with the fewest resources', () => {
    const d = chooseProvider([c('a', eu, { used: 3 }), c('b', eu, { used: 1 }), c('c', { region: 'us' }, { used: 0 })], {
      matchLabels: eu,
    });
    expect(d.provider).toBe('b');
    expect(d.counts).toEqual({ providers: 3, matching: 2, usable: 2, withRoom: 2 });
  });

  it('breaks ties by name, whatever the order it is given', () => {
    const list = [c('b', eu), c('c', eu), c('a', eu)];
    expect(chooseProvider(list, {}).provider).toBe('a');
    expect(chooseProvider([...list].reverse(), {}).provider).toBe('a');
  });

  it('spreads: choosing and counting in turn fills every Provider evenly', () => {
    const list = [c('x', eu), c('y', eu), c('z', eu)];
    for (let i = 0; i < 30; i++) {
      const chosen = chooseProvider(list, { matchLabels: eu }).provider!;
      list.find((p) => p.name === chosen)!.used++;
    }
    expect(list.map((p) => p.used)).toEqual([10, 10, 10]);
  });

  it('says NoMatchingProvider, with counts, when no labels match', () => {
    const d = chooseProvider([c('a', { region: 'us' })], { matchLabels: eu });
    expect(d).toMatchObject({ reason: 'NoMatchingProvider', counts: { providers: 1, matching: 0 } });
    expect(d.message).toBe('0 of 1 Provider(s) match region=eu');
  });

  it('skips Providers that cannot be reached or lack the operator; NoUsableProvider when none is left', () => {
    const list = [
      c('down', eu, { unreachable: 'its target cannot be used now (Unreachable)', operator: 'present' }),
      c('bare', eu, { operator: 'missing' }),
      c('installs', eu, { operator: 'installable', used: 5 }),
    ];
    expect(chooseProvider(list, {}, 'rook-minio').provider).toBe('installs');
    const d = chooseProvider(list.slice(0, 2), {}, 'rook-minio');
    expect(d).toMatchObject({ reason: 'NoUsableProvider', counts: { matching: 2, usable: 0 } });
    expect(d.message).toContain('down: its target cannot be used now (Unreachable)');
    expect(d.message).toContain('bare: no rook-minio operator in its target');
  });

  it('skips full Providers; CapacityExhausted when every usable one is full', () => {
    const list = [c('a', eu, { used: 20, maxResources: 20 }), c('b', eu, { used: 30 }), c('c', eu, { used: 2, maxResources: 2 })];
    expect(chooseProvider(list, {}).provider).toBe('b'); // no capacity declared: no limit
    const d = chooseProvider([list[0]!, list[2]!], {});
    expect(d).toMatchObject({ reason: 'CapacityExhausted', counts: { usable: 2, withRoom: 0 } });
    expect(d.message).toContain('a 20/20; c 2/2');
    expect(chooseProvider([c('zero', eu, { maxResources: 0 })], {})).toMatchObject({ reason: 'CapacityExhausted' });
  });

  it('prefers room over fewer resources: a full Provider is never chosen', () => {
    expect(chooseProvider([c('a', eu, { used: 1, maxResources: 1 }), c('b', eu, { used: 7 })], {}).provider).toBe('b');
  });
});

describe('placementFor', () => {
  const claim = (selector?: LabelSelector): Claim => ({
    apiVersion: 'v',
    kind: 'Bucket',
    metadata: { name: 'b', namespace: 'app' },
    spec: { providerSelector: selector },
  });
  const cls = (spec: PlacingClass['spec']): PlacingClass => ({
    kind: 'ObjectStoreClass',
    metadata: { name: 'gold', namespace: 'infra' },
    spec,
  });
  const providers = mapCache(new Map([['infra/eu-1', { metadata: { labels: eu } }]]));

  it('a selector class: both selectors, so a claim narrows but never widens', () => {
    expect(placementFor(cls({ providerSelector: { matchLabels: { tier: 'gold' } } }), claim({ matchLabels: eu }), providers)).toEqual({
      providerSelector: { matchLabels: { tier: 'gold', region: 'eu' } },
    });
    const widened = placementFor(cls({ providerSelector: { matchLabels: eu } }), claim({ matchLabels: { region: 'us' } }), providers);
    expect('providerSelector' in widened && matchesSelector(widened.providerSelector, { region: 'us' })).toBe(false);
  });

  it("a class with one Provider: the claim's selector must match it", () => {
    expect(placementFor(cls({ providerRef: { name: 'eu-1' } }), claim({ matchLabels: eu }), providers)).toEqual({
      providerRef: { name: 'eu-1' },
    });
    expect(placementFor(cls({ providerRef: { name: 'eu-1' } }), claim(), providers)).toEqual({ providerRef: { name: 'eu-1' } });
    const refused = (): unknown =>
      placementFor(cls({ providerRef: { name: 'eu-1' } }), claim({ matchLabels: { region: 'us' } }), providers);
    expect(refused).toThrow(ReasonedError);
    expect(refused).toThrow("places every claim on Provider eu-1, which does not match this claim's providerSelector (region=us)");
  });
});

describe('needsScheduler', () => {
  const mr = (spec: ManagedResource['spec'], scheduled?: 'True' | 'False', deleting = false): ManagedResource => ({
    metadata: { name: 'm', namespace: 'infra', ...(deleting ? { deletionTimestamp: 'now' } : {}) },
    spec,
    status: scheduled ? { conditions: [{ type: 'Scheduled', status: scheduled, reason: 'r', lastTransitionTime: 'x' }] } : {},
  });
  const selector = { matchLabels: eu };
  it.each([
    ['a selector and no Provider yet', mr({ providerSelector: selector }), true],
    ['one that could not be placed yet', mr({ providerSelector: selector }, 'False'), true],
    // The Scheduled=True write lost a race with the managed controller (seen in make demo-placement).
    ['placed, but not yet saying so', mr({ providerSelector: selector, providerRef: { name: 'eu-1' } }), true],
    ['placed and saying so', mr({ providerSelector: selector, providerRef: { name: 'eu-1' } }, 'True'), false],
    ["a class's fixed Provider", mr({ providerRef: { name: 'eu-1' } }), false],
    ['one being deleted', mr({ providerSelector: selector }, undefined, true), false],
  ])('%s: %s', (_what, resource, expected) => {
    expect(needsScheduler(resource)).toBe(expected);
  });
});

describe('Reservations', () => {
  const type = { apiVersion: 'minio.rook.crossplane.io/v1alpha1', kind: 'ObjectStore', plural: 'objectstores', namespaced: true };
  const provider = (name: string, uids: string[]): ProviderObject => ({
    metadata: { name, namespace: 'infra', resourceVersion: '1' },
    spec: { credentialsSecretRef: { name: 'x' }, capacity: { maxResources: 1 } },
    status: { reservations: uids.map((uid) => ({ kind: 'ObjectStore', name: `mr-${uid}`, uid })) },
  });
  const mr = (uid: string, placed?: string): ManagedResource => ({
    metadata: { name: `mr-${uid}`, namespace: 'infra', uid },
    spec: placed ? { providerRef: { name: placed } } : {},
  });

  function world(resources: ManagedResource[], providers: ProviderObject[]) {
    const written: ProviderObject[] = [];
    const client = {
      updateStatus: async (_t: unknown, obj: ProviderObject) => {
        written.push(obj);
        return obj;
      },
      get: async () => undefined,
    } as unknown as KubeClient;
    const cache = mapCache(new Map(resources.map((r) => [`infra/${r.metadata.name}`, r])));
    const reservations = new Reservations({
      client,
      providers: mapCache(new Map(providers.map((p) => [`infra/${p.metadata.name}`, p]))),
      usage: new ProviderUsage(),
      managed: (kind) => (kind === 'ObjectStore' ? { type, cache } : undefined),
    });
    return { reservations, written };
  }

  it('frees a place reserved for a resource that another scheduler placed elsewhere (two replicas raced)', async () => {
    const capB = provider('cap-b', ['m1']);
    const { reservations, written } = world([mr('m1', 'cap-a')], [capB]);
    expect(reservations.used(capB)).toBe(0);
    expect(reservations.mayHoldStale(capB)).toBe(true);
    await reservations.reconcile('infra/cap-b', new AbortController().signal);
    expect(written.map((p) => p.status?.reservations)).toEqual([[]]);
  });

  it('keeps a place whose resource is on it, or on no Provider yet', async () => {
    const capA = provider('cap-a', ['m1', 'm2']);
    const { reservations, written } = world([mr('m1', 'cap-a'), mr('m2')], [capA]);
    expect(reservations.used(capA)).toBe(2);
    expect(reservations.mayHoldStale(capA)).toBe(false);
    await reservations.reconcile('infra/cap-a', new AbortController().signal);
    expect(written).toEqual([]);
  });

  it('drops a place whose resource a live read does not find', async () => {
    const capA = provider('cap-a', ['gone']);
    const { reservations, written } = world([], [capA]);
    await reservations.reconcile('infra/cap-a', new AbortController().signal);
    expect(written.map((p) => p.status?.reservations)).toEqual([[]]);
  });
});

describe('Scheduler', () => {
  const type = { apiVersion: 'minio.rook.crossplane.io/v1alpha1', kind: 'ObjectStore', plural: 'objectstores', namespaced: true };

  it('records an unschedulable verdict once, not at every recheck while it stands', async () => {
    const cache = new Map<string, ManagedResource>([
      [
        'infra/m',
        {
          metadata: { name: 'm', namespace: 'infra', uid: 'u1', generation: 1 },
          spec: { providerSelector: { matchLabels: { region: 'eu' } } },
        },
      ],
    ]);
    const client = {
      // The informer would bring the written status back: so does this fake.
      updateStatus: async (_t: unknown, obj: ManagedResource) => {
        cache.set('infra/m', structuredClone(obj));
        return obj;
      },
    } as unknown as KubeClient;
    const providers = new Map<string, ProviderObject>([
      [
        'infra/us',
        {
          metadata: { name: 'us', namespace: 'infra', labels: { region: 'us' } },
          spec: { credentialsSecretRef: { name: 's' } },
          status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Reachable', lastTransitionTime: 'x' }] },
        },
      ],
    ]);
    const events: string[] = [];
    const recorder = {
      normal: (_o: unknown, reason: string) => void events.push(reason),
      warning: (_o: unknown, reason: string) => void events.push(reason),
    };
    const usage = new ProviderUsage();
    const scheduler = new Scheduler<ManagedResource>({
      type,
      client,
      cache: mapCache(cache),
      providers: mapCache(providers),
      usage,
      reservations: new Reservations({ client, providers: mapCache(providers), usage, managed: () => undefined }),
      recorder,
      recheckMs: 1_000,
    });
    for (let i = 0; i < 3; i++)
      expect(await scheduler.reconcile('infra/m', new AbortController().signal)).toEqual({ kind: 'requeueAfter', ms: 1_000 });
    expect(cond(cache.get('infra/m')!, 'Scheduled')).toMatchObject({
      status: 'False',
      reason: 'NoMatchingProvider',
    });
    expect(events).toEqual(['NoMatchingProvider']);
  });
});
