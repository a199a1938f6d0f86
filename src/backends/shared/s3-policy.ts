// A bucket user's policy: that one bucket and its objects, nothing else, as the store's server judges
// it (IAM's JSON policy language, which MinIO and SeaweedFS both enforce).
import type { AccessMode } from '../../runtime/claims/access.ts';

const BUCKET_ACTIONS: Record<AccessMode, string[]> = {
  ReadWrite: ['s3:ListBucket', 's3:GetBucketLocation', 's3:ListBucketMultipartUploads'],
  ReadOnly: ['s3:ListBucket', 's3:GetBucketLocation'],
  WriteOnly: ['s3:GetBucketLocation', 's3:ListBucketMultipartUploads'],
};
const OBJECT_ACTIONS: Record<AccessMode, string[]> = {
  ReadWrite: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts'],
  ReadOnly: ['s3:GetObject'],
  WriteOnly: ['s3:PutObject', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts'],
};

/**
 * What a bucket with features (versions, locks) lets its user do with them, besides. Only actions
 * every server knows: SeaweedFS refuses a whole policy that names one it does not (it has none for
 * reading lifecycle rules).
 */
const FEATURE_BUCKET_ACTIONS: Record<AccessMode, string[]> = {
  ReadWrite: ['s3:ListBucketVersions', 's3:GetBucketVersioning', 's3:GetBucketObjectLockConfiguration'],
  ReadOnly: ['s3:ListBucketVersions', 's3:GetBucketVersioning', 's3:GetBucketObjectLockConfiguration'],
  WriteOnly: [],
};
const FEATURE_OBJECT_ACTIONS: Record<AccessMode, string[]> = {
  ReadWrite: [
    's3:GetObjectVersion',
    's3:DeleteObjectVersion',
    's3:PutObjectRetention',
    's3:GetObjectRetention',
    's3:PutObjectLegalHold',
    's3:GetObjectLegalHold',
  ],
  ReadOnly: ['s3:GetObjectVersion', 's3:GetObjectRetention', 's3:GetObjectLegalHold'],
  WriteOnly: ['s3:PutObjectRetention', 's3:PutObjectLegalHold'],
};

/**
 * The user's policy: this one bucket and its objects, nothing else. The server judges it. With
 * `features`, the user also reaches the bucket's versions and locks (never to bypass a lock:
 * s3:BypassGovernanceRetention is not granted).
 */
export function policyDocument(bucket: string, access: AccessMode, opts: { features?: boolean } = {}): object {
  const extra = opts.features
    ? { bucket: FEATURE_BUCKET_ACTIONS[access], object: FEATURE_OBJECT_ACTIONS[access] }
    : { bucket: [], object: [] };
  return {
    Version: '2012-10-17',
    Statement: [
      { Effect: 'Allow', Action: [...BUCKET_ACTIONS[access], ...extra.bucket], Resource: [`arn:aws:s3:::${bucket}`] },
      { Effect: 'Allow', Action: [...OBJECT_ACTIONS[access], ...extra.object], Resource: [`arn:aws:s3:::${bucket}/*`] },
    ],
  };
}
