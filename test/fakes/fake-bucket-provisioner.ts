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
// With { s3: true } it also plays the Ceph object gateway with one real S3 server (SeaweedFS: real
// S3, IAM and policy enforcement) for all its claims, reached at the ConfigMap's BUCKET_HOST through
// resolveS3Endpoint (s3-stores.ts). As Rook's provisioner does through the gateway's admin API, it
// makes each claim's bucket and a user of its own, here through the IAM API with a policy that allows
// that bucket alone, and the Secret holds that user's keys. On deletion it does what Rook does: with
// reclaimPolicy Delete, the bucket goes with its objects (Rook removes it with purge) and then the
// user; with Retain, only the user goes. additionalConfig.maxSize (a quota on the claim's user, who
// has the one bucket) becomes the bucket's quota (weed shell), set again when it changes; the rest
// of additionalConfig is not played.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { isAlreadyExists, isNotFound } from '../../src/kit/kube/errors.ts';
import { ConfigMaps, Secrets, StorageClasses, type ResourceType } from '../../src/kit/kube/resources.ts';
import {
  CreateAccessKeyCommand,
  CreateUserCommand,
  DeleteAccessKeyCommand,
  DeleteUserCommand,
  DeleteUserPolicyCommand,
  type IAMClient,
  ListAccessKeysCommand,
  PutUserPolicyCommand,
} from '@aws-sdk/client-iam';
import { CreateBucketCommand, DeleteBucketCommand, DeleteObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { S3Credentials } from '../kit/s3-server.ts';
import { repoRoot } from '../kit/cluster.ts';
import { applyManifests, loadManifests } from '../kit/manifests.ts';
import { randomKey } from '../../src/backends/shared/random.ts';
import { quantityBytes } from '../../src/kit/quantity.ts';
import { ObjectBucketClaims } from '../../src/backends/rook-ceph/bucket.ts';
import { iamClient, s3Client } from '../kit/s3.ts';
import { S3Stores } from './s3-stores.ts';
import { StandIn, type Loose } from './stand-in.ts';

/** The StorageClass a platform team makes for Rook's bucket provisioner, as the sample has it: what the stand-in plays claims of. */
export async function applyRookBucketStorageClass(client: KubeClient): Promise<void> {
  await applyManifests(client, loadManifests(path.join(repoRoot, 'config', 'samples', 'rook-ceph', '00-target-storageclass.yaml')));
}

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
interface ObjectBucket extends KubeObjectLike {
  spec: {
    reclaimPolicy: string;
    endpoint: { bucketHost: string; bucketPort: number; bucketName: string };
    additionalState: { cephUser: string };
  };
}
interface StorageClass extends KubeObjectLike {
  provisioner: string;
  reclaimPolicy?: string;
  parameters?: Record<string, string>;
}

export interface FakeBucketProvisionerOptions {
  /** "<rook namespace>.ceph.rook.io/bucket", as Rook's example operator config names it (the default). */
  provisioner?: string;
  /** Play the object gateway with a real S3 server. Off by default: most tests need no S3, and it costs about 125 MiB of RSS. */
  s3?: boolean;
}

export class FakeBucketProvisioner extends StandIn<Claim> {
  readonly provisioner: string;
  private readonly gateway?: Gateway;

  constructor(client: KubeClient, opts: FakeBucketProvisionerOptions = {}) {
    super(client, ObjectBucketClaims);
    this.provisioner = opts.provisioner ?? 'rook-ceph.ceph.rook.io/bucket';
    if (opts.s3) this.gateway = new Gateway(client);
  }

  override async stop(): Promise<void> {
    await super.stop();
    await this.gateway?.stop();
  }

  protected async reconcile(claim: Claim): Promise<void> {
    const sc = claim.spec.storageClassName
      ? await this.client.get<StorageClass>(StorageClasses, { name: claim.spec.storageClassName })
      : undefined;
    if (sc?.provisioner !== this.provisioner) return;
    if (claim.metadata.deletionTimestamp) return this.release(claim);
    const host = `rook-ceph-rgw-${sc.parameters?.objectStoreName ?? 'my-store'}.${sc.parameters?.objectStoreNamespace ?? 'rook-ceph'}.svc`;
    if (claim.status?.phase === 'Bound') return this.gateway?.quota(host, 80, claim);
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
    const cephUser = `obc-${namespace}-${name}-${uid}`;
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
    if (!(await this.client.get(Secrets, { namespace, name }))) {
      const keys = this.gateway
        ? await this.gateway.provision(host, 80, bucketName, cephUser)
        : { accessKey: randomKey(20).toUpperCase(), secretKey: randomKey(40) };
      await this.createIfMissing(Secrets, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata,
        type: 'Opaque',
        data: { AWS_ACCESS_KEY_ID: b64(keys.accessKey), AWS_SECRET_ACCESS_KEY: b64(keys.secretKey) },
      });
    }
    await this.createIfMissing(ConfigMaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata,
      data: { BUCKET_HOST: host, BUCKET_PORT: '80', BUCKET_NAME: bucketName, BUCKET_REGION: '', BUCKET_SUBREGION: '' },
    });
    const obName = `obc-${namespace}-${name}`;
    if (!(await this.client.get(ObjectBuckets, { name: obName }))) {
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
            cephUser,
            objectStoreName: sc.parameters?.objectStoreName,
            objectStoreNamespace: sc.parameters?.objectStoreNamespace,
          },
        },
      } as KubeObjectLike);
      await this.client.updateStatus(ObjectBuckets, { ...ob, status: { phase: 'Bound' } });
    }
    current = await this.client.update<Claim>(ObjectBucketClaims, { ...current, spec: { ...current.spec, objectBucketName: obName } });
    await this.gateway?.quota(host, 80, current);
    await this.client.updateStatus(ObjectBucketClaims, { ...current, status: { phase: 'Bound' } });
  }

  private async release(claim: Claim): Promise<void> {
    const { name, namespace } = claim.metadata;
    const obName = `obc-${namespace}-${name}`;
    const ob = await this.client.get<ObjectBucket>(ObjectBuckets, { name: obName });
    if (ob) {
      await this.gateway?.release(ob);
      await this.client.mergePatch(ObjectBuckets, { name: obName }, { metadata: { finalizers: null } });
      await this.client.delete(ObjectBuckets, { name: obName });
    }
    for (const type of [Secrets, ConfigMaps])
      await this.client.mergePatch(type, { namespace, name }, { metadata: { finalizers: null } }).catch(ignoreNotFound);
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

/** Rejects with err unless it is S3's or IAM's answer of one of these names (e.g. "it exists already"). */
const unless =
  (...names: string[]) =>
  (err: Error): void => {
    if (!names.includes(err.name)) throw err;
  };

/** The Ceph object gateway, as one real S3 server: what Rook's provisioner asks of it, through S3 and IAM. */
class Gateway {
  private readonly stores: S3Stores;
  private readonly root = { accessKey: randomKey(20), secretKey: randomKey(40) };
  /** The quota set on each bucket, in MB. */
  private readonly quotas = new Map<string, number>();

  constructor(client: KubeClient) {
    this.stores = new S3Stores(client);
  }

  /** The claim's bucket (kept when it exists), and a user allowed that bucket alone; the user's new keys. */
  async provision(host: string, port: number, bucket: string, user: string): Promise<S3Credentials> {
    return this.with(host, port, async (s3, iam) => {
      await s3.send(new CreateBucketCommand({ Bucket: bucket })).catch(unless('BucketAlreadyOwnedByYou'));
      await iam.send(new CreateUserCommand({ UserName: user })).catch(unless('EntityAlreadyExists'));
      const policy = {
        Version: '2012-10-17',
        Statement: [{ Effect: 'Allow', Action: ['s3:*'], Resource: [`arn:aws:s3:::${bucket}`, `arn:aws:s3:::${bucket}/*`] }],
      };
      await iam.send(new PutUserPolicyCommand({ UserName: user, PolicyName: 'obc-bucket', PolicyDocument: JSON.stringify(policy) }));
      const { AccessKey: key } = await iam.send(new CreateAccessKeyCommand({ UserName: user }));
      return { accessKey: key!.AccessKeyId!, secretKey: key!.SecretAccessKey! };
    });
  }

  /** additionalConfig.maxSize, as Rook sets it on the claim's user (who has this one bucket): here the bucket's quota, in MB. */
  async quota(
    host: string,
    port: number,
    claim: { spec: { bucketName?: string; additionalConfig?: Record<string, string> } },
  ): Promise<void> {
    const bucket = claim.spec.bucketName;
    const bytes = claim.spec.additionalConfig?.maxSize ? quantityBytes(claim.spec.additionalConfig.maxSize) : undefined;
    if (!bucket || bytes === undefined) return;
    const mb = Math.ceil(bytes / 2 ** 20);
    if (this.quotas.get(bucket) === mb) return;
    await this.stores.run('gateway', this.root, { host, port });
    await this.stores.shell('gateway', [
      `s3.bucket.quota -name ${bucket} -op set -sizeMB ${mb}`,
      `s3.bucket.quota -name ${bucket} -op enable`,
    ]);
    this.quotas.set(bucket, mb);
  }

  /** Rook's Delete (the bucket, purged of its objects, then the user) or, with Retain, its Revoke (the user). */
  async release(ob: ObjectBucket): Promise<void> {
    const { endpoint, additionalState, reclaimPolicy } = ob.spec;
    const { bucketName: bucket } = endpoint;
    await this.with(endpoint.bucketHost, endpoint.bucketPort, async (s3, iam) => {
      if (reclaimPolicy === 'Delete') {
        for (;;) {
          const { Contents = [] } = (await s3.send(new ListObjectsV2Command({ Bucket: bucket })).catch(unless('NoSuchBucket'))) ?? {};
          if (Contents.length === 0) break;
          for (const o of Contents) await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: o.Key }));
        }
        await s3.send(new DeleteBucketCommand({ Bucket: bucket })).catch(unless('NoSuchBucket'));
      }
      const UserName = additionalState.cephUser;
      const { AccessKeyMetadata = [] } = (await iam.send(new ListAccessKeysCommand({ UserName })).catch(unless('NoSuchEntity'))) ?? {};
      for (const k of AccessKeyMetadata) await iam.send(new DeleteAccessKeyCommand({ UserName, AccessKeyId: k.AccessKeyId }));
      await iam.send(new DeleteUserPolicyCommand({ UserName, PolicyName: 'obc-bucket' })).catch(unless('NoSuchEntity'));
      await iam.send(new DeleteUserCommand({ UserName })).catch(unless('NoSuchEntity'));
    });
  }

  stop(): Promise<void> {
    return this.stores.stopAll();
  }

  /** Runs fn with root's clients of the gateway, which the claims reach at host:port. */
  private async with<T>(host: string, port: number, fn: (s3: S3Client, iam: IAMClient) => Promise<T>): Promise<T> {
    const endpoint = await this.stores.run('gateway', this.root, { host, port });
    const [s3, iam] = [s3Client(endpoint, this.root), iamClient(endpoint, this.root)];
    try {
      return await fn(s3, iam);
    } finally {
      s3.destroy();
      iam.destroy();
    }
  }
}
