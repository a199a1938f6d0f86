// A bucket user in a MinIO store (src/backends/shared/minio-admin.ts), as the unit tests of its Jobs
// and their scripts build one: a Rook MinIO store `store` in namespace tns, owning bucket app-b-1.
import type { BucketUser } from '../../src/backends/shared/minio-admin.ts';

export const testBucketUser = (over: Partial<BucketUser> = {}): BucketUser => ({
  base: 'store',
  namespace: 'tns',
  endpoint: 'http://store-s3.tns.svc.cluster.local:9000',
  root: { name: 'store-access-keys', format: 'username-password' },
  bucket: 'app-b-1',
  access: 'ReadWrite',
  ownsBucket: true,
  keys: { accessKey: 'AK', secretKey: 'SK-secret' },
  ...over,
});
