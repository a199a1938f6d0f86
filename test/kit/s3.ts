// S3 from the tests, the e2e specs and hack/, through the AWS SDK for JavaScript (a dev dependency):
// clients for a store's S3 and IAM APIs, and the round trip that proves a set of credentials works.
import { IAMClient } from '@aws-sdk/client-iam';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Agent } from 'node:http';
import { Agent as TlsAgent } from 'node:https';
import { serverComplaints, type S3Credentials } from './s3-server.ts';
import { s3Lookup } from '../fakes/s3-stores.ts';

const common = (endpoint: string, { accessKey, secretKey }: S3Credentials) => ({
  endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: accessKey, secretAccessKey: secretKey },
});

/** A client of one S3 endpoint: path-style (no bucket.host DNS), as in-cluster stores are reached. `ca`: the only CA an https endpoint is trusted by. */
export function s3Client(endpoint: string, creds: S3Credentials, opts: { ca?: string } = {}): S3Client {
  return new S3Client({
    ...common(endpoint, creds),
    forcePathStyle: true,
    // Names the stand-ins publish (a Gateway's host names) resolve as public DNS would; the Host sent is the name.
    requestHandler: {
      // A request a loaded server never answers fails and is tried again (the SDK's three attempts),
      // instead of holding its test until the test's own timeout, which says nothing of where.
      connectionTimeout: 5_000,
      requestTimeout: 15_000,
      httpAgent: new Agent({ lookup: s3Lookup } as ConstructorParameters<typeof Agent>[0]),
      httpsAgent: new TlsAgent({ lookup: s3Lookup, ...(opts.ca ? { ca: opts.ca } : {}) } as ConstructorParameters<typeof TlsAgent>[0]),
    },
    // Checksums only where S3 requires them: the SDK's default CRC32 trailers on every PUT are
    // unknown to older servers, such as the MinIO in rook/minio:v1.2.7 (the kind path).
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

/** A client of the IAM API a server serves on its S3 port (SeaweedFS does). */
export function iamClient(endpoint: string, creds: S3Credentials): IAMClient {
  return new IAMClient(common(endpoint, creds));
}

/** The error name of what a request was refused with (AccessDenied, InvalidAccessKeyId, ...); throws if it succeeded. */
export async function refusal(request: Promise<unknown>): Promise<string> {
  try {
    await request;
  } catch (err) {
    return (err as Error).name;
  }
  throw new Error('the request succeeded');
}

/** A server's own account of a request it failed (a 5xx), when it is one of ours. */
function failedOn(endpoint: string, err: Error): string {
  const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode ?? 0;
  return status >= 500 ? serverComplaints(endpoint) : '';
}

/** What a server answers these credentials in a bucket: a PUT, a LIST and a GET of one object, each 'allowed' or the error's name. */
export async function answersIn(
  endpoint: string,
  creds: S3Credentials,
  bucket: string,
): Promise<{ put: string; list: string; get: string }> {
  const s3 = s3Client(endpoint, creds);
  const answer = (request: Promise<unknown>): Promise<string> =>
    request.then(
      () => 'allowed',
      (err: Error) => err.name + failedOn(endpoint, err),
    );
  try {
    return {
      put: await answer(s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'x', Body: 'x' }))),
      list: await answer(s3.send(new ListObjectsV2Command({ Bucket: bucket }))),
      get: await answer(s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'x' }))),
    };
  } finally {
    s3.destroy();
  }
}

/**
 * PUT, GET, LIST and DELETE of one object in bucket with these credentials (making the bucket first
 * when asked). Throws naming the step that failed.
 */
export async function roundTrip(
  endpoint: string,
  creds: S3Credentials,
  bucket: string,
  opts: { makeBucket?: boolean; ca?: string } = {},
): Promise<void> {
  const s3 = s3Client(endpoint, creds, { ca: opts.ca });
  const Key = `round-trip-${Date.now()}.txt`;
  const body = `hello from provider-rook at ${new Date().toISOString()}`;
  const step = async <T>(what: string, request: Promise<T>): Promise<T> =>
    request.catch((err: Error) => {
      throw new Error(`S3 ${what} in ${endpoint}/${bucket} failed: ${err.name}: ${err.message}${failedOn(endpoint, err)}`);
    });
  try {
    if (opts.makeBucket) await step('make bucket', s3.send(new CreateBucketCommand({ Bucket: bucket })));
    await step('PUT', s3.send(new PutObjectCommand({ Bucket: bucket, Key, Body: body })));
    const got = await step('GET', s3.send(new GetObjectCommand({ Bucket: bucket, Key })));
    const text = await got.Body!.transformToString();
    if (text !== body) throw new Error(`S3 GET returned ${JSON.stringify(text)}`);
    const listed = await step('LIST', s3.send(new ListObjectsV2Command({ Bucket: bucket })));
    if (!listed.Contents?.some((o) => o.Key === Key)) throw new Error(`S3 LIST of ${bucket} does not show ${Key}`);
    await step('DELETE', s3.send(new DeleteObjectCommand({ Bucket: bucket, Key })));
    const after = await step('LIST', s3.send(new ListObjectsV2Command({ Bucket: bucket })));
    if (after.Contents?.some((o) => o.Key === Key)) throw new Error(`S3 LIST of ${bucket} still shows ${Key} after DELETE`);
  } finally {
    s3.destroy();
  }
}
