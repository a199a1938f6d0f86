// TEST DOUBLE. The SeaweedFS operator (seaweedfs-operator 1.0.36) cannot be built here (the Go module
// proxy refuses its module) and local control planes run no pods, so this stand-in plays it for the
// kinds provider-rook writes (seaweed.seaweedfs.com/v1), with the status the real controllers write:
// - Seaweed: the S3 gateway's Service <n>-s3 (port 8333, selecting the gateway's pods) owned by the
//   Seaweed, and the Ready condition (True/Ready once its servers run). It also plays the Seaweed's
//   pods: with { s3: true }, a real SeaweedFS server per Seaweed (s3-stores.ts), stopped when the
//   Seaweed goes. The operator reaches a Seaweed through the filer's IAM gRPC service with the
//   cluster's JWT key; the stand-in reaches its server through an admin identity of its own that
//   it never writes anywhere (the real operator mints no S3 root either). Its servers run with
//   -master.telemetry=false (test/kit/s3-server.ts), as provider-rook's Seaweeds tell their masters
//   (-telemetry=false); a Seaweed that does not is left unstarted, Ready=False. Its server also
//   starts with the identities of spec.s3.configSecret, as the operator passes them to -config; a
//   Seaweed with none is left unstarted too: SeaweedFS would serve it to anonymous callers as an
//   admin, which the stand-in's own admin identity (it turns authentication on) would hide. An admin
//   server and workers (spec.admin, spec.worker) are counted in its status as the operator counts
//   them; the stand-in's server runs a worker of its own whatever the spec says (weed mini), so no
//   test judges expiry by time: the Seaweed's spec is what says a worker carries rules out.
// - Bucket, S3Identity, S3Credentials, S3Policy, S3PolicyBinding, BucketLifecyclePolicy: the finalizer
//   seaweed.seaweedfs.com/<kind>-protection, status.phase Pending|Ready|Failed with a Ready condition
//   (reasons as upstream: BucketAlreadyExists, Conflict, PolicyMissing, SubjectMissing,
//   IdentityMissing; and, as upstream, Failed with the reason of its first call while the Seaweed's
//   servers do not answer yet: upstream calls without waiting for the Seaweed to be Ready), and
//   status.bucketName, identityName, accessKey, secretName, policyName, attachedSubjects. Their
//   effects go to the real server, as the operator's weed shell and IAM calls would (reference:
//   seaweedfs-operator.md §8): CreateBucket (with object lock when asked), PutBucketVersioning and
//   PutObjectLockConfiguration; a quota by `weed shell` (s3.bucket.quota, in MB rounded up, enforced
//   by the server); a BucketLifecyclePolicy's rules by PutBucketLifecycleConfiguration, which writes
//   where the operator does; CreateUser; CreateAccessKey with the keys of the Secret when it holds
//   both (else keys it generates, written to a Secret it makes, owns and annotates managed, or into
//   one there already, left unmarked); an S3Policy's document saved as a managed policy under its name
//   (CreatePolicy, or CreatePolicyVersion over one there: upstream's PutPolicy), which the server's
//   filer refuses for a name outside [A-Za-z0-9_-] as it refuses the operator's call (Failed,
//   PutFailed), and attached to each subject of a binding (AttachUserPolicy), so the server judges
//   that very document; a policy still attached goes only once detached (the server's IAM API refuses
//   before; the operator's filer call would not wait), its finalizer kept meanwhile. A Bucket records
//   status.bucketName as soon as it made the bucket, as upstream's controller does: a later step that
//   fails (VersioningFailed, ObjectLockFailed, QuotaFailed) keeps it, so the next pass does not refuse
//   its own bucket as BucketAlreadyExists. A Bucket is removed with all its objects (s3.bucket.delete)
//   only under reclaimPolicy Delete and only if it made or adopted it; the IAM kinds undo their effect
//   unless Retain. As upstream, a deleting Bucket or IAM object whose Seaweed is gone keeps its
//   finalizer for good (Pending, ClusterRefNotFound: the operator looks its Seaweed up before anything
//   else); a BucketLifecyclePolicy lets go. Without S3 it writes the same status and touches no
//   server.
// Never used by src/.
import type { ObjectKey } from '../../src/kit/kube/object-key.ts';
import { randomBytes } from 'node:crypto';
import type { Condition } from '../../src/kit/conditions.ts';
import { cond } from '../kit/conditions.ts';
import {
  CreateAccessKeyCommand,
  CreateUserCommand,
  DeleteAccessKeyCommand,
  DeleteUserCommand,
  DeleteUserPolicyCommand,
  ListAccessKeysCommand,
  ListUserPoliciesCommand,
  AttachUserPolicyCommand,
  CreatePolicyCommand,
  CreatePolicyVersionCommand,
  DeletePolicyCommand,
  DetachUserPolicyCommand,
  GetPolicyCommand,
  ListAttachedUserPoliciesCommand,
  type IAMClient,
} from '@aws-sdk/client-iam';
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteBucketLifecycleCommand,
  DeleteObjectCommand,
  HeadBucketCommand,
  ListObjectVersionsCommand,
  PutBucketLifecycleConfigurationCommand,
  PutBucketVersioningCommand,
  PutObjectLockConfigurationCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { isAlreadyExists, isNotFound } from '../../src/kit/kube/errors.ts';
import { Secrets, Services, type ResourceType } from '../../src/kit/kube/resources.ts';
import {
  BucketLifecyclePolicies,
  S3CredentialsType,
  S3Identities,
  S3Policies,
  S3PolicyBindings,
  SeaweedBuckets,
  Seaweeds,
} from '../../src/backends/seaweedfs/operator.ts';
import { iamClient, s3Client } from '../kit/s3.ts';
import type { S3Credentials } from '../kit/s3-server.ts';
import { S3Stores } from './s3-stores.ts';
import { StandIn } from './stand-in.ts';

type Obj = KubeObjectLike & {
  metadata: KubeObjectLike['metadata'] & {
    uid: string;
    namespace: string;
    finalizers?: string[];
    deletionTimestamp?: string;
    annotations?: Record<string, string>;
    creationTimestamp?: string;
    generation?: number;
  };
  spec: Record<string, unknown> & { seaweedRef?: { name: string }; clusterRef?: { name: string }; reclaimPolicy?: string; name?: string };
  status?: Record<string, unknown> & { phase?: string };
};
type SecretObj = KubeObjectLike & {
  data?: Record<string, string>;
  metadata: KubeObjectLike['metadata'] & { annotations?: Record<string, string> };
};

export interface FakeSeaweedOperatorOptions {
  /** Run a real S3 server for each Seaweed. Off by default: each costs about 120 MiB of RSS. */
  s3?: boolean;
}

/** A pass that cannot finish yet: the object's status says why, and it is tried again. */
class Waiting extends Error {
  readonly phase: 'Pending' | 'Failed';
  readonly reason: string;
  /** Status fields the failed pass still records (a Bucket's name once it made it). */
  readonly claimed: Record<string, unknown>;
  constructor(phase: 'Pending' | 'Failed', reason: string, message: string, claimed: Record<string, unknown> = {}) {
    super(message);
    this.phase = phase;
    this.reason = reason;
    this.claimed = claimed;
  }
}

const MANAGED = 's3credentials.seaweed.seaweedfs.com/managed';
const text = (b64: string | undefined): string => Buffer.from(b64 ?? '', 'base64').toString('utf8');
const gone = (err: Error): void => {
  if (!['NoSuchEntity', 'NoSuchEntityException', 'NoSuchBucket', 'NotFound'].includes(err.name)) throw err;
};
const exists = (err: Error): void => {
  if (!['EntityAlreadyExists', 'EntityAlreadyExistsException'].includes(err.name)) throw err;
};

/** The servers of the Seaweeds this stand-in runs, and the admin identity it reaches each with. */
class Servers {
  readonly s3?: S3Stores;
  private readonly admins = new Map<string, { endpoint: string; root: S3Credentials }>();
  /** uid by "namespace/name", for tests that look into a store. */
  readonly uids = new Map<string, string>();

  constructor(client: KubeClient, s3: boolean) {
    if (s3) this.s3 = new S3Stores(client);
  }

  async run(seaweed: Obj, selector: Record<string, string>, identities: unknown[]): Promise<void> {
    if (!this.s3) return;
    const key = seaweed.metadata.uid;
    const root = this.admins.get(key)?.root ?? { accessKey: randomBytes(10).toString('hex'), secretKey: randomBytes(20).toString('hex') };
    const endpoint = await this.s3.run(key, root, { namespace: seaweed.metadata.namespace, labels: selector, podPort: 8333 }, identities);
    this.admins.set(key, { endpoint, root });
    this.uids.set(`${seaweed.metadata.namespace}/${seaweed.metadata.name}`, key);
  }

  /** A running Seaweed's server and the admin identity the stand-in reaches it with. */
  admin({ namespace, name }: Required<ObjectKey>): { endpoint: string; root: S3Credentials } {
    const found = this.admins.get(this.uids.get(`${namespace}/${name}`) ?? '');
    if (!found) throw new Error(`no server runs for Seaweed ${namespace}/${name}`);
    return found;
  }

  async stop(seaweed: Obj): Promise<void> {
    this.admins.delete(seaweed.metadata.uid);
    await this.s3?.stop(seaweed.metadata.uid);
  }

  /** `weed shell` on a running Seaweed's server (nothing without S3). */
  async shell(seaweed: Obj, commands: string[]): Promise<void> {
    if (this.s3) await this.s3.shell(seaweed.metadata.uid, commands);
  }

  /** Clients of a running Seaweed's server, or undefined without S3. */
  clients(seaweed: Obj): { s3: S3Client; iam: IAMClient } | undefined {
    const admin = this.admins.get(seaweed.metadata.uid);
    if (!this.s3) return undefined;
    if (!admin) throw new Waiting('Pending', 'ClusterNotReady', 'the Seaweed cluster is not ready');
    return { s3: s3Client(admin.endpoint, admin.root), iam: iamClient(admin.endpoint, admin.root) };
  }
}

const condition = (status: 'True' | 'False', reason: string, message: string, observedGeneration?: number) => ({
  type: 'Ready',
  status,
  reason,
  message,
  ...(observedGeneration !== undefined ? { observedGeneration } : {}),
  lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
});

/** One of the operator's kinds that act on a Seaweed: finalizer, cluster lookup, status and retries. */
abstract class SeaweedChild extends StandIn<Obj> {
  protected readonly servers: Servers;
  private readonly type: ResourceType;
  private readonly finalizer: string;

  constructor(client: KubeClient, type: ResourceType, servers: Servers) {
    super(client, type);
    this.type = type;
    this.servers = servers;
    this.finalizer = `seaweed.seaweedfs.com/${type.kind.toLowerCase()}-protection`;
  }

  /** Whether a deleting object whose Seaweed is gone lets go (upstream, only a lifecycle policy does). */
  protected readonly releasesWithoutSeaweed: boolean = false;
  /**
   * Upstream's reason when its first call to a Seaweed whose servers do not answer yet fails: it does
   * not wait for the Seaweed to be Ready, it calls, says Failed, and tries again.
   */
  protected abstract readonly unanswered: string;

  /** The effect; its status fields once Ready. */
  protected abstract act(obj: Obj, on: { s3: S3Client; iam: IAMClient } | undefined, seaweed: Obj): Promise<Record<string, unknown>>;
  /** Undoes the effect (reclaim policy permitting). */
  protected abstract undo(obj: Obj, on: { s3: S3Client; iam: IAMClient }): Promise<void>;

  protected async reconcile(obj: Obj): Promise<void> {
    const finalizers = obj.metadata.finalizers ?? [];
    const seaweedName = await this.seaweedOf(obj);
    const seaweed = seaweedName
      ? await this.client.get<Obj>(Seaweeds, { namespace: obj.metadata.namespace, name: seaweedName })
      : undefined;
    if (obj.metadata.deletionTimestamp) {
      if (!finalizers.includes(this.finalizer)) return;
      if (!seaweed && !this.releasesWithoutSeaweed) {
        const missing = `Seaweed ${JSON.stringify(seaweedName ?? '')} not found`;
        await this.write(obj, { ...obj.status, phase: 'Pending', conditions: [condition('False', 'ClusterRefNotFound', missing)] });
        return;
      }
      const on = seaweed && !seaweed.metadata.deletionTimestamp ? this.servers.clients(seaweed) : undefined;
      if (on) await this.undo(obj, on).finally(() => destroy(on));
      await this.client.update(this.type, {
        ...obj,
        metadata: { ...obj.metadata, finalizers: finalizers.filter((f) => f !== this.finalizer) },
      });
      return;
    }
    if (!finalizers.includes(this.finalizer)) {
      await this.client.update(this.type, { ...obj, metadata: { ...obj.metadata, finalizers: [...finalizers, this.finalizer] } });
      return; // the update brings it back
    }
    let status: Record<string, unknown>;
    try {
      if (!seaweed) throw new Waiting('Pending', 'ClusterRefNotFound', `Seaweed ${JSON.stringify(seaweedName ?? '')} not found`);
      const unanswered = new Waiting('Failed', this.unanswered, `Seaweed ${obj.metadata.namespace}/${seaweedName}: connection refused`);
      if (cond(seaweed as { status?: { conditions?: Condition[] } }, 'Ready')?.status !== 'True') throw unanswered;
      let on;
      try {
        on = this.servers.clients(seaweed);
      } catch (err) {
        throw err instanceof Waiting ? unanswered : err;
      }
      try {
        status = {
          ...(await this.act(obj, on, seaweed)),
          phase: 'Ready',
          conditions: [condition('True', 'Ready', `${this.type.kind} is ready`)],
        };
      } finally {
        if (on) destroy(on);
      }
    } catch (err) {
      if (!(err instanceof Waiting)) throw err;
      status = { ...obj.status, ...err.claimed, phase: err.phase, conditions: [condition('False', err.reason, err.message)] };
      await this.write(obj, status);
      throw err; // tried again, as the operator requeues (30 s there)
    }
    await this.write(obj, { ...status, observedGeneration: obj.metadata.generation });
  }

  private async write(obj: Obj, written: Record<string, unknown>): Promise<void> {
    // As meta.SetStatusCondition: a condition whose status stays keeps its lastTransitionTime (a new
    // reason or message does not move it).
    type Cond = { type: string; status: string; lastTransitionTime?: string };
    const before = (obj.status?.conditions ?? []) as Cond[];
    const conditions = (written.conditions as Cond[] | undefined)?.map((c) => {
      const was = cond({ status: { conditions: before } }, c.type);
      return was?.status === c.status && was.lastTransitionTime ? { ...c, lastTransitionTime: was.lastTransitionTime } : c;
    });
    const status = conditions ? { ...written, conditions } : written;
    const same = (a: unknown, b: unknown): boolean =>
      JSON.stringify(a, (k, v: unknown) => (k === 'lastTransitionTime' ? undefined : v)) ===
      JSON.stringify(b, (k, v: unknown) => (k === 'lastTransitionTime' ? undefined : v));
    if (same(obj.status, status)) return;
    await this.client.updateStatus(this.type, { ...obj, status });
  }

  /** The Seaweed an object acts on (its seaweedRef or clusterRef). */
  protected async seaweedOf(obj: Obj): Promise<string | undefined> {
    return (obj.spec.seaweedRef ?? obj.spec.clusterRef)?.name;
  }

  /** The name an object has in the store: spec.name, else its own. */
  protected storeName(obj: Obj): string {
    return obj.spec.name || obj.metadata.name;
  }

  /** A same-namespace object of the operator's, by name. */
  protected sibling(type: ResourceType, { namespace, name }: Required<ObjectKey>): Promise<Obj | undefined> {
    return this.client.get<Obj>(type, { namespace, name });
  }
}

function destroy(on: { s3: S3Client; iam: IAMClient }): void {
  on.s3.destroy();
  on.iam.destroy();
}

class BucketStandIn extends SeaweedChild {
  protected readonly unanswered = 'ExistsCheckFailed';
  protected async act(obj: Obj, on: { s3: S3Client } | undefined, seaweed: Obj): Promise<Record<string, unknown>> {
    const Bucket = this.storeName(obj);
    const spec = obj.spec as {
      versioning?: string;
      objectLock?: boolean;
      adoptExisting?: boolean;
      quota?: { size: string; enforce?: boolean };
    };
    if (on && !obj.status?.bucketName) {
      const found = await on.s3.send(new HeadBucketCommand({ Bucket })).then(
        () => true,
        (err: Error) => (err.name === 'NotFound' || err.name === 'NoSuchBucket' ? false : Promise.reject(err)),
      );
      // Only a bucket the CR made (status.bucketName) or adopted is its own.
      if (found && !spec.adoptExisting) throw new Waiting('Failed', 'BucketAlreadyExists', `bucket ${Bucket} already exists`);
      // s3.bucket.create -withLock. One made between the check and the create (upstream: by another
      // agent) is refused as one found, unless the Bucket adopts it.
      if (!found)
        await on.s3.send(new CreateBucketCommand({ Bucket, ObjectLockEnabledForBucket: spec.objectLock === true })).catch((err: Error) => {
          if (err.name !== 'BucketAlreadyOwnedByYou' && err.name !== 'BucketAlreadyExists') throw err;
          if (!spec.adoptExisting) throw new Waiting('Failed', 'BucketAlreadyExists', `bucket ${Bucket} was made by another agent`);
        });
      // Claimed at once, as upstream does: a later step that fails records the name with its failure,
      // so the next pass does not take the bucket it made for someone else's.
      const rest = { ...obj, status: { ...obj.status, bucketName: Bucket } };
      return this.configure(rest, on, seaweed).catch((err: Error) => {
        const failed = err instanceof Waiting ? err : new Waiting('Failed', 'CreateFailed', err.message);
        throw new Waiting(failed.phase, failed.reason, failed.message, { bucketName: Bucket });
      });
    }
    return this.configure(obj, on, seaweed);
  }

  /** Versioning, object lock and quota, on a bucket the CR made or adopted. */
  private async configure(obj: Obj, on: { s3: S3Client } | undefined, seaweed: Obj): Promise<Record<string, unknown>> {
    const Bucket = this.storeName(obj);
    const spec = obj.spec as { versioning?: string; objectLock?: boolean; quota?: { size: string; enforce?: boolean } };
    // Each step fails the pass with upstream's reason, tried again later.
    const step = (reason: string) => (err: Error) => {
      throw new Waiting('Failed', reason, err.message);
    };
    // s3.bucket.versioning, then s3.bucket.lock -enable for a bucket made without it.
    if (on && (spec.versioning === 'Enabled' || spec.versioning === 'Suspended'))
      await on.s3
        .send(new PutBucketVersioningCommand({ Bucket, VersioningConfiguration: { Status: spec.versioning } }))
        .catch(step('VersioningFailed'));
    if (on && spec.objectLock && obj.status?.objectLockEnabled !== true)
      await on.s3
        .send(new PutObjectLockConfigurationCommand({ Bucket, ObjectLockConfiguration: { ObjectLockEnabled: 'Enabled' } }))
        .catch(step('ObjectLockFailed'));
    // s3.bucket.quota, in MB rounded up, as the operator sets it.
    const quota = spec.quota ? Math.ceil(quantityBytes(spec.quota.size) / 2 ** 20) : undefined;
    const had = (obj.status?.quota as { sizeBytes?: number } | undefined)?.sizeBytes;
    if (quota !== undefined && had !== quota * 2 ** 20)
      await this.servers
        .shell(seaweed, [
          `s3.bucket.quota -name ${Bucket} -op set -sizeMB ${quota}`,
          `s3.bucket.quota -name ${Bucket} -op ${spec.quota?.enforce === false ? 'disable' : 'enable'}`,
        ])
        .catch(step('QuotaFailed'));
    return {
      bucketName: Bucket,
      versioning: spec.versioning ?? 'Off',
      objectLockEnabled: spec.objectLock === true,
      ...(quota !== undefined ? { quota: { sizeBytes: quota * 2 ** 20, enforced: spec.quota?.enforce !== false } } : {}),
    };
  }

  protected async undo(obj: Obj, on: { s3: S3Client }): Promise<void> {
    const Bucket = obj.status?.bucketName as string | undefined;
    if ((obj.spec.reclaimPolicy ?? 'Retain') !== 'Delete' || !Bucket) return;
    // s3.bucket.delete: the bucket goes with every object (and version) in it.
    for (;;) {
      const listed = await on.s3.send(new ListObjectVersionsCommand({ Bucket })).catch((err: Error) => (gone(err), undefined));
      const all = [...(listed?.Versions ?? []), ...(listed?.DeleteMarkers ?? [])];
      if (!listed || all.length === 0) break;
      for (const v of all) await on.s3.send(new DeleteObjectCommand({ Bucket, Key: v.Key, VersionId: v.VersionId }));
    }
    await on.s3.send(new DeleteBucketCommand({ Bucket })).catch(gone);
  }
}

class IdentityStandIn extends SeaweedChild {
  protected readonly unanswered = 'LookupFailed';
  protected async act(obj: Obj, on: { iam: IAMClient } | undefined): Promise<Record<string, unknown>> {
    const UserName = this.storeName(obj);
    // IAM names are global in a Seaweed: the oldest claimant of a name owns it.
    const rivals = this.informer
      .list()
      .filter(
        (o) =>
          o.metadata.uid !== obj.metadata.uid &&
          (o.spec.name || o.metadata.name) === UserName &&
          o.spec.seaweedRef?.name === obj.spec.seaweedRef?.name &&
          o.metadata.namespace === obj.metadata.namespace &&
          (o.metadata.creationTimestamp ?? '') < (obj.metadata.creationTimestamp ?? ''),
      );
    if (rivals.length) throw new Waiting('Failed', 'Conflict', `user ${UserName} is claimed by another S3Identity`);
    if (on) await on.iam.send(new CreateUserCommand({ UserName })).catch(exists);
    return { identityName: UserName };
  }

  protected async undo(obj: Obj, on: { iam: IAMClient }): Promise<void> {
    const UserName = obj.status?.identityName as string | undefined;
    if (obj.spec.reclaimPolicy === 'Retain' || !UserName) return;
    const keys = await on.iam.send(new ListAccessKeysCommand({ UserName })).catch((err: Error) => (gone(err), undefined));
    for (const k of keys?.AccessKeyMetadata ?? [])
      await on.iam.send(new DeleteAccessKeyCommand({ UserName, AccessKeyId: k.AccessKeyId })).catch(gone);
    const policies = await on.iam.send(new ListUserPoliciesCommand({ UserName })).catch((err: Error) => (gone(err), undefined));
    for (const PolicyName of policies?.PolicyNames ?? [])
      await on.iam.send(new DeleteUserPolicyCommand({ UserName, PolicyName })).catch(gone);
    // The filer's DeleteUser (the operator's call) takes the user's attachments with it; IAM's asks them gone first.
    const attached = await on.iam.send(new ListAttachedUserPoliciesCommand({ UserName })).catch((err: Error) => (gone(err), undefined));
    for (const { PolicyArn } of attached?.AttachedPolicies ?? [])
      if (PolicyArn) await on.iam.send(new DetachUserPolicyCommand({ UserName, PolicyArn })).catch(gone);
    await on.iam.send(new DeleteUserCommand({ UserName })).catch(gone);
  }
}

class CredentialsStandIn extends SeaweedChild {
  protected readonly unanswered = 'IdentityLookupFailed';
  protected async act(obj: Obj, on: { iam: IAMClient } | undefined): Promise<Record<string, unknown>> {
    const { namespace } = obj.metadata;
    const spec = obj.spec as { identityRef: { name: string }; secretRef?: { name?: string } };
    const identity = await this.sibling(S3Identities, { namespace, name: spec.identityRef.name });
    const UserName = identity?.status?.identityName as string | undefined;
    if (!UserName) throw new Waiting('Pending', 'IdentityMissing', `S3Identity ${spec.identityRef.name} is not ready`);
    const secretName = spec.secretRef?.name || obj.metadata.name;
    const secret = await this.client.get<SecretObj>(Secrets, { namespace, name: secretName });
    let keys = { accessKey: text(secret?.data?.accessKey), secretKey: text(secret?.data?.secretKey) };
    if (!keys.accessKey || !keys.secretKey) {
      keys = {
        accessKey: randomBytes(16).toString('base64url').slice(0, 21).toUpperCase(),
        secretKey: randomBytes(32).toString('base64url').slice(0, 42),
      };
      const data = { accessKey: Buffer.from(keys.accessKey).toString('base64'), secretKey: Buffer.from(keys.secretKey).toString('base64') };
      const owner = {
        apiVersion: S3CredentialsType.apiVersion,
        kind: S3CredentialsType.kind,
        name: obj.metadata.name,
        uid: obj.metadata.uid,
        controller: true,
      };
      const made = {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: secretName, namespace, annotations: { [MANAGED]: 'true' }, ownerReferences: [owner] },
        type: 'Opaque',
        data,
      };
      // One there already gets the keys written in place, as upstream's writeSecret does: never marked
      // managed nor owned, so its deletion never takes it (and its labels and annotations stay).
      if (secret) await this.client.update(Secrets, { ...secret, data: { ...secret.data, ...data } });
      else await this.client.create(Secrets, made);
    }
    if (on) {
      const { AccessKeyMetadata = [] } = await on.iam.send(new ListAccessKeysCommand({ UserName }));
      if (!AccessKeyMetadata.some((k) => k.AccessKeyId === keys.accessKey)) await on.iam.send(createAccessKey(UserName, keys));
      // A new key in the Secret replaces the one registered before.
      const before = obj.status?.accessKey as string | undefined;
      if (before && before !== keys.accessKey) await on.iam.send(new DeleteAccessKeyCommand({ UserName, AccessKeyId: before })).catch(gone);
    }
    return { accessKey: keys.accessKey, identityName: UserName, secretName };
  }

  protected async undo(obj: Obj, on: { iam: IAMClient }): Promise<void> {
    const { accessKey, identityName, secretName } = (obj.status ?? {}) as {
      accessKey?: string;
      identityName?: string;
      secretName?: string;
    };
    if (obj.spec.reclaimPolicy === 'Retain') return;
    if (accessKey && identityName)
      await on.iam.send(new DeleteAccessKeyCommand({ UserName: identityName, AccessKeyId: accessKey })).catch(gone);
    const secret = secretName
      ? await this.client.get<SecretObj>(Secrets, { namespace: obj.metadata.namespace, name: secretName })
      : undefined;
    if (secret?.metadata.annotations?.[MANAGED] === 'true')
      await this.client.delete(Secrets, { namespace: obj.metadata.namespace, name: secretName! }).catch((e: unknown) => {
        if (!isNotFound(e)) throw e;
      });
  }
}

/** CreateAccessKey with the keys it is given: SeaweedFS takes them as extra form fields. */
function createAccessKey(UserName: string, keys: S3Credentials): CreateAccessKeyCommand {
  const create = new CreateAccessKeyCommand({ UserName });
  create.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { body: string; headers: Record<string, string> };
      request.body += `&AccessKeyId=${encodeURIComponent(keys.accessKey)}&SecretAccessKey=${encodeURIComponent(keys.secretKey)}`;
      request.headers['content-length'] = String(Buffer.byteLength(request.body));
      return next(args);
    },
    { step: 'build', name: 'callerSuppliedKeys' },
  );
  return create;
}

/** A managed policy's ARN on SeaweedFS, as its IAM service spells it. */
const policyArn = (name: string): string => `arn:aws:iam:::policy/${name}`;

class PolicyStandIn extends SeaweedChild {
  protected readonly unanswered = 'PutFailed';
  // As upstream's PutPolicy: the document saved under its name, made or replaced. The server's filer
  // refuses a name outside [A-Za-z0-9_-] as the operator's gRPC call finds it refused: Failed, PutFailed.
  protected async act(obj: Obj, on: { iam: IAMClient } | undefined): Promise<Record<string, unknown>> {
    const spec = obj.spec as { policyDocument?: string };
    const PolicyDocument = spec.policyDocument ?? '{}';
    try {
      JSON.parse(PolicyDocument);
    } catch {
      throw new Waiting('Failed', 'InvalidPolicy', 'policyDocument is not JSON');
    }
    const PolicyName = this.storeName(obj);
    if (on) {
      const PolicyArn = policyArn(PolicyName);
      try {
        const existing = await on.iam.send(new GetPolicyCommand({ PolicyArn })).then(
          () => true,
          (err: Error) => (gone(err), false),
        );
        if (existing) await on.iam.send(new CreatePolicyVersionCommand({ PolicyArn, PolicyDocument, SetAsDefault: true }));
        else await on.iam.send(new CreatePolicyCommand({ PolicyName, PolicyDocument }));
      } catch (err) {
        throw new Waiting('Failed', 'PutFailed', (err as Error).message);
      }
    }
    return { policyName: PolicyName };
  }

  protected async undo(obj: Obj, on: { iam: IAMClient }): Promise<void> {
    if (obj.spec.reclaimPolicy === 'Retain') return;
    const name = (obj.status?.policyName as string | undefined) ?? this.storeName(obj);
    // Still attached to a user (a binding not undone yet), the server refuses: the finalizer stays, and it is tried again.
    await on.iam.send(new DeletePolicyCommand({ PolicyArn: policyArn(name) })).catch(gone);
  }
}

class BindingStandIn extends SeaweedChild {
  protected readonly unanswered = 'PolicyLookupFailed';
  protected async act(obj: Obj, on: { iam: IAMClient } | undefined): Promise<Record<string, unknown>> {
    const { namespace } = obj.metadata;
    const spec = obj.spec as { policyRef: { name: string }; subjects: { kind: string; name: string }[] };
    const policy = await this.sibling(S3Policies, { namespace, name: spec.policyRef.name });
    const PolicyName = policy?.status?.policyName as string | undefined;
    if (!policy || !PolicyName) throw new Waiting('Pending', 'PolicyMissing', `S3Policy ${spec.policyRef.name} is not ready`);
    const users: string[] = [];
    for (const s of spec.subjects) {
      const identity = await this.sibling(S3Identities, { namespace, name: s.name });
      const user = identity?.status?.identityName as string | undefined;
      if (!user) throw new Waiting('Pending', 'SubjectMissing', `S3Identity ${s.name} is not ready`);
      users.push(user);
    }
    if (on)
      for (const UserName of users)
        await on.iam.send(new AttachUserPolicyCommand({ UserName, PolicyArn: policyArn(PolicyName) })).catch((err: Error) => {
          throw new Waiting('Failed', 'AttachFailed', err.message);
        });
    return { attachedSubjects: users, policyName: PolicyName };
  }

  protected async undo(obj: Obj, on: { iam: IAMClient }): Promise<void> {
    if (obj.spec.reclaimPolicy === 'Retain') return;
    const { attachedSubjects = [], policyName } = (obj.status ?? {}) as { attachedSubjects?: string[]; policyName?: string };
    for (const UserName of attachedSubjects)
      if (policyName) await on.iam.send(new DetachUserPolicyCommand({ UserName, PolicyArn: policyArn(policyName) })).catch(gone);
  }
}

class LifecycleStandIn extends SeaweedChild {
  protected readonly unanswered = 'ReadFailed';
  protected override readonly releasesWithoutSeaweed = true;

  /**
   * A lifecycle policy acts on its Bucket's Seaweed; going, on the one it recorded in status as
   * upstream does, so a Bucket gone first (kept under Retain) still has its rules cleared.
   */
  protected override async seaweedOf(obj: Obj): Promise<string | undefined> {
    const recorded = obj.status?.clusterName as string | undefined;
    if (obj.metadata.deletionTimestamp) return recorded;
    const ref = (obj.spec as { bucketRef?: { name: string } }).bucketRef?.name;
    const bucket = ref ? await this.sibling(SeaweedBuckets, { namespace: obj.metadata.namespace, name: ref }) : undefined;
    return bucket?.spec.clusterRef?.name;
  }

  protected async act(obj: Obj, on: { s3: S3Client } | undefined): Promise<Record<string, unknown>> {
    const spec = obj.spec as { bucketRef: { name: string }; rules: LifecycleRule[] };
    const bucket = await this.sibling(SeaweedBuckets, { namespace: obj.metadata.namespace, name: spec.bucketRef.name });
    const Bucket = bucket?.status?.bucketName as string | undefined;
    if (!Bucket) throw new Waiting('Pending', 'BucketNotResolved', `Bucket ${spec.bucketRef.name} is not ready`);
    // The operator writes the rules where PutBucketLifecycleConfiguration does (the bucket's lifecycle XML).
    if (on)
      await on.s3.send(
        new PutBucketLifecycleConfigurationCommand({
          Bucket,
          LifecycleConfiguration: {
            Rules: spec.rules.map((r) => ({
              ID: r.id,
              Status: r.status ?? 'Enabled',
              Filter: { Prefix: r.prefix ?? '' },
              ...(r.expiration?.days ? { Expiration: { Days: r.expiration.days } } : {}),
              ...(r.noncurrentVersionExpiration?.noncurrentDays
                ? { NoncurrentVersionExpiration: { NoncurrentDays: r.noncurrentVersionExpiration.noncurrentDays } }
                : {}),
            })),
          },
        }),
      );
    return {
      bucketName: Bucket,
      clusterName: bucket?.spec.clusterRef?.name,
      clusterNamespace: obj.metadata.namespace,
      appliedRules: spec.rules.length,
    };
  }

  protected async undo(obj: Obj, on: { s3: S3Client }): Promise<void> {
    const Bucket = obj.status?.bucketName as string | undefined;
    if (obj.spec.reclaimPolicy === 'Retain' || !Bucket) return;
    await on.s3.send(new DeleteBucketLifecycleCommand({ Bucket })).catch(gone);
  }
}

interface LifecycleRule {
  id: string;
  prefix?: string;
  status?: 'Enabled' | 'Disabled';
  expiration?: { days?: number };
  noncurrentVersionExpiration?: { noncurrentDays?: number };
}

const UNITS: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40 };
/** Bytes of a resource.Quantity such as "10Gi" (the forms a Bucket's quota takes). */
function quantityBytes(q: string): number {
  const m = /^([0-9.]+)([kMGT]i?)?$/.exec(q);
  if (!m) throw new Waiting('Failed', 'InvalidQuota', `quota ${q} is not a size`);
  return Number(m[1]) * (UNITS[m[2] ?? ''] ?? NaN);
}

/** The Seaweed controller: its S3 Service, its pods (a real server with S3), its Ready condition. */
class SeaweedStandIn extends StandIn<Obj> {
  private readonly servers: Servers;

  constructor(client: KubeClient, servers: Servers) {
    super(client, Seaweeds);
    this.servers = servers;
  }

  protected override async gone(seaweed: Obj): Promise<void> {
    await this.servers.stop(seaweed);
  }

  protected async reconcile(seaweed: Obj): Promise<void> {
    if (seaweed.metadata.deletionTimestamp) return; // the garbage collector takes what it owns
    const { name, namespace, uid } = seaweed.metadata;
    const selector = { 'app.kubernetes.io/name': 'seaweedfs', 'app.kubernetes.io/instance': name, 'app.kubernetes.io/component': 's3' };
    const owner = { apiVersion: Seaweeds.apiVersion, kind: Seaweeds.kind, name, uid, controller: true, blockOwnerDeletion: true };
    await this.client
      .create(Services, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: `${name}-s3`, namespace, labels: selector, ownerReferences: [owner] },
        spec: { type: 'ClusterIP', selector, ports: [{ name: 's3-http', port: 8333, targetPort: 8333 }] },
      })
      .catch((e: unknown) => {
        if (!isAlreadyExists(e)) throw e;
      });
    // Nothing runs that would report off this machine.
    const master = (seaweed.spec as { master?: { extraArgs?: string[] } }).master;
    if (!master?.extraArgs?.includes('-telemetry=false')) {
      const said = (seaweed.status?.conditions as { reason?: string }[] | undefined)?.some((c) => c.reason === 'NotReady');
      const status = { conditions: [condition('False', 'NotReady', 'the master would report telemetry: not started here')] };
      if (!said) await this.client.updateStatus(Seaweeds, { ...seaweed, status });
      return;
    }
    // The operator names its objects after the Seaweed: StatefulSets `<n>-volume` (whose pods'
    // controller-revision-hash label, `<StatefulSet>-<hash>`, must fit 63 characters) and headless
    // Services `<n>-volume-peer`. A longer name is refused by the API server there, and nothing of
    // the Seaweed ever runs: its servers are not started here either.
    const tooLong = invalidDerivedName(name);
    if (tooLong) {
      const said = (seaweed.status?.conditions as { message?: string }[] | undefined)?.some((c) => c.message === tooLong);
      if (!said)
        await this.client.updateStatus(Seaweeds, { ...seaweed, status: { conditions: [condition('False', 'NotReady', tooLong)] } });
      return;
    }
    // The gateway's identities file (spec.s3.configSecret), as the operator mounts it for -config.
    const identities = await identitiesOf(this.client, seaweed);
    if (typeof identities === 'string') {
      const said = (seaweed.status?.conditions as { message?: string }[] | undefined)?.some((c) => c.message === identities);
      if (!said)
        await this.client.updateStatus(Seaweeds, { ...seaweed, status: { conditions: [condition('False', 'NotReady', identities)] } });
      return;
    }
    await this.servers.run(seaweed, selector, identities);
    const spec = seaweed.spec as {
      master?: { replicas?: number };
      volume?: { replicas?: number };
      filer?: { replicas?: number };
      s3?: { replicas?: number };
      admin?: object;
      worker?: { replicas?: number };
    };
    const count = (n = 1) => ({ replicas: n, readyReplicas: n });
    // As the operator counts them: the admin server (one), and workers only beside an admin.
    const workers = spec.admin && spec.worker ? { worker: count(spec.worker.replicas) } : {};
    const status = {
      // As upstream's condition: for the generation it was judged on.
      conditions: [condition('True', 'Ready', 'Master: 1/1 ready, Volume: ready, Filer: ready, S3: ready', seaweed.metadata.generation)],
      master: count(spec.master?.replicas),
      volume: count(spec.volume?.replicas),
      filer: count(spec.filer?.replicas),
      s3: count(spec.s3?.replicas),
      ...(spec.admin ? { admin: count(1) } : {}),
      ...workers,
    };
    const ready = cond(seaweed as { status?: { conditions?: Condition[] } }, 'Ready') as
      (Condition & { observedGeneration?: number }) | undefined;
    if (ready?.status !== 'True' || ready.observedGeneration !== seaweed.metadata.generation)
      await this.client.updateStatus(Seaweeds, { ...seaweed, status });
  }
}

/** What the API server answers the operator for an object it derives from this Seaweed name, when it refuses one. */
function invalidDerivedName(name: string): string | undefined {
  if (`${name}-volume-peer`.length > 63)
    return `Service "${name}-volume-peer" is invalid: metadata.name: Invalid value: must be no more than 63 characters`;
  // A revision hash of 10 characters, the longest the StatefulSet controller makes.
  if (`${name}-volume-0123456789`.length > 63)
    return `Pod "${name}-volume-0" is invalid: metadata.labels: Invalid value: "${name}-volume-0123456789": must be no more than 63 characters`;
  if (!/^[a-z]/.test(name))
    return `Service "${name}-s3" is invalid: metadata.name: Invalid value: a DNS-1035 label must start with a letter`;
  return undefined;
}

/**
 * The identities a Seaweed's S3 gateway starts with, from spec.s3.configSecret; or why it is not
 * started here. A gateway with none serves anonymous requests as an admin, and this stand-in's own
 * admin identity would hide that (it turns authentication on), so such a Seaweed is not started.
 * A Secret not there yet is waited for, as the gateway's pod waits for its volume.
 */
async function identitiesOf(client: KubeClient, seaweed: Obj): Promise<unknown[] | string> {
  const ref = (seaweed.spec as { s3?: { configSecret?: { name?: string; key?: string } } }).s3?.configSecret;
  const none = 'the S3 gateway would start with no identity and answer anonymous requests as an admin: not started here';
  if (!ref?.name || !ref.key) return none;
  const secret = await client.get<KubeObjectLike & { data?: Record<string, string> }>(Secrets, {
    namespace: seaweed.metadata.namespace,
    name: ref.name,
  });
  if (!secret) throw new Error(`the S3 gateway's config Secret ${seaweed.metadata.namespace}/${ref.name} is not there yet`);
  const parsed = JSON.parse(text(secret.data?.[ref.key])) as { identities?: unknown[] };
  return parsed.identities?.length ? parsed.identities : none;
}

/** The SeaweedFS operator: its controllers for every kind provider-rook writes. */
export class FakeSeaweedOperator {
  private readonly servers: Servers;
  private readonly parts: StandIn<Obj>[];

  constructor(client: KubeClient, opts: FakeSeaweedOperatorOptions = {}) {
    this.servers = new Servers(client, opts.s3 ?? false);
    this.parts = [
      new SeaweedStandIn(client, this.servers),
      new BucketStandIn(client, SeaweedBuckets, this.servers),
      new IdentityStandIn(client, S3Identities, this.servers),
      new CredentialsStandIn(client, S3CredentialsType, this.servers),
      new PolicyStandIn(client, S3Policies, this.servers),
      new BindingStandIn(client, S3PolicyBindings, this.servers),
      new LifecycleStandIn(client, BucketLifecyclePolicies, this.servers),
    ];
  }

  async start(): Promise<void> {
    await Promise.all(this.parts.map((p) => p.start()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.parts.map((p) => p.stop()));
    await this.servers.s3?.stopAll();
  }

  /** What a test needs to look into a store as its operator would (never what an app gets). */
  admin({ namespace, name }: Required<ObjectKey>): { endpoint: string; root: S3Credentials } {
    return this.servers.admin({ namespace, name });
  }

  /** `weed shell` on a running Seaweed's server, for a test to run there what the server runs itself. */
  shellOn(seaweed: Required<ObjectKey>, commands: string[]): Promise<string> {
    const { endpoint } = this.servers.admin(seaweed);
    if (!this.servers.s3) throw new Error('this stand-in runs no servers');
    return this.servers.s3.shellAt(endpoint, commands);
  }

  /** The servers' processes (for memory figures). */
  pids(): Promise<number[]> {
    return this.servers.s3?.pids() ?? Promise.resolve([]);
  }
}
