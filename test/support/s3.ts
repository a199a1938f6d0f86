// Just enough S3 for an e2e round-trip (make bucket, put, get) against MinIO: AWS Signature V4
// with node:crypto, so no SDK is needed for three requests.
import { createHash, createHmac } from 'node:crypto';

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string): Buffer => createHmac('sha256', key).update(data).digest();

export interface SignInput {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body: string | Buffer;
  accessKey: string;
  secretKey: string;
  region: string;
  service: string;
  /** "YYYYMMDDTHHMMSSZ" */
  amzDate: string;
}

/** The Authorization header for a request whose headers already include host and x-amz-date. */
export function signV4(i: SignInput): string {
  const headers = Object.entries(i.headers)
    .map(([k, v]) => [k.toLowerCase(), v.trim()] as const)
    .sort(([a], [b]) => (a < b ? -1 : 1));
  const signedHeaders = headers.map(([k]) => k).join(';');
  const query = [...i.url.searchParams]
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    .sort()
    .join('&');
  const canonical = [
    i.method,
    i.url.pathname || '/',
    query,
    ...headers.map(([k, v]) => `${k}:${v}`),
    '',
    signedHeaders,
    i.headers['x-amz-content-sha256'] ?? sha256(i.body),
  ].join('\n');
  const day = i.amzDate.slice(0, 8);
  const scope = `${day}/${i.region}/${i.service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', i.amzDate, scope, sha256(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${i.secretKey}`, day), i.region), i.service), 'aws4_request');
  return `AWS4-HMAC-SHA256 Credential=${i.accessKey}/${scope}, SignedHeaders=${signedHeaders}, Signature=${createHmac('sha256', key).update(toSign).digest('hex')}`;
}

export async function s3Request(
  endpoint: string,
  method: string,
  objectPath: string,
  creds: { accessKey: string; secretKey: string },
  body = '',
): Promise<Response> {
  const url = new URL(objectPath, endpoint);
  const amzDate = new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const headers: Record<string, string> = { host: url.host, 'x-amz-date': amzDate, 'x-amz-content-sha256': sha256(body) };
  const authorization = signV4({ method, url, headers, body, ...creds, region: 'us-east-1', service: 's3', amzDate });
  const { host: _host, ...sent } = headers;
  return fetch(url, { method, headers: { ...sent, authorization }, body: method === 'GET' ? undefined : body });
}
