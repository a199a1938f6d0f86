// Where apps reach a SeaweedFS store: its S3 Service by its full name, so that no namespace of the
// target answers it through a pod's DNS search path; a bucket made when names were short follows its
// store's domain.
import { describe, expect, it } from '@jest/globals';
import type { SeaweedBucket, SeaweedStore, SeaweedStoreClass } from '../../../../src/backends/seaweedfs/api.ts';
import { bucketEndpoint } from '../../../../src/backends/seaweedfs/bucket.ts';
import { configureSeaweedStore, seaweedEndpoint, storeAccess } from '../../../../src/backends/seaweedfs/store.ts';
import type { Claim } from '../../../../src/runtime/claims/claim.ts';

const store = (clusterDomain?: string, published?: string): SeaweedStore =>
  ({
    metadata: { name: 'shared', namespace: 'platform' },
    spec: { forProvider: clusterDomain ? { clusterDomain } : {}, targetNamespace: 'sw-shared', providerRef: { name: 'p' } },
    ...(published ? { status: { atProvider: { endpoint: published } } } : {}),
  }) as unknown as SeaweedStore;
const bucket = (endpoint: string): SeaweedBucket =>
  ({
    metadata: { name: 'b', namespace: 'platform' },
    spec: {
      forProvider: { bucketName: 'b', store: { name: 'shared', seaweed: 'shared', endpoint } },
      targetNamespace: 'sw-shared',
      providerRef: { name: 'p' },
    },
  }) as unknown as SeaweedBucket;

describe("a SeaweedFS store's endpoint", () => {
  it('names the Service in full, in the domain given (cluster.local unless said)', () => {
    expect(seaweedEndpoint({ namespace: 'ns', name: 's' })).toBe('http://s-s3.ns.svc.cluster.local:8333');
    expect(seaweedEndpoint({ namespace: 'ns', name: 's' }, 'k8s.example')).toBe('http://s-s3.ns.svc.k8s.example:8333');
    expect(storeAccess(store('k8s.example'))?.endpoint).toBe('http://shared-s3.sw-shared.svc.k8s.example:8333');
  });

  it("a claim's store takes its class's domain", () => {
    const cls = { metadata: { name: 'c', namespace: 'platform' }, spec: { namespacePrefix: 'sw-', clusterDomain: 'k8s.example' } };
    const claim = { metadata: { name: 'app', namespace: 'team', uid: 'u' }, spec: {} } as unknown as Claim;
    expect(configureSeaweedStore(claim, cls as unknown as SeaweedStoreClass, 'mr').spec.forProvider.clusterDomain).toBe('k8s.example');
  });
});

describe("a SeaweedBucket's endpoint", () => {
  it('a bucket whose spec records the short name publishes the full one, in its store’s domain', () => {
    const old = bucket('http://shared-s3.sw-shared.svc:8333');
    expect(bucketEndpoint(old, store())).toBe('http://shared-s3.sw-shared.svc.cluster.local:8333');
    expect(bucketEndpoint(old, store('k8s.example'))).toBe('http://shared-s3.sw-shared.svc.k8s.example:8333');
    // Its store not cached (going): the domain it recorded, or cluster.local.
    expect(bucketEndpoint(old, undefined)).toBe('http://shared-s3.sw-shared.svc.cluster.local:8333');
    expect(bucketEndpoint(bucket('http://shared-s3.sw-shared.svc.k8s.example:8333'), undefined)).toBe(
      'http://shared-s3.sw-shared.svc.k8s.example:8333',
    );
  });

  it('takes the domain its store publishes now: a store whose spec changed but which publishes nothing new yet keeps its buckets with it', () => {
    const old = bucket('http://shared-s3.sw-shared.svc:8333');
    expect(bucketEndpoint(old, store('new.example', 'http://shared-s3.sw-shared.svc.old.example:8333'))).toBe(
      'http://shared-s3.sw-shared.svc.old.example:8333',
    );
    // Published before the upgrade (short): the domain its spec names.
    expect(bucketEndpoint(old, store('k8s.example', 'http://shared-s3.sw-shared.svc:8333'))).toBe(
      'http://shared-s3.sw-shared.svc.k8s.example:8333',
    );
  });

  it('names the Seaweed and namespace it was made in, whatever host its spec or its store says', () => {
    // A spec naming another host, by hand: the Service is still the one of its own Seaweed.
    expect(bucketEndpoint(bucket('http://elsewhere.attacker.svc:8333'), store())).toBe('http://shared-s3.sw-shared.svc.cluster.local:8333');
    expect(bucketEndpoint(bucket('not a url'), undefined)).toBe('http://shared-s3.sw-shared.svc.cluster.local:8333');
    // A recorded host that is no Service's name gives no domain either.
    expect(bucketEndpoint(bucket('http://10.0.0.5:8333'), undefined)).toBe('http://shared-s3.sw-shared.svc.cluster.local:8333');
    expect(bucketEndpoint(bucket('http://a.b.svc.Evil_Domain:8333'), undefined)).toBe('http://shared-s3.sw-shared.svc.cluster.local:8333');
  });
});
