// TEST DOUBLE. Local control planes run no pods, so the Jobs provider-rook makes to run MinIO's
// client (mc; src/backends/shared/minio-admin.ts) cannot run there, and mc itself is never run here (its licence is
// the AGPL). This stand-in plays such a Job's pod and the Job controller:
// - it reads what the pod would: the environment (S3_ENDPOINT, BUCKET, OWNS_BUCKET, DELETE_OBJECTS,
//   POLICY_NAME) and the Secrets the Job names (the store's root user, by secretKeyRef or the mounted
//   config.env; the bucket user's keys and policy.json);
// - with { s3: true }, it does what the script's mc commands do, to the store's real S3 server
//   (reached through resolveS3Endpoint, as the pod reaches the Service): the bucket (mc mb), the user
//   with the keys provider-rook chose (mc admin user add: here IAM CreateUser and CreateAccessKey
//   with caller-supplied keys, which SeaweedFS accepts), and provider-rook's policy document (mc admin
//   policy create and attach: here PutUserPolicy, so the server judges that very document). A revoke
//   removes the user and its policy, then the bucket unless it holds objects (exit 3, which the
//   Job's FailJob rule turns into a Failed Job) or DELETE_OBJECTS says to empty it. Old versions and
//   delete markers count as objects (mc ls --versions); a bucket under object lock (OBJECT_LOCK) that
//   holds any is kept even so, as MinIO refuses mc rb --force there. A revoke also removes the users
//   of older keys (OLD_USERS, a rotation's), and a retire only those. Until the store's server
//   answers, it retries, as the script's loop does;
// - a grant whose pod finds in the user's Secret as mounted (copied once per attempt, and only the
//   copy used) keys, a policy or rules other than the
//   Job's (EXPECTED_ACCESS_KEY, the sha256 digests EXPECTED_SECRET_KEY_SHA256, EXPECTED_POLICY_SHA256
//   and EXPECTED_LIFECYCLE_SHA256) waits, as the script does, until it holds them: the Job controller's
//   status says a pod is running (active: 1), and each attempt reads the Secret again. The Job's
//   deadline is not played: it waits until the Secret matches;
// - where the grant carries the bucket's features (OBJECT_LOCK, VERSIONING, RETENTION_MODE/DAYS,
//   QUOTA, LIFECYCLE and the mounted lifecycle.json), it applies them as the feature steps' mc
//   commands would: the bucket made with object lock (mc mb --with-lock; an existing bucket is left
//   as it is, as mc leaves it), PutBucketVersioning (mc version), PutObjectLockConfiguration with or
//   without a default retention (mc retention set/clear --default), the quota by `weed shell`
//   s3.bucket.quota in MB rounded up (mc quota set; the server enforces it), and
//   PutBucketLifecycleConfiguration with the rules of lifecycle.json (mc ilm rule import);
// - without S3 it only completes the Job, and says so in the Job's status message;
// - then it writes the Job's status as the Job controller (v1.33) does: SuccessCriteriaMet and
//   Complete, or FailureTarget and Failed with reason PodFailurePolicy.
// - a test may hold Jobs (`hold`): their pods are not scheduled yet (no node free, an image still
//   pulling), so the Job has no status at all, as the Job controller leaves it then.
// Each MinIO operator stand-in runs one for the Jobs aimed at its own stores (`plays`). Never used by src/.
import { createHash } from 'node:crypto';
import {
  CreateAccessKeyCommand,
  CreateUserCommand,
  DeleteAccessKeyCommand,
  DeleteUserCommand,
  DeleteUserPolicyCommand,
  ListAccessKeysCommand,
  PutUserPolicyCommand,
} from '@aws-sdk/client-iam';
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  HeadBucketCommand,
  ListObjectVersionsCommand,
  PutBucketLifecycleConfigurationCommand,
  PutBucketVersioningCommand,
  PutObjectLockConfigurationCommand,
  type LifecycleRule,
  type S3Client,
} from '@aws-sdk/client-s3';
import { quantityBytes } from '../../src/kit/quantity.ts';
import { KEPT_EXIT_CODE, LABEL_ADMIN } from '../../src/backends/shared/minio-admin.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Jobs, Secrets } from '../../src/kit/kube/resources.ts';
import { cond } from '../kit/conditions.ts';
import { iamClient, s3Client } from '../kit/s3.ts';
import { resolveS3Endpoint } from './s3-stores.ts';
import { StandIn } from './stand-in.ts';

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}
export interface JobObj extends KubeObjectLike {
  metadata: { name: string; namespace: string; uid: string; labels?: Record<string, string>; creationTimestamp?: string };
  spec: {
    template: {
      spec: {
        containers: { name: string; env?: EnvVar[] }[];
        volumes?: { name: string; secret?: { secretName: string; items?: { key: string }[] } }[];
      };
    };
  };
  status?: { conditions?: { type: string; status: string }[]; failed?: number; active?: number; startTime?: string };
}

type SecretObj = KubeObjectLike & { data?: Record<string, string> };
/** The script waiting for the user's Secret (its pod runs), as opposed to a store not answering yet. */
class PodWaits extends Error {}
const now = (): string => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const text = (b64: string | undefined): string => Buffer.from(b64 ?? '', 'base64').toString('utf8');

/** `export KEY="value"` lines, as MinIO and the script's `.` read config.env. */
function parseEnv(body: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of body.split('\n')) {
    const m = /^\s*(?:export\s+)?([A-Z_][A-Z0-9_]*)="?([^"]*)"?\s*$/.exec(line);
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

/** Rejects with err unless it is S3's or IAM's answer of one of these names (e.g. "it exists already"). */
const unless =
  (...names: string[]) =>
  (err: Error): void => {
    if (!names.includes(err.name)) throw err;
  };

export interface FakeMinioClientOptions {
  /** Do to the stores' real S3 servers what mc would (else only complete the Jobs). */
  s3?: boolean;
  /** Which Jobs are this stand-in's (those aimed at the stores its operator stand-in plays). */
  plays(job: JobObj): boolean;
  /** `weed shell` on the server at this loopback endpoint (for quotas, which only the shell sets). */
  shell?(endpoint: string, commands: string[]): Promise<string>;
}

export class FakeMinioClient extends StandIn<JobObj> {
  private readonly opts: FakeMinioClientOptions;

  constructor(client: KubeClient, opts: FakeMinioClientOptions) {
    super(client, Jobs);
    this.opts = opts;
  }

  /** How the Job reads the store's root user: username/password keys, or a mounted config.env. */
  static rootFormat(job: JobObj): 'username-password' | 'config.env' {
    return job.spec.template.spec.containers[0]?.env?.some((e) => e.name === 'ROOT_ENV_FILE') ? 'config.env' : 'username-password';
  }

  /** Jobs whose pods are not scheduled yet; set by a test, and lifted with hold(undefined). */
  private held?: (job: JobObj) => boolean;

  /** Leaves the Jobs `which` picks unplayed (pods not scheduled yet) until lifted; the others run as usual. */
  async hold(which: ((job: JobObj) => boolean) | undefined): Promise<void> {
    this.held = which;
    if (!which) await this.resync();
  }

  protected async reconcile(job: JobObj): Promise<void> {
    const action = job.metadata.labels?.[LABEL_ADMIN];
    if ((action !== 'grant' && action !== 'revoke' && action !== 'retire') || !this.opts.plays(job)) return;
    if (this.held?.(job)) return;
    if (['Complete', 'Failed'].some((type) => cond(job, type)?.status === 'True')) return;
    const kept = this.opts.s3 ? await this.act(job, action).catch((err: unknown) => this.podWaits(job, err)) : false;
    await this.finish(job, kept, this.opts.s3 ? undefined : 'completed by a stand-in without an S3 server: nothing was made');
  }

  /** What the pod's mc commands do; true when a revoke kept a bucket that holds objects (exit 3). */
  private async act(job: JobObj, action: 'grant' | 'revoke' | 'retire'): Promise<boolean> {
    const env = await this.environment(job);
    const endpoint = await resolveS3Endpoint(env.S3_ENDPOINT!, this.client);
    const root = { accessKey: env.ROOT_USER!, secretKey: env.ROOT_PASSWORD! };
    const [s3, iam] = [s3Client(endpoint, root), iamClient(endpoint, root)];
    const Bucket = env.BUCKET!;
    try {
      if (action === 'grant') {
        // As the script: it copies the Secret as mounted (the policy was read with the environment),
        // waits until the copy holds this Job's keys, policy and rules, and uses only the copy.
        const sha = (text: string) => createHash('sha256').update(text).digest('hex');
        const expected = env.EXPECTED_ACCESS_KEY !== undefined;
        const copy = {
          accessKey: expected ? await this.mounted(job, 'accessKey') : undefined,
          secretKey: expected ? await this.mounted(job, 'secretKey') : undefined,
          lifecycle: env.LIFECYCLE === 'true' ? await this.mounted(job, 'lifecycle.json') : undefined,
        };
        if (
          (expected && copy.accessKey !== env.EXPECTED_ACCESS_KEY) ||
          (env.EXPECTED_SECRET_KEY_SHA256 !== undefined && sha(copy.secretKey ?? '') !== env.EXPECTED_SECRET_KEY_SHA256) ||
          (env.EXPECTED_POLICY_SHA256 !== undefined && sha(env.POLICY!) !== env.EXPECTED_POLICY_SHA256) ||
          (env.EXPECTED_LIFECYCLE_SHA256 !== undefined && sha(copy.lifecycle ?? '') !== env.EXPECTED_LIFECYCLE_SHA256)
        )
          throw new PodWaits("waiting for the user's Secret to hold this Job's keys, policy and rules");
        if (expected) Object.assign(env, { USER_ACCESS_KEY: copy.accessKey, USER_SECRET_KEY: copy.secretKey });
        const UserName = env.USER_ACCESS_KEY!;
        if (env.OWNS_BUCKET === 'true' && env.OBJECT_LOCK !== undefined) await this.features(env, endpoint, s3, copy.lifecycle);
        if (env.OWNS_BUCKET === 'true')
          await s3.send(new CreateBucketCommand({ Bucket })).catch(unless('BucketAlreadyOwnedByYou', 'BucketAlreadyExists'));
        await iam.send(new CreateUserCommand({ UserName })).catch(unless('EntityAlreadyExists', 'EntityAlreadyExistsException'));
        const { AccessKeyMetadata = [] } = await iam.send(new ListAccessKeysCommand({ UserName }));
        if (!AccessKeyMetadata.some((k) => k.AccessKeyId === UserName)) {
          const create = new CreateAccessKeyCommand({ UserName });
          // mc admin user add sets the keys it is given: SeaweedFS takes them as extra form fields.
          create.middlewareStack.add(
            (next) => async (args) => {
              const request = args.request as { body: string; headers: Record<string, string> };
              request.body += `&AccessKeyId=${encodeURIComponent(UserName)}&SecretAccessKey=${encodeURIComponent(env.USER_SECRET_KEY!)}`;
              request.headers['content-length'] = String(Buffer.byteLength(request.body));
              return next(args);
            },
            { step: 'build', name: 'callerSuppliedKeys' },
          );
          await iam.send(create);
        }
        await iam.send(new PutUserPolicyCommand({ UserName, PolicyName: env.POLICY_NAME!, PolicyDocument: env.POLICY! }));
        return false;
      }
      // A revoke removes the user and older generations' (OLD_USERS); a retire, only those (REMOVE_CURRENT=false).
      const users = [...(action === 'revoke' ? [env.USER_ACCESS_KEY!] : []), ...(env.OLD_USERS ?? '').split(' ').filter(Boolean)];
      const gone = unless('NoSuchEntity', 'NoSuchEntityException');
      for (const user of users) {
        await iam.send(new DeleteAccessKeyCommand({ UserName: user, AccessKeyId: user })).catch(gone);
        await iam.send(new DeleteUserPolicyCommand({ UserName: user, PolicyName: `provider-rook-${user}` })).catch(gone);
        await iam.send(new DeleteUserCommand({ UserName: user })).catch(gone);
      }
      if (env.OWNS_BUCKET !== 'true') return false;
      const exists = await s3.send(new HeadBucketCommand({ Bucket })).then(
        () => true,
        (err: Error) => (err.name === 'NotFound' || err.name === 'NoSuchBucket' ? false : Promise.reject(err)),
      );
      if (!exists) return false;
      // mc ls --versions: every version and delete marker is an object.
      const listed = await s3.send(new ListObjectVersionsCommand({ Bucket }));
      const held = [...(listed.Versions ?? []), ...(listed.DeleteMarkers ?? [])];
      if (held.length > 0) {
        if (env.OBJECT_LOCK === 'true' || env.DELETE_OBJECTS !== 'true') return true;
        await this.forceEmpty(s3, Bucket);
      }
      await s3.send(new DeleteBucketCommand({ Bucket }));
      return false;
    } finally {
      s3.destroy();
      iam.destroy();
    }
  }

  /** What MinIO does for mc rb --force before it removes the bucket: every version and delete marker goes. */
  private async forceEmpty(s3: S3Client, Bucket: string): Promise<void> {
    for (;;) {
      const { Versions = [], DeleteMarkers = [] } = await s3.send(new ListObjectVersionsCommand({ Bucket }));
      const all = [...Versions, ...DeleteMarkers];
      if (all.length === 0) return;
      for (const v of all) await s3.send(new DeleteObjectCommand({ Bucket, Key: v.Key, VersionId: v.VersionId }));
    }
  }

  /** A pod that waits for the user's Secret: the Job controller says it runs (the next look follows the stand-in's backoff). */
  private async podWaits(job: JobObj, err: unknown): Promise<never> {
    if (err instanceof PodWaits && !job.status?.active)
      await this.client.updateStatus(Jobs, { ...job, status: { ...job.status, startTime: now(), active: 1, ready: 1, terminating: 0 } });
    throw err;
  }

  /** The feature steps' mc commands, on the store's real server. */
  private async features(env: Record<string, string>, endpoint: string, s3: S3Client, lifecycle: string | undefined): Promise<void> {
    const Bucket = env.BUCKET!;
    await s3
      .send(new CreateBucketCommand({ Bucket, ObjectLockEnabledForBucket: env.OBJECT_LOCK === 'true' }))
      .catch(unless('BucketAlreadyOwnedByYou', 'BucketAlreadyExists'));
    if (env.VERSIONING)
      await s3.send(new PutBucketVersioningCommand({ Bucket, VersioningConfiguration: { Status: env.VERSIONING as 'Enabled' } }));
    if (env.RETENTION_MODE || env.OBJECT_LOCK === 'true') {
      const Mode = env.RETENTION_MODE as 'GOVERNANCE' | 'COMPLIANCE' | '';
      await s3.send(
        new PutObjectLockConfigurationCommand({
          Bucket,
          ObjectLockConfiguration: {
            ObjectLockEnabled: 'Enabled',
            ...(Mode ? { Rule: { DefaultRetention: { Mode, Days: Number(env.RETENTION_DAYS) } } } : {}),
          },
        }),
      );
    }
    if (env.QUOTA) {
      const bytes = quantityBytes(env.QUOTA.replace(/B$/, ''));
      if (bytes === undefined) throw new Error(`mc quota set: ${env.QUOTA} is not a size`);
      if (!this.opts.shell) throw new Error('no weed shell to set a quota with');
      await this.opts.shell(endpoint, [
        `s3.bucket.quota -name ${Bucket} -op set -sizeMB ${Math.ceil(bytes / 2 ** 20)}`,
        `s3.bucket.quota -name ${Bucket} -op enable`,
      ]);
    }
    if (env.LIFECYCLE === 'true') {
      const { Rules } = JSON.parse(lifecycle ?? '{}') as { Rules: LifecycleRule[] };
      await s3.send(new PutBucketLifecycleConfigurationCommand({ Bucket, LifecycleConfiguration: { Rules } }));
    }
  }

  /** A key of the user's Secret as the pod's /user volume mounts it. */
  private async mounted(job: JobObj, key: string): Promise<string> {
    const volume = job.spec.template.spec.volumes?.find((v) => v.name === 'user');
    if (!volume?.secret?.items?.some((i) => i.key === key)) throw new Error(`/user/${key} is not mounted: the script cannot read it`);
    const secret = await this.client.get<SecretObj>(Secrets, { namespace: job.metadata.namespace, name: volume.secret.secretName });
    return text(secret?.data?.[key]);
  }

  /** The container's environment as the pod sees it, with ROOT_* from config.env and POLICY from the mounted policy.json. */
  private async environment(job: JobObj): Promise<Record<string, string>> {
    const { namespace } = job.metadata;
    const secret = async (name: string): Promise<SecretObj> => {
      const found = await this.client.get<SecretObj>(Secrets, { namespace, name });
      if (!found) throw new Error(`Secret ${namespace}/${name} is missing: the pod would not start`);
      return found;
    };
    const env: Record<string, string> = {};
    for (const e of job.spec.template.spec.containers[0]?.env ?? []) {
      const ref = e.valueFrom?.secretKeyRef;
      env[e.name] = ref ? text((await secret(ref.name)).data?.[ref.key]) : (e.value ?? '');
    }
    const volume = (name: string) => job.spec.template.spec.volumes?.find((v) => v.name === name)?.secret?.secretName;
    if (env.ROOT_ENV_FILE) {
      const config = parseEnv(text((await secret(volume('root-env')!)).data?.['config.env']));
      Object.assign(env, { ROOT_USER: config.MINIO_ROOT_USER ?? '', ROOT_PASSWORD: config.MINIO_ROOT_PASSWORD ?? '' });
    }
    // Mounted for a grant or a retire only: a revoke reads nothing of the user's Secret.
    const user = volume('user');
    if (user) env.POLICY = text((await secret(user)).data?.['policy.json']);
    return env;
  }

  /** The Job's status, as the Job controller writes it when its pod succeeded or exited with KEPT_EXIT_CODE. */
  private async finish(job: JobObj, kept: boolean, note?: string): Promise<void> {
    const at = now();
    const condition = (type: string, reason: string, message: string) => ({
      type,
      status: 'True',
      reason,
      message,
      lastProbeTime: at,
      lastTransitionTime: at,
    });
    const failure = `Container mc for pod ${job.metadata.namespace}/${job.metadata.name}-x exited with code ${KEPT_EXIT_CODE} matching FailJob rule at index 0`;
    const status = kept
      ? {
          startTime: job.status?.startTime ?? at,
          failed: (job.status?.failed ?? 0) + 1,
          ready: 0,
          terminating: 0,
          uncountedTerminatedPods: {},
          conditions: [condition('FailureTarget', 'PodFailurePolicy', failure), condition('Failed', 'PodFailurePolicy', failure)],
        }
      : {
          startTime: job.status?.startTime ?? at,
          completionTime: at,
          succeeded: 1,
          // The pods that failed before stay counted: the API server refuses a counter that decreases.
          ...(job.status?.failed ? { failed: job.status.failed } : {}),
          ready: 0,
          terminating: 0,
          uncountedTerminatedPods: {},
          conditions: [
            condition('SuccessCriteriaMet', 'CompletionsReached', note ?? 'Reached expected number of succeeded pods'),
            condition('Complete', 'CompletionsReached', note ?? 'Reached expected number of succeeded pods'),
          ],
        };
    await this.client.updateStatus(Jobs, { ...job, status });
  }
}
