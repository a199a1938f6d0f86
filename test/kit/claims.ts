// A Bucket claim as the integration tests make and read it: the claim itself, waiting until it is
// Bound and Ready, and what its connection Secret gives an app in the target (its keys, bucket, and
// the loopback endpoint its Service's name leads to there).
import { BucketClasses, Buckets } from '../../src/app.ts';
import type { Bucket } from '../../src/apis/storage.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import type { ObjectKey } from '../../src/kit/kube/object-key.ts';
import { Secrets, type ResourceType } from '../../src/kit/kube/resources.ts';
import { secretText } from '../../src/runtime/providers/credentials.ts';
import { resolveS3Endpoint } from '../fakes/s3-stores.ts';
import { eventually } from './eventually.ts';
import { cond } from './conditions.ts';

/** The BucketClass `at`, the portable name an app team's claims use, for the class `classAt` of kind `type`. */
export const bucketClass = (at: Required<ObjectKey>, type: ResourceType, classAt: Required<ObjectKey>): KubeObjectLike =>
  ({
    apiVersion: BucketClasses.apiVersion,
    kind: 'BucketClass',
    metadata: { name: at.name, namespace: at.namespace },
    classRef: { apiVersion: type.apiVersion, kind: type.kind, name: classAt.name, namespace: classAt.namespace },
  }) as KubeObjectLike;

/** A Bucket of class `className` whose Secret is `<name>-s3`; `spec` adds to its spec. */
export const bucketClaim = ({ namespace, name }: Required<ObjectKey>, className: string, spec: object = {}): KubeObjectLike =>
  ({
    apiVersion: Buckets.apiVersion,
    kind: 'Bucket',
    metadata: { name, namespace },
    spec: { classRef: { name: className }, writeConnectionSecretToRef: { name: `${name}-s3` }, ...spec },
  }) as KubeObjectLike;

/** The claim once it is Bound and Ready; a timeout says what its conditions were. */
export const boundBucket = (control: KubeClient, { namespace, name }: Required<ObjectKey>, timeoutMs = 60_000): Promise<Bucket> =>
  eventually(
    async () => {
      const b = await control.get<Bucket>(Buckets, { namespace, name });
      const ready = cond(b, 'Ready');
      return b?.status?.bindingPhase === 'Bound' && ready?.status === 'True' ? b : undefined;
    },
    `Bucket ${namespace}/${name} to be Bound and Ready`,
    { timeoutMs, explain: async () => JSON.stringify((await control.get<Bucket>(Buckets, { namespace, name }))?.status?.conditions) },
  );

/** The claim's Secret `<name>-s3`, and its endpoint as an app in `target` reaches it. */
export async function claimAccess(control: KubeClient, target: KubeClient, { namespace, name }: Required<ObjectKey>) {
  const keys = secretText(
    (await control.get<KubeObjectLike & { data?: Record<string, string> }>(Secrets, { namespace, name: `${name}-s3` }))!.data,
  );
  const local = await resolveS3Endpoint(keys.endpoint!, target);
  return { keys, local, creds: { accessKey: keys.AWS_ACCESS_KEY_ID!, secretKey: keys.AWS_SECRET_ACCESS_KEY! }, bucket: keys.BUCKET_NAME! };
}

/** The claim's Synced condition once it is False: why it was refused. */
export const refusedBucket = (control: KubeClient, { namespace, name }: Required<ObjectKey>, timeoutMs = 30_000) =>
  eventually(
    async () => {
      const c = cond(await control.get<Bucket>(Buckets, { namespace, name }), 'Synced');
      return c?.status === 'False' ? c : undefined;
    },
    `Bucket ${namespace}/${name} to be refused`,
    timeoutMs,
  );
