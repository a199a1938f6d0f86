// A SeaweedFS bucket user (src/backends/seaweedfs/bucket-user.ts), as pure functions: names that
// never collide in a Seaweed, the operator's objects per generation of keys, the order they go in
// when a rotation retires them, and what a bucket's teardown keeps.
import { describe, expect, it } from '@jest/globals';
import {
  bucketTeardown,
  iamNameFor,
  policyNameOf,
  retiredPolicyObjects,
  retiringCompanions,
  rotatingKeys,
  seaweedKeys,
  userCompanions,
  type SeaweedUser,
} from '../../../../src/backends/seaweedfs/bucket-user.ts';
import type { KindContext, TargetObject } from '../../../../src/runtime/native/kind.ts';
import { testContext } from '../../../kit/kind-context.ts';

const OWNER = 'seaweedbuckets.seaweedfs.crossplane.io/uid-1';
const ctx = (generation: number, outstanding: number[], due: number[]): KindContext => ({
  ...testContext,
  credentials: { generation, outstanding, due },
});
const user = (c: KindContext, extra: Partial<SeaweedUser> = {}): SeaweedUser => ({
  base: 'mr',
  namespace: 'store-ns',
  seaweed: 'store',
  iamName: 'rook.infra.mr',
  bucket: 'app-b-1',
  access: 'ReadWrite',
  ownsBucket: true,
  deleteObjects: false,
  ...rotatingKeys(c, OWNER),
  ...extra,
});
const names = (cs: { type: { kind: string }; name: string }[]) => cs.map((c) => `${c.type.kind} ${c.name}`);

describe('iamNameFor', () => {
  it('is the namespace and name, which no two managed resources share, or a digest past 128 characters', () => {
    expect(iamNameFor({ metadata: { namespace: 'infra' } }, 'mr')).toBe('rook.infra.mr');
    const long = iamNameFor({ metadata: { namespace: 'infra' } }, 'x'.repeat(200));
    expect(long).toMatch(/^rook\.[0-9a-f]{40}$/);
    expect(long).not.toBe(iamNameFor({ metadata: { namespace: 'infra2' } }, 'x'.repeat(200)));
  });
});

describe('policyNameOf', () => {
  // SeaweedFS's filer saves, reads and deletes a policy only under a name of these characters.
  const ACCEPTED = /^[A-Za-z0-9_-]{1,128}$/;

  it('is a name SeaweedFS accepts for a policy, one per user, for every user name provider-rook gives', () => {
    const users = [
      iamNameFor({ metadata: { namespace: 'infra' } }, 'mr'),
      iamNameFor({ metadata: { namespace: 'infra' } }, 'a.b'),
      iamNameFor({ metadata: { namespace: 'infra.a' } }, 'b'),
      iamNameFor({ metadata: { namespace: 'infra' } }, 'a-b'),
      iamNameFor({ metadata: { namespace: 'infra' } }, 'x'.repeat(200)),
      iamNameFor({ metadata: { namespace: 'team-a' } }, 'store-1-bucket'),
    ];
    const policies = users.map((iamName) => policyNameOf({ iamName }));
    for (const p of policies) expect(p).toMatch(ACCEPTED);
    expect(new Set(policies).size).toBe(users.length - 1); // 'infra.a'/'b' is no namespace Kubernetes allows
    expect(policyNameOf({ iamName: 'rook.infra.mr' })).toBe('rook_infra_mr');
  });

  it("is the S3Policy's name, on an object of a new name its binding names; those of 0.2.0 are retired", () => {
    const cs = userCompanions(user(ctx(0, [], [])));
    const policy = cs.find((c) => c.type.kind === 'S3Policy')!.build() as unknown as { metadata: { name: string }; spec: { name: string } };
    const binding = cs.find((c) => c.type.kind === 'S3PolicyBinding')!.build() as unknown as { spec: { policyRef: { name: string } } };
    expect(policy.spec.name).toBe('rook_infra_mr');
    expect(binding.spec.policyRef.name).toBe(policy.metadata.name);
    expect(names(retiredPolicyObjects('store-ns', 'mr'))).toEqual(['S3Policy mr', 'S3PolicyBinding mr']);
    expect(names(cs)).not.toEqual(expect.arrayContaining(names(retiredPolicyObjects('store-ns', 'mr'))));
  });
});

describe('companions per generation', () => {
  it("names the first generation's Secret and S3Credentials as before any rotation, then the policy, binding and bucket", () => {
    expect(names(userCompanions(user(ctx(0, [], []))))).toEqual([
      'Secret mr-keys',
      'S3Credentials mr',
      'S3Policy mr-policy',
      'S3PolicyBinding mr-policy',
      'Bucket mr',
    ]);
  });

  it('keeps the keys of generations in their grace period beside the new ones, each its own Secret and S3Credentials', () => {
    const cs = userCompanions(user(ctx(2, [0, 1], [0])));
    expect(names(cs)).toEqual([
      'Secret mr-keys-g2',
      'S3Credentials mr-g2',
      'S3Policy mr-policy',
      'S3PolicyBinding mr-policy',
      'Bucket mr',
      'Secret mr-keys-g1',
      'S3Credentials mr-g1',
    ]);
    const keys = (c: (typeof cs)[number]) => (c.build() as unknown as { data: Record<string, string> }).data.accessKey;
    expect(keys(cs[0]!)).toBe(Buffer.from(seaweedKeys(ctx(2, [], []), OWNER).accessKey).toString('base64'));
    expect(keys(cs[5]!)).toBe(Buffer.from(seaweedKeys(ctx(2, [], []), OWNER, 1).accessKey).toString('base64'));
    expect(keys(cs[0]!)).not.toBe(keys(cs[5]!));
  });

  it('retires a generation S3Credentials first (the operator revokes its key), then its Secret', () => {
    const c = ctx(2, [0, 1], [0]);
    expect(names(retiringCompanions(user(c), [0], (g) => seaweedKeys(c, OWNER, g)))).toEqual(['S3Credentials mr', 'Secret mr-keys']);
  });
});

describe("a bucket's teardown", () => {
  // As the operator shows it once it made the bucket (status.bucketName).
  const bucketOf = (o: { reclaimPolicy?: string } = {}): TargetObject =>
    ({
      apiVersion: 'seaweed.seaweedfs.com/v1',
      kind: 'Bucket',
      metadata: { name: 'mr', namespace: 'store-ns' },
      spec: o,
      status: { bucketName: 'app-b-1' },
    }) as TargetObject;

  it('removes a bucket deleteObjects lets go, objects and all', () => {
    const t = bucketTeardown(user(ctx(0, [], []), { deleteObjects: true }), false)!;
    expect(t.prepare?.(bucketOf({ reclaimPolicy: 'Delete' }))).toBeUndefined();
    expect(t.outcome(bucketOf())).toEqual({ done: true });
  });

  it('keeps one under object lock whatever deleteObjects says: the operator would retry its delete until the longest retention ends, then take everything', () => {
    const locked = user(ctx(0, [], []), { deleteObjects: true, features: { versioning: 'Enabled', objectLock: true } });
    const t = bucketTeardown(locked, false)!;
    expect(t.prepare?.(bucketOf({ reclaimPolicy: 'Delete' }))).toEqual({ spec: { reclaimPolicy: 'Retain' } });
    expect(t.outcome(bucketOf())).toEqual({
      done: true,
      kept: 'bucket app-b-1 has object lock: its locked versions cannot be deleted before their retention ends, so it is kept in the store with them',
    });
  });
});

describe('a bucket its Bucket never took as its own', () => {
  it('is reported kept on deletion when the operator refused it as one already there, not deleted, whatever deleteObjects says', () => {
    const teardown = bucketTeardown(user(ctx(0, [], []), { deleteObjects: true }), false)!;
    const at = (status: object) => ({ apiVersion: 'v1', kind: 'Bucket', metadata: { name: 'mr' }, status }) as TargetObject;
    expect(teardown.outcome(at({ bucketName: 'app-b-1', phase: 'Ready' }))).toEqual({ done: true });
    const refused = { phase: 'Failed', conditions: [{ type: 'Ready', status: 'False', reason: 'BucketAlreadyExists' }] };
    expect(teardown.outcome(at(refused))).toMatchObject({ done: true, kept: expect.stringContaining('never took it as its own') });
    // Never made at all (its store never answered): nothing is kept for it.
    expect(
      teardown.outcome(at({ phase: 'Failed', conditions: [{ type: 'Ready', status: 'False', reason: 'ExistsCheckFailed' }] })),
    ).toEqual({
      done: true,
    });
  });
});
