// What every backend's connection Secret holds, so an app reads it the same way whatever the
// backend: the short keys (endpoint, username, password), the names the AWS SDKs read from
// the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL), and Rook's
// ObjectBucketClaim names (BUCKET_HOST, BUCKET_PORT, BUCKET_NAME), so `envFrom` works with any S3
// client, and AWS_S3_ADDRESSING_STYLE: a Service's DNS name has no per-bucket host names, so the
// bucket goes in the path. A consumer's copy holds these same keys. Keys without a value are left out.
import type { ConnectionDetails } from '../../runtime/managed/types.ts';

export interface S3Access {
  /** e.g. http://store-s3.minio.svc.cluster.local:9000 */
  endpoint: string;
  accessKey?: string;
  secretKey?: string;
  bucket?: string;
  /** The store's region, when it names one (Rook's ObjectBucket does); else the one MinIO and SeaweedFS answer to. */
  region?: string;
}

/** What MinIO and SeaweedFS take when no region is configured, and what SigV4 clients sign with by default. */
export const DEFAULT_REGION = 'us-east-1';

/** The keys of s3ConnectionDetails that say where the store is: withheld together when that place cannot be proven. */
export const S3_ENDPOINT_KEYS = ['endpoint', 'AWS_ENDPOINT_URL', 'BUCKET_HOST', 'BUCKET_PORT'];

/** The keys of s3ConnectionDetails that hold a user's keys: withheld together when those cannot be vouched for. */
export const S3_KEY_KEYS = ['username', 'password', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'];

export function s3ConnectionDetails({ endpoint, accessKey, secretKey, bucket, region }: S3Access): ConnectionDetails {
  const url = new URL(endpoint);
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  const where = region || DEFAULT_REGION;
  const details: ConnectionDetails = {
    endpoint,
    AWS_ENDPOINT_URL: endpoint,
    AWS_REGION: where,
    AWS_DEFAULT_REGION: where,
    BUCKET_HOST: url.hostname,
    BUCKET_PORT: port,
    AWS_S3_ADDRESSING_STYLE: 'path',
  };
  if (accessKey && secretKey) {
    Object.assign(details, { username: accessKey, password: secretKey, AWS_ACCESS_KEY_ID: accessKey, AWS_SECRET_ACCESS_KEY: secretKey });
  }
  if (bucket) Object.assign(details, { bucket, BUCKET_NAME: bucket });
  return details;
}
