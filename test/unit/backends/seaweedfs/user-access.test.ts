// Where a SeaweedFS bucket user stands (src/backends/seaweedfs/user-access.ts), from the operator's
// objects' status: what an app gets while new keys are being registered, what the operator refuses,
// and what it is still retrying.
import { describe, expect, it, jest } from '@jest/globals';
import { seaweedKeys } from '../../../../src/backends/seaweedfs/bucket-user.ts';
import { OPERATOR_RETRY_PATIENCE_MS, userAccess } from '../../../../src/backends/seaweedfs/user-access.ts';
import type { KindContext, TargetObject } from '../../../../src/runtime/native/kind.ts';
import { testContext } from '../../../kit/kind-context.ts';

const OWNER = 'seaweedbuckets.seaweedfs.crossplane.io/uid-1';
const ctx = (generation: number, outstanding: number[], due: number[]): KindContext => ({
  ...testContext,
  credentials: { generation, outstanding, due },
});

describe('userAccess', () => {
  const ready = (kind: string, status: object = {}): TargetObject => ({
    apiVersion: 'seaweed.seaweedfs.com/v1',
    kind,
    metadata: { name: 'mr', namespace: 'store-ns' },
    status: { phase: 'Ready', ...status },
  });
  const secret = (keys: { accessKey: string; secretKey: string }): TargetObject => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 's', namespace: 'store-ns' },
    data: { accessKey: Buffer.from(keys.accessKey).toString('base64'), secretKey: Buffer.from(keys.secretKey).toString('base64') },
  });
  const place = { base: 'mr', namespace: 'store-ns', iamName: 'rook.infra.mr', bucket: 'app-b-1', ownsBucket: true };
  const c = ctx(1, [0], []);
  const [k0, k1] = [seaweedKeys(c, OWNER, 0), seaweedKeys(c, OWNER, 1)];
  const common = [ready('S3Policy'), ready('S3PolicyBinding'), ready('Bucket')];

  it('publishes the keys once the operator registered these very keys', () => {
    const got = userAccess(
      place,
      { identity: ready('S3Identity'), companions: [secret(k1), ready('S3Credentials', { accessKey: k1.accessKey }), ...common] },
      { endpoint: 'http://store-s3.store-ns.svc:8333', credentials: ctx(1, [], []).credentials },
    );
    expect([got.ready, got.connectionDetails.AWS_ACCESS_KEY_ID, got.connectionDetails.bucket]).toEqual([true, k1.accessKey, 'app-b-1']);
  });

  it('keeps the older keys published while the new ones are registered (a rotation), and says so', () => {
    const got = userAccess(
      place,
      {
        identity: ready('S3Identity'),
        companions: [
          secret(k1),
          ready('S3Credentials', { phase: 'Pending' }),
          ...common,
          secret(k0),
          ready('S3Credentials', { accessKey: k0.accessKey }),
        ],
      },
      { endpoint: 'http://store-s3.store-ns.svc:8333', credentials: c.credentials },
    );
    expect([got.ready, got.connectionDetails.AWS_ACCESS_KEY_ID]).toEqual([true, k0.accessKey]);
    expect(got.rotating).toMatch(/register the user's new keys/);
  });

  it('publishes no keys the operator registered other than ours (an S3Credentials naming another access key)', () => {
    const got = userAccess(
      place,
      { identity: ready('S3Identity'), companions: [secret(k1), ready('S3Credentials', { accessKey: 'SOMEONE-ELSES' }), ...common] },
      { endpoint: 'http://store-s3.store-ns.svc:8333', credentials: ctx(1, [], []).credentials },
    );
    expect([got.ready, got.connectionDetails.AWS_ACCESS_KEY_ID]).toEqual([false, undefined]);
  });

  it('publishes no keys the operator registered to another IAM user (one resolved before our S3Identity was there), and says so', () => {
    expect(() =>
      userAccess(
        place,
        {
          identity: ready('S3Identity', { identityName: 'rook.infra.mr' }),
          companions: [secret(k1), ready('S3Credentials', { accessKey: k1.accessKey, identityName: 'mr' }), ...common],
        },
        { endpoint: 'http://store-s3.store-ns.svc:8333', credentials: ctx(1, [], []).credentials },
      ),
    ).toThrow(/S3Credentials store-ns\/mr registered the user's keys to IAM user mr, not rook\.infra\.mr/);
    // Withheld, also from a connection Secret that published them before.
    const err = (() => {
      try {
        userAccess(
          place,
          {
            identity: ready('S3Identity', { identityName: 'rook.infra.mr' }),
            companions: [secret(k1), ready('S3Credentials', { accessKey: k1.accessKey, identityName: 'mr' }), ...common],
          },
          { endpoint: 'http://store-s3.store-ns.svc:8333', credentials: ctx(1, [], []).credentials },
        );
      } catch (e) {
        return e as { withheld?: string[] };
      }
    })();
    expect(err?.withheld).toEqual(expect.arrayContaining(['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']));
  });

  it("is the resource's error when the operator failed one of them, naming it", () => {
    expect(() =>
      userAccess(
        place,
        { identity: ready('S3Identity', { phase: 'Failed', conditions: [{ type: 'Ready', reason: 'Conflict' }] }), companions: [] },
        { endpoint: 'http://x:8333', credentials: c.credentials },
      ),
    ).toThrow('the SeaweedFS operator could not make S3Identity store-ns/mr (Conflict)');
  });

  it('is not ready while the operator has not applied the spec as it is now (observedGeneration behind)', () => {
    const at = (observedGeneration: number) => ({
      ...ready('S3Policy', { observedGeneration }),
      metadata: { name: 'mr', namespace: 'store-ns', generation: 2 },
    });
    const of = (policy: TargetObject) =>
      userAccess(
        place,
        { identity: ready('S3Identity'), companions: [undefined, undefined, policy, ready('S3PolicyBinding'), ready('Bucket')] },
        { endpoint: 'http://x:8333', credentials: c.credentials },
      );
    expect(of(at(1))).toMatchObject({ ready: false, message: expect.stringContaining('apply the change to S3Policy store-ns/mr') });
    expect(of(at(2)).message).not.toContain('S3Policy');
  });

  it('waits, saying why, while the operator retries what failed for a while (its store starting), and fails on what it cannot mend', () => {
    const failedFor = (reason: string) => ({ phase: 'Failed', conditions: [{ type: 'Ready', reason }] });
    const of = (reason: string) =>
      userAccess(
        place,
        {
          identity: ready('S3Identity'),
          companions: [undefined, undefined, ready('S3Policy', failedFor(reason)), ready('S3PolicyBinding'), ready('Bucket')],
        },
        { endpoint: 'http://x:8333', credentials: c.credentials },
      );
    expect(of('PutFailed')).toMatchObject({ ready: false, message: expect.stringContaining('retries S3Policy store-ns/mr (PutFailed)') });
    expect(() => of('InvalidPolicy')).toThrow('could not make S3Policy store-ns/mr (InvalidPolicy)');
    expect(() => of('PolicyRenameNotSupported')).toThrow('(PolicyRenameNotSupported)');
  });

  it('fails on what the operator has retried past the time a store takes to start, counted from when it first read it Failed', () => {
    jest.useFakeTimers({ now: Date.parse('2026-11-01T00:00:00Z') });
    const policyMeta = { name: 'mr', namespace: 'store-ns', uid: 'policy-uid' };
    try {
      const of = (status: object) =>
        userAccess(
          place,
          {
            identity: ready('S3Identity'),
            companions: [
              undefined,
              undefined,
              { ...ready('S3Policy', status), metadata: policyMeta },
              ready('S3PolicyBinding'),
              ready('Bucket'),
            ],
          },
          { endpoint: 'http://x:8333', credentials: c.credentials },
        );
      // Ready has been False since the store was made, ten minutes ago; the operator keeps that time.
      const failing = {
        phase: 'Failed',
        conditions: [{ type: 'Ready', reason: 'FilerUnavailable', lastTransitionTime: '2026-10-31T23:50:00Z' }],
      };
      expect(of(failing).message).toMatch(/retries S3Policy store-ns\/mr \(FilerUnavailable\)/);
      jest.advanceTimersByTime(OPERATOR_RETRY_PATIENCE_MS - 1_000);
      expect(of(failing).ready).toBe(false);
      jest.advanceTimersByTime(2_000);
      expect(() => of(failing)).toThrow(/has failed to make S3Policy store-ns\/mr since 2026-11-01T00:00:00.000Z \(FilerUnavailable\)/);
      // Ready once, then Failed again: counted afresh.
      of({ phase: 'Ready' });
      expect(of(failing).ready).toBe(false);
    } finally {
      jest.useRealTimers();
    }
  });
});
