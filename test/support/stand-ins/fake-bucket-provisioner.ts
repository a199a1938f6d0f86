// TEST DOUBLE. Local control planes run no pods (and no Ceph), so Rook's bucket provisioner (the
// lib-bucket-provisioner inside rook-ceph-operator) cannot run there. This stand-in does to the API
// what it does for an ObjectBucketClaim, in its order:
// - only for a claim whose StorageClass exists and names its provisioner; otherwise nothing is
//   written at all (not even Pending);
// - status Pending; the finalizer objectbucket.io/finalizer and the label bucket-provisioner;
//   spec.bucketName (<generateBucketName>-<uuid>) when empty;
// - a Secret (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) and a ConfigMap (BUCKET_HOST, BUCKET_PORT,
//   BUCKET_NAME, BUCKET_REGION, BUCKET_SUBREGION) named like the claim, each with the finalizer and a
//   controller reference to it; the cluster-scoped ObjectBucket obc-<ns>-<name>, Bound;
//   spec.objectBucketName; then status Bound. Only Pending and Bound are ever set on a claim.
// - on deletion: the ObjectBucket is deleted, the finalizers of the Secret and ConfigMap are dropped
//   (the garbage collector deletes them), then the claim's own finalizer.
// Never used by src/.
import { randomUUID } from 'node:crypto';
import type { KubeClient, KubeObjectLike } from '../../../src/runtime/kube/client.ts';
import { isAlreadyExists, isNotFound } from '../../../src/runtime/kube/errors.ts';
import { ConfigMaps, Secrets, StorageClasses, type ResourceType } from '../../../src/runtime/kube/resources.ts';
import { randomKey } from '../../../src/runtime/random.ts';
import { ObjectBucketClaims } from '../../../src/rook-ceph/bucket.ts';
import { StandIn, type Loose } from './stand-in.ts';

export const ObjectBuckets: ResourceType = {
  apiVersion: 'objectbucket.io/v1alpha1',
  kind: 'ObjectBucket',
  plural: 'objectbuckets',
  namespaced: false,
};
const FINALIZER = 'objectbucket.io/finalizer';

interface Claim extends KubeObjectLike {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion?: string;
    deletionTimestamp?: string;
    finalizers?: string[];
    labels?: Record<string, string>;
  };
  spec: {
    storageClassName?: string;
    bucketName?: string;
    generateBucketName?: string;
    objectBucketName?: string;
    additionalConfig?: Record<string, string>;
  };
  status?: { phase?: string };
}
interface StorageClass extends KubeObjectLike {
  provisioner: string;
  reclaimPolicy?: string;
  parameters?: Record<string, string>;
}

export class FakeBucketProvisioner extends StandIn<Claim> {
  /** "<rook namespace>.ceph.rook.io/bucket", as Rook's example operator config names it. */
  readonly provisioner: string;

  constructor(client: KubeClient, provisioner = 'rook-ceph.ceph.rook.io/bucket') {
    super(client, ObjectBucketClaims);
    this.provisioner = provisioner;
  }

  protected async reconcile(claim: Claim): Promise<void> {
    const sc = claim.spec.storageClassName ? await this.client.get<StorageClass>(StorageClasses, claim.spec.storageClassName) : undefined;
    if (sc?.provisioner !== this.provisioner) return;
    if (claim.metadata.deletionTimestamp) return this.release(claim);
    if (claim.status?.phase === 'Bound') return;
    const { name, namespace, uid } = claim.metadata;
    let current = claim;
    if (!current.status?.phase)
      current = await this.client.updateStatus<Claim>(ObjectBucketClaims, { ...current, status: { phase: 'Pending' } });
    const label = { 'bucket-provisioner': this.provisioner.replace('/', '-') };
    if (!current.metadata.finalizers?.includes(FINALIZER)) {
      current = await this.client.update<Claim>(ObjectBucketClaims, {
        ...current,
        metadata: {
          ...current.metadata,
          finalizers: [...(current.metadata.finalizers ?? []), FINALIZER],
          labels: { ...current.metadata.labels, ...label },
        },
      });
    }
    if (!current.spec.bucketName) {
      const prefix = (current.spec.generateBucketName ?? name).slice(0, 26);
      current = await this.client.update<Claim>(ObjectBucketClaims, {
        ...current,
        spec: { ...current.spec, bucketName: `${prefix}-${randomUUID()}` },
      });
    }
    const bucketName = current.spec.bucketName!;
    const host = `rook-ceph-rgw-${sc.parameters?.objectStoreName ?? 'my-store'}.${sc.parameters?.objectStoreNamespace ?? 'rook-ceph'}.svc`;
    const metadata = {
      name,
      namespace,
      labels: label,
      finalizers: [FINALIZER],
      ownerReferences: [
        { apiVersion: ObjectBucketClaims.apiVersion, kind: ObjectBucketClaims.kind, name, uid, controller: true, blockOwnerDeletion: true },
      ],
    };
    const b64 = (v: string): string => Buffer.from(v).toString('base64');
    await this.createIfMissing(Secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata,
      type: 'Opaque',
      data: { AWS_ACCESS_KEY_ID: b64(randomKey(20).toUpperCase()), AWS_SECRET_ACCESS_KEY: b64(randomKey(40)) },
    });
    await this.createIfMissing(ConfigMaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata,
      data: { BUCKET_HOST: host, BUCKET_PORT: '80', BUCKET_NAME: bucketName, BUCKET_REGION: '', BUCKET_SUBREGION: '' },
    });
    const obName = `obc-${namespace}-${name}`;
    if (!(await this.client.get(ObjectBuckets, obName))) {
      const ob = await this.client.create<KubeObjectLike>(ObjectBuckets, {
        apiVersion: ObjectBuckets.apiVersion,
        kind: ObjectBuckets.kind,
        metadata: { name: obName, labels: label, finalizers: [FINALIZER] },
        spec: {
          storageClassName: sc.metadata.name,
          reclaimPolicy: sc.reclaimPolicy ?? 'Delete',
          claimRef: { apiVersion: ObjectBucketClaims.apiVersion, kind: ObjectBucketClaims.kind, name, namespace, uid },
          endpoint: {
            bucketHost: host,
            bucketPort: 80,
            bucketName,
            region: '',
            subRegion: '',
            additionalConfig: current.spec.additionalConfig ?? {},
          },
          additionalState: {
            cephUser: `obc-${namespace}-${name}-${uid}`,
            objectStoreName: sc.parameters?.objectStoreName,
            objectStoreNamespace: sc.parameters?.objectStoreNamespace,
          },
        },
      } as KubeObjectLike);
      await this.client.updateStatus(ObjectBuckets, { ...ob, status: { phase: 'Bound' } });
    }
    current = await this.client.update<Claim>(ObjectBucketClaims, { ...current, spec: { ...current.spec, objectBucketName: obName } });
    await this.client.updateStatus(ObjectBucketClaims, { ...current, status: { phase: 'Bound' } });
  }

  private async release(claim: Claim): Promise<void> {
    const { name, namespace } = claim.metadata;
    const obName = `obc-${namespace}-${name}`;
    if (await this.client.get(ObjectBuckets, obName)) {
      await this.client.mergePatch(ObjectBuckets, obName, undefined, { metadata: { finalizers: null } });
      await this.client.delete(ObjectBuckets, obName);
    }
    for (const type of [Secrets, ConfigMaps])
      await this.client.mergePatch(type, name, namespace, { metadata: { finalizers: null } }).catch(ignoreNotFound);
    if (claim.metadata.finalizers?.includes(FINALIZER)) {
      await this.client.update(ObjectBucketClaims, {
        ...claim,
        metadata: { ...claim.metadata, finalizers: claim.metadata.finalizers.filter((f) => f !== FINALIZER) },
      });
    }
  }

  private async createIfMissing(type: ResourceType, obj: Loose): Promise<void> {
    await this.client.create(type, obj).catch((e: unknown) => {
      if (!isAlreadyExists(e)) throw e;
    });
  }
}

function ignoreNotFound(err: unknown): void {
  if (!isNotFound(err)) throw err;
}
