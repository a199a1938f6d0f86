// The keys every backend's connection Secret carries, spelled out: the short ones
// (endpoint, username, password, bucket), the AWS SDKs' environment names and Rook's
// ObjectBucketClaim names.
/** The names every claim's Secret carries, sorted: every claim is a bucket. */
export const S3_KEY_NAMES = [
  'AWS_ACCESS_KEY_ID',
  'AWS_DEFAULT_REGION',
  'AWS_ENDPOINT_URL',
  'AWS_REGION',
  'AWS_S3_ADDRESSING_STYLE',
  'AWS_SECRET_ACCESS_KEY',
  'BUCKET_HOST',
  'BUCKET_NAME',
  'BUCKET_PORT',
  'bucket',
  'endpoint',
  'password',
  'username',
];

export function s3Keys(
  endpoint: string,
  { host, port }: { host: string; port: string },
  access: { user?: string; pass?: string; bucket?: string } = {},
): Record<string, string> {
  const { user, pass, bucket } = access;
  return {
    endpoint,
    AWS_ENDPOINT_URL: endpoint,
    AWS_REGION: 'us-east-1',
    AWS_DEFAULT_REGION: 'us-east-1',
    BUCKET_HOST: host,
    BUCKET_PORT: port,
    AWS_S3_ADDRESSING_STYLE: 'path',
    ...(user && pass ? { username: user, password: pass, AWS_ACCESS_KEY_ID: user, AWS_SECRET_ACCESS_KEY: pass } : {}),
    ...(bucket ? { bucket, BUCKET_NAME: bucket } : {}),
  };
}
