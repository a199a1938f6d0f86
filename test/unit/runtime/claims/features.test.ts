// A claim's bucket features (src/runtime/claims/features.ts): its class's defaults fill what it leaves
// unset, the class's limits hold, a backend refuses what it lacks by name, and a bound resource is
// patched only when what it holds differs from what the claim wants.
import { describe, expect, it } from '@jest/globals';
import { ReasonedError } from '../../../../src/kit/conditions.ts';
import { KubeError } from '../../../../src/kit/kube/errors.ts';
import {
  featuresFor,
  followFeatures,
  forwardFeatures,
  placeFeatures,
  quotaBytes,
  type FeatureSupport,
} from '../../../../src/runtime/claims/features.ts';
import type { Claim } from '../../../../src/runtime/claims/claim.ts';
import type { Client } from '../../../../src/kit/kube/client.ts';
import type { ManagedResource } from '../../../../src/runtime/managed/types.ts';

const ALL: FeatureSupport = { supported: ['versioning', 'objectLock', 'quota', 'lifecycle'], path: ['forProvider', 'features'] };
const claim = (features?: object): Claim =>
  ({ metadata: { name: 'c', namespace: 'app' }, spec: { ...(features ? { features } : {}) } }) as Claim;
const cls = (features?: object) => ({
  kind: 'SeaweedBucketClass',
  metadata: { name: 'k', namespace: 'infra' },
  spec: features ? { features } : {},
});
const refusal = (f: () => unknown): ReasonedError => {
  try {
    f();
  } catch (err) {
    return err as ReasonedError;
  }
  throw new Error('not refused');
};

describe('featuresFor', () => {
  it('gives none when neither the claim nor its class asks for any', () => {
    expect(featuresFor(claim(), cls(), ALL)).toBeUndefined();
    expect(featuresFor(claim(), cls(), undefined)).toBeUndefined();
  });

  it("fills what the claim leaves unset from the class's defaults; the claim's own win", () => {
    const got = featuresFor(claim({ versioning: 'Suspended' }), cls({ defaults: { versioning: 'Enabled', quota: { size: '5Gi' } } }), ALL);
    expect(got).toEqual({ versioning: 'Suspended', quota: { size: '5Gi' } });
  });

  it("holds quotas to the class's maxQuota, and gives it to a claim that asks for none", () => {
    expect(featuresFor(claim(), cls({ maxQuota: '10Gi' }), ALL)).toEqual({ quota: { size: '10Gi' } });
    expect(featuresFor(claim({ quota: { size: '10240Mi' } }), cls({ maxQuota: '10Gi' }), ALL)).toEqual({ quota: { size: '10240Mi' } });
    const err = refusal(() => featuresFor(claim({ quota: { size: '11Gi' } }), cls({ maxQuota: '10Gi' }), ALL));
    expect([err.reason, err.message]).toEqual([
      'FeatureNotAllowed',
      expect.stringMatching(/^spec\.features\.quota\.size: 11Gi .*maxQuota 10Gi/),
    ]);
  });

  it('refuses what the class forbids, naming the field and the class', () => {
    const err = refusal(() => featuresFor(claim({ versioning: 'Enabled' }), cls({ forbidden: ['versioning'] }), ALL));
    expect([err.reason, err.message]).toEqual([
      'FeatureNotAllowed',
      'spec.features.versioning: class SeaweedBucketClass infra/k does not allow it',
    ]);
  });

  it('refuses what the backend lacks, naming each field, and says what it has', () => {
    const some: FeatureSupport = { supported: ['quota'], path: ['x'] };
    const err = refusal(() => featuresFor(claim({ versioning: 'Enabled', objectLock: true, quota: { size: '1Gi' } }), cls(), some));
    expect(err.reason).toBe('FeatureNotSupported');
    expect(err.message).toMatch(
      /^spec\.features\.versioning, spec\.features\.objectLock: the backend of SeaweedBucketClass infra\/k does not support versioning, objectLock; it supports quota$/,
    );
    expect(refusal(() => featuresFor(claim({ quota: { size: '1Gi' } }), cls(), undefined)).message).toMatch(/supports no bucket features/);
    // What the class's defaults asked is said to be theirs.
    const byDefault = refusal(() => featuresFor(claim(), cls({ defaults: { versioning: 'Enabled' } }), some));
    expect(byDefault.message).toMatch(/does not support versioning \(versioning from the class's defaults\)/);
  });

  it("refuses what the backend's class limits beyond spec.features (its beyond hook)", () => {
    const limited: FeatureSupport = {
      ...ALL,
      beyond: (_cls, f) => (f.quota ? "spec.features.quota.size: over the class's own limit" : undefined),
    };
    const err = refusal(() => featuresFor(claim({ quota: { size: '1Gi' } }), cls(), limited));
    expect([err.reason, err.message]).toEqual(['FeatureNotAllowed', "spec.features.quota.size: over the class's own limit"]);
    expect(featuresFor(claim({ versioning: 'Enabled' }), cls(), limited)).toEqual({ versioning: 'Enabled' });
  });

  it('reads sizes in binary units', () => {
    expect([quotaBytes('1Mi'), quotaBytes('2Gi'), quotaBytes('3Ti')]).toEqual([2 ** 20, 2 * 2 ** 30, 3 * 2 ** 40]);
  });
});

describe('placing and forwarding', () => {
  it('puts the features where the backend keeps them', () => {
    const spec: Record<string, unknown> = { forProvider: { bucketName: 'b' } };
    placeFeatures(spec, ALL, { versioning: 'Enabled' });
    expect(spec).toEqual({ forProvider: { bucketName: 'b', features: { versioning: 'Enabled' } } });
  });

  const patches: unknown[] = [];
  const client = { mergePatch: async (...args: unknown[]) => void patches.push(args[2]) } as unknown as Client;
  const mr = (features?: object) =>
    ({ metadata: { name: 'm', namespace: 'infra', uid: 'm-uid' }, spec: { forProvider: { features } } }) as unknown as ManagedResource;
  const type = { apiVersion: 'x/v1', kind: 'X', plural: 'xs', namespaced: true };

  it('patches a resource whose features differ, naming every feature so that one dropped goes too', async () => {
    patches.length = 0;
    await forwardFeatures(
      client,
      type,
      mr({ versioning: 'Enabled', quota: { size: '1Gi' } }),
      { features: { versioning: 'Enabled', quota: { size: '2Gi' } }, support: ALL },
      new AbortController().signal,
    );
    expect(patches).toEqual([
      {
        // The resource checked, and no other made since under its name.
        metadata: { uid: 'm-uid' },
        spec: {
          forProvider: {
            features: { versioning: 'Enabled', objectLock: null, defaultRetention: null, quota: { size: '2Gi' }, lifecycle: null },
          },
        },
      },
    ]);
  });

  it('writes nothing when they are the same', async () => {
    patches.length = 0;
    await forwardFeatures(
      client,
      type,
      mr({ versioning: 'Enabled' }),
      { features: { versioning: 'Enabled' }, support: ALL },
      new AbortController().signal,
    );
    await forwardFeatures(client, type, mr(), { features: undefined, support: ALL }, new AbortController().signal);
    expect(patches).toEqual([]);
  });
});

// A bound claim's features follow its class; what its bucket cannot drop stays, and whatever the
// resource refuses is the claim's to say: its pass goes on to copy its Secret (a rotation's new keys).
describe('followFeatures', () => {
  const type = { apiVersion: 'x/v1', kind: 'X', plural: 'xs', namespaced: true };
  const bound = (features: object) =>
    ({ metadata: { name: 'm', namespace: 'infra', uid: 'm-uid' }, spec: { forProvider: { features } } }) as unknown as ManagedResource;
  /** A client that refuses, as the resource's CEL rules do (featureTransitionRules), a patch that drops what may not be dropped. */
  const strict = (patches: unknown[]) =>
    ({
      mergePatch: async (_t: unknown, _k: unknown, patch: { spec: { forProvider: { features: Record<string, unknown> } } }) => {
        const f = patch.spec.forProvider.features;
        if (f.versioning === null || f.quota === null || f.lifecycle === null || f.objectLock === null)
          throw new KubeError(
            422,
            'Invalid',
            'X.x "m" is invalid: spec.forProvider.features.versioning: Invalid value: cannot be unset once set',
          );
        patches.push(patch);
      },
    }) as unknown as Client;
  const refusedBy = async (p: Promise<unknown>): Promise<ReasonedError> =>
    p.then(
      () => Promise.reject(new Error('not refused')),
      (e: ReasonedError) => e,
    );

  it("keeps what the bucket cannot drop when its class stops giving it (a removed default), and says so, not the server's refusal", async () => {
    const patches: unknown[] = [];
    const o = { client: strict(patches), managed: { type }, features: ALL };
    // The class gave versioning and its maxQuota; a platform team removed both.
    const mr = bound({ versioning: 'Enabled', quota: { size: '50Gi' } });
    const err = await refusedBy(followFeatures(o, { claim: claim(), cls: cls({}), mr }, new AbortController().signal));
    expect(err).toBeInstanceOf(ReasonedError);
    expect(err.reason).toBe('FeatureNotAllowed');
    expect(err.message).toMatch(/spec\.features\.versioning stays as the bucket has it \(S3 cannot turn versioning off\)/);
    expect(err.message).toMatch(/spec\.features\.quota stays as the bucket has it/);
    expect(patches).toEqual([]);
  });

  it("says what the resource refuses (versioning Suspended under object lock) as the claim's refusal, not an error that ends its pass", async () => {
    const refusing = {
      mergePatch: async () => {
        throw new KubeError(
          422,
          'Invalid',
          'X.x "m" is invalid: spec.forProvider.features.objectLock: Invalid value: objectLock needs versioning Enabled',
        );
      },
    } as unknown as Client;
    const o = { client: refusing, managed: { type }, features: ALL };
    const mr = bound({ versioning: 'Enabled', objectLock: true });
    const err = await refusedBy(
      followFeatures(
        o,
        { claim: claim({ versioning: 'Suspended' }), cls: cls({ defaults: { objectLock: true } }), mr },
        new AbortController().signal,
      ),
    );
    expect(err).toBeInstanceOf(ReasonedError);
    expect(err.message).toMatch(/^its X refused these features: .*objectLock needs versioning Enabled/);
  });
});
