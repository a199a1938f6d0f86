// A SeaweedBucket's user in its shared store (src/backends/seaweedfs/bucket.ts): its name there never
// is the store's own user's, which every S3Identity of the Seaweed would share.
import { describe, expect, it } from '@jest/globals';
import type { SeaweedBucket } from '../../../../src/backends/seaweedfs/api.ts';
import { seaweedBucketKind } from '../../../../src/backends/seaweedfs/bucket.ts';
import { iamNameFor } from '../../../../src/backends/seaweedfs/bucket-user.ts';
import { testContext } from '../../../kit/kind-context.ts';

const bucket = (name: string, seaweed: string): SeaweedBucket =>
  ({
    apiVersion: 'seaweedfs.crossplane.io/v1alpha1',
    kind: 'SeaweedBucket',
    metadata: { name, namespace: 'platform', uid: `${name}-uid` },
    spec: {
      targetNamespace: 'sw-shared',
      forProvider: {
        bucketName: 'orders',
        store: { name: 'shared', namespace: 'sw-shared', seaweed, endpoint: 'http://shared-s3.sw-shared.svc.cluster.local:8333' },
      },
    },
  }) as unknown as SeaweedBucket;
const userName = (mr: SeaweedBucket): string =>
  (seaweedBucketKind.desired(mr, mr.metadata.name, testContext).spec as { name: string }).name;

describe("a SeaweedBucket's user name in its store", () => {
  it('is rook.<namespace>.<name>', () => {
    expect(userName(bucket('orders', 'shared'))).toBe('rook.platform.orders');
  });

  it("is not its store's own user's when it is named as the store's Seaweed (the operator would register its keys to that user)", () => {
    const storeUser = iamNameFor({ metadata: { namespace: 'platform' } }, 'shared');
    const name = userName(bucket('shared', 'shared'));
    expect(name).not.toBe(storeUser);
    expect(name).toBe('rook.platform.shared_bucket');
  });
});
