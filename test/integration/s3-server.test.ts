// The S3 server the stand-ins run (SeaweedFS's weed mini) is a real one, through the real SDK: it
// makes users through the IAM API on its S3 port and enforces their policies, a deleted key is
// refused at once, and it keeps to this machine (loopback listeners only, telemetry off).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  CreateAccessKeyCommand,
  CreateUserCommand,
  DeleteAccessKeyCommand,
  PutUserPolicyCommand,
  type IAMClient,
} from '@aws-sdk/client-iam';
import { CreateBucketCommand, GetObjectCommand, ListBucketsCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startS3Server, type S3Credentials, type S3Server } from '../kit/s3-server.ts';
import { randomKey } from '../../src/backends/shared/random.ts';
import { iamClient, refusal, roundTrip, s3Client } from '../kit/s3.ts';

const root = { accessKey: randomKey(20), secretKey: randomKey(40) };
let dir: string;
let server: S3Server;
let s3: S3Client;
let iam: IAMClient;
const clients: { destroy(): void }[] = [];

/** A new IAM user with one inline policy of these statements; its keys. */
async function user(name: string, ...statements: { Action: string[]; Resource: string[] }[]): Promise<S3Credentials> {
  await iam.send(new CreateUserCommand({ UserName: name }));
  const PolicyDocument = JSON.stringify({ Version: '2012-10-17', Statement: statements.map((s) => ({ Effect: 'Allow', ...s })) });
  await iam.send(new PutUserPolicyCommand({ UserName: name, PolicyName: `${name}-policy`, PolicyDocument }));
  const { AccessKey } = await iam.send(new CreateAccessKeyCommand({ UserName: name }));
  return { accessKey: AccessKey!.AccessKeyId!, secretKey: AccessKey!.SecretAccessKey! };
}

const clientOf = (creds: S3Credentials): S3Client => {
  const c = s3Client(server.endpoint, creds);
  clients.push(c);
  return c;
};

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'provider-rook-s3-test-'));
  server = await startS3Server({ dir, root });
  s3 = clientOf(root);
  iam = iamClient(server.endpoint, root);
  clients.push(iam);
  for (const Bucket of ['bucket-a', 'bucket-b']) await s3.send(new CreateBucketCommand({ Bucket }));
  await s3.send(new PutObjectCommand({ Bucket: 'bucket-b', Key: 'secret.txt', Body: 'not for a' }));
}, 90_000);

afterAll(async () => {
  for (const c of clients) c.destroy();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('the S3 server', () => {
  it('listens on 127.0.0.1 only, talks to nothing else, and runs with telemetry off', () => {
    const args = readFileSync(`/proc/${server.pid}/cmdline`, 'utf8').split('\0');
    expect(args).toEqual(expect.arrayContaining(['-master.telemetry=false', '-ip=127.0.0.1', '-ip.bind=127.0.0.1']));
    const sockets = socketsOf(server.pid);
    expect(sockets.filter((s) => s.listening).length).toBeGreaterThanOrEqual(8); // master, volume, filer, s3 and their gRPC
    expect(sockets.filter((s) => s.listening && s.local !== '127.0.0.1')).toEqual([]);
    expect(sockets.filter((s) => !s.listening && s.remote !== '127.0.0.1')).toEqual([]);
  });

  it('lets a user allowed only bucket-a PUT, GET, LIST and DELETE in it, and refuses it bucket-b', async () => {
    const onlyA = await user('only-a', { Action: ['s3:*'], Resource: ['arn:aws:s3:::bucket-a', 'arn:aws:s3:::bucket-a/*'] });
    await roundTrip(server.endpoint, onlyA, 'bucket-a');
    const client = clientOf(onlyA);
    expect(await refusal(client.send(new PutObjectCommand({ Bucket: 'bucket-b', Key: 'x.txt', Body: 'x' })))).toBe('AccessDenied');
    expect(await refusal(client.send(new GetObjectCommand({ Bucket: 'bucket-b', Key: 'secret.txt' })))).toBe('AccessDenied');
    expect(await refusal(client.send(new CreateBucketCommand({ Bucket: 'bucket-c' })))).toBe('AccessDenied');
  });

  it('refuses PUT to a user whose policy allows only s3:GetObject and s3:ListBucket', async () => {
    await s3.send(new PutObjectCommand({ Bucket: 'bucket-a', Key: 'readme.txt', Body: 'read me' }));
    const reader = clientOf(
      await user('reader', { Action: ['s3:GetObject', 's3:ListBucket'], Resource: ['arn:aws:s3:::bucket-a', 'arn:aws:s3:::bucket-a/*'] }),
    );
    const got = await reader.send(new GetObjectCommand({ Bucket: 'bucket-a', Key: 'readme.txt' }));
    expect(await got.Body!.transformToString()).toBe('read me');
    expect(await refusal(reader.send(new PutObjectCommand({ Bucket: 'bucket-a', Key: 'w.txt', Body: 'w' })))).toBe('AccessDenied');
  });

  it('refuses a deleted access key on the very next request', async () => {
    const creds = await user('revoked', { Action: ['s3:*'], Resource: ['arn:aws:s3:::bucket-a', 'arn:aws:s3:::bucket-a/*'] });
    const client = clientOf(creds);
    await client.send(new GetObjectCommand({ Bucket: 'bucket-a', Key: 'readme.txt' }));
    await iam.send(new DeleteAccessKeyCommand({ UserName: 'revoked', AccessKeyId: creds.accessKey }));
    expect(await refusal(client.send(new GetObjectCommand({ Bucket: 'bucket-a', Key: 'readme.txt' })))).toBe('InvalidAccessKeyId');
    expect(await refusal(client.send(new ListBucketsCommand({})))).toBe('InvalidAccessKeyId');
  });
});

describe('an S3 server started again in the folder a first start began', () => {
  // As startS3Server does when a port it chose was taken meanwhile: the master keeps its state in a
  // folder named after its port, so the second one mints another topology id than the volumes hold.
  it('grows volumes for a new bucket all the same: its first PUT is not refused for a frozen growth', async () => {
    const again = mkdtempSync(path.join(tmpdir(), 'provider-rook-s3-again-'));
    try {
      await (await startS3Server({ dir: again, root })).stop();
      const second = await startS3Server({ dir: again, root });
      try {
        await roundTrip(second.endpoint, root, 'bucket-after', { makeBucket: true });
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(again, { recursive: true, force: true });
    }
  }, 90_000);
});

/** The TCP sockets a process holds, from /proc: IPv4 addresses as text, anything else as its hex. */
function socketsOf(pid: number): { listening: boolean; local: string; remote: string }[] {
  const inodes = new Set(
    readdirSync(`/proc/${pid}/fd`)
      .map((fd) => {
        try {
          return /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
        } catch {
          return undefined; // closed meanwhile
        }
      })
      .filter((inode) => inode !== undefined),
  );
  const ip = (hex: string): string => {
    const v4 = hex.length === 8 ? hex : /^0{16}FFFF0{4}([0-9A-F]{8})$/.exec(hex)?.[1]; // IPv4, or IPv4-mapped IPv6
    return v4 ? [6, 4, 2, 0].map((i) => parseInt(v4.slice(i, i + 2), 16)).join('.') : hex;
  };
  return ['tcp', 'tcp6'].flatMap((file) =>
    readFileSync(`/proc/${pid}/net/${file}`, 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      .filter((f) => inodes.has(f[9]!))
      .map((f) => ({ listening: f[3] === '0A', local: ip(f[1]!.split(':')[0]!), remote: ip(f[2]!.split(':')[0]!) })),
  );
}
