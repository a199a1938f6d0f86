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

/** The user's policy: this one bucket and its objects, nothing else. The server judges it. */
export function policyDocument(bucket: string, access: AccessMode): object {
  return {
    Version: '2012-10-17',
    Statement: [
      { Effect: 'Allow', Action: BUCKET_ACTIONS[access], Resource: [`arn:aws:s3:::${bucket}`] },
      { Effect: 'Allow', Action: OBJECT_ACTIONS[access], Resource: [`arn:aws:s3:::${bucket}/*`] },
    ],
  };
}
