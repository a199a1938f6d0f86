// Where a Provider's endpoint may point: literal addresses when the Secret is read, and every address
// a host name resolves to at each new connection. Names resolve through a fake resolver only: no
// packet leaves this machine (the one real connection goes to a server on 127.0.0.1).
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { LookupAddress } from 'node:dns';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, LookupFunction, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { makeCa } from '../../../kit/pki.ts';
import { ReasonedError } from '../../../../src/kit/conditions.ts';
import { KubeClient } from '../../../../src/kit/kube/client.ts';
import {
  credentialsFromSecret,
  guardedLookup,
  refusedAddress,
  type EndpointPolicy,
  type EndpointRange,
} from '../../../../src/runtime/providers/credentials.ts';

let dir: string;
let caPem: string;
beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'endpoints-test-'));
  caPem = readFileSync((await makeCa(path.join(dir, 'ca'), 'endpoints-test')).cert, 'utf8');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const enc = (o: Record<string, string>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));

/** A resolver whose answers the test sets, recording what it was asked. */
function fakeResolver(answers: Record<string, string[]>) {
  const asked: { hostname: string; all?: boolean }[] = [];
  const lookup: LookupFunction = (hostname, options, callback) => {
    asked.push({ hostname, all: options.all });
    const found = answers[hostname];
    if (!found) return callback(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }), '');
    const all = found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    if (options.all) callback(null, all);
    else callback(null, all[0]!.address, all[0]!.family);
  };
  return { answers, asked, lookup };
}

/** What a lookup calls back with. */
function resolve(
  lookup: LookupFunction,
  hostname: string,
  all = true,
): Promise<{ err: (Error & { reason?: string }) | null; address: string | LookupAddress[]; family?: number }> {
  return new Promise((done) => lookup(hostname, { all }, (err, address, family) => done({ err, address, family })));
}

describe('refusedAddress', () => {
  it.each([
    '169.254.169.254',
    '169.254.0.1',
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe',
    '::169.254.169.254',
    '64:ff9b::169.254.169.254',
    'fe80::1',
    'febf::1',
    'fd00:ec2::254',
    '0.0.0.0',
    '0.1.2.3',
    '::',
  ])('always refuses %s, naming the rule and not the address', (address) => {
    const why = refusedAddress(address, ['loopback', 'private']);
    expect(why).toBe('a link-local, unspecified or cloud metadata address, which provider-rook never calls');
    expect(refusedAddress(address)).toBe(why);
  });

  it.each<[EndpointRange, string[]]>([
    ['loopback', ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']],
    [
      'private',
      [
        '10.0.0.1',
        '172.16.0.1',
        '172.31.255.255',
        '192.168.1.1',
        '100.64.0.1',
        '100.127.255.255',
        'fc00::1',
        'fd12:3456::1',
        '::ffff:10.1.2.3',
      ],
    ],
  ])('allows %s addresses by default and refuses them when the range is listed', (range, addresses) => {
    for (const address of addresses) {
      expect(refusedAddress(address)).toBeUndefined();
      expect(refusedAddress(address, [range])).toBe(`a ${range} address, which provider-rook's --refuse-endpoint-ranges refuses`);
      expect(refusedAddress(address, [range === 'private' ? 'loopback' : 'private'])).toBeUndefined();
    }
  });

  it.each(['8.8.8.8', '172.32.0.1', '100.128.0.1', '192.169.0.1', '2001:db8::1', 'fe00::1'])(
    'allows the public address %s with every range refused',
    (address) => {
      expect(refusedAddress(address, ['loopback', 'private'])).toBeUndefined();
    },
  );
});

describe('guardedLookup', () => {
  const refusal = (why: string) => new ReasonedError('EndpointNotAllowed', `refused: ${why}`);

  it('asks for every address and refuses the name when any one is refused', async () => {
    const fake = fakeResolver({
      mixed: ['127.0.0.1', '169.254.169.254'],
      mapped: ['::ffff:169.254.169.254'],
      imds6: ['fd00:ec2::254'],
      ll6: ['::1', 'fe80::1'],
    });
    const lookup = guardedLookup(refusal, [], fake.lookup);
    for (const name of ['mixed', 'mapped', 'imds6', 'll6']) {
      for (const all of [true, false]) {
        const { err } = await resolve(lookup, name, all);
        expect(err?.reason).toBe('EndpointNotAllowed');
        expect(err?.message).toMatch(/link-local, unspecified or cloud metadata address/);
      }
    }
    expect(fake.asked.every((a) => a.all === true)).toBe(true);
  });

  it('hands on the addresses in the shape asked for when all are allowed', async () => {
    const fake = fakeResolver({ both: ['127.0.0.1', '::1'] });
    const lookup = guardedLookup(refusal, [], fake.lookup);
    expect(await resolve(lookup, 'both', true)).toEqual({
      err: null,
      address: [
        { address: '127.0.0.1', family: 4 },
        { address: '::1', family: 6 },
      ],
      family: undefined,
    });
    expect(await resolve(lookup, 'both', false)).toEqual({ err: null, address: '127.0.0.1', family: 4 });
  });

  it('refuses the ranges it is given', async () => {
    const fake = fakeResolver({ internal: ['10.0.0.5'], local: ['203.0.113.7', '::1'] });
    expect((await resolve(guardedLookup(refusal, ['private'], fake.lookup), 'internal')).err?.message).toMatch(/a private address/);
    expect((await resolve(guardedLookup(refusal, ['loopback'], fake.lookup), 'local')).err?.message).toMatch(/a loopback address/);
    expect((await resolve(guardedLookup(refusal, ['loopback'], fake.lookup), 'internal')).err).toBeNull();
  });

  it('checks again on every call: a name whose answer changes (DNS rebinding) is refused then', async () => {
    const fake = fakeResolver({ rebinds: ['127.0.0.1'] });
    const lookup = guardedLookup(refusal, [], fake.lookup);
    expect((await resolve(lookup, 'rebinds')).err).toBeNull();
    fake.answers.rebinds = ['169.254.169.254'];
    expect((await resolve(lookup, 'rebinds')).err?.reason).toBe('EndpointNotAllowed');
    expect(fake.asked).toHaveLength(2);
  });

  it("passes a resolver's failure on, and treats no address as one", async () => {
    const fake = fakeResolver({ empty: [] });
    const lookup = guardedLookup(refusal, [], fake.lookup);
    expect((await resolve(lookup, 'unknown')).err).toMatchObject({ code: 'ENOTFOUND' });
    expect((await resolve(lookup, 'empty')).err).toMatchObject({ code: 'ENOTFOUND' });
  });
});

describe("a Provider Secret's endpoint", () => {
  const kubeconfig = (server: string, user: Record<string, string> = {}): string =>
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'c',
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
      clusters: [{ name: 'c', cluster: { server } }],
      users: [{ name: 'u', user }],
    });
  const thrown = (keys: Record<string, string>, policy?: EndpointPolicy): { reason?: string; message: string } => {
    try {
      credentialsFromSecret('ns/s', enc(keys), { endpoints: policy });
    } catch (err) {
      return err as { reason?: string; message: string };
    }
    throw new Error('expected an error');
  };

  it('refuses a literal address in a refused range when the Secret is read', () => {
    const loopback = thrown({ endpoint: 'https://127.0.0.1:6443', clusterCA: caPem, token: 't' }, { refuseRanges: ['loopback'] });
    expect(loopback).toMatchObject({
      reason: 'InvalidCredentials',
      message: "key 'endpoint' of Secret ns/s is a loopback address, which provider-rook's --refuse-endpoint-ranges refuses",
    });
    const priv = thrown({ kubeconfig: kubeconfig('https://[fd12::1]:6443', { token: 't' }) }, { refuseRanges: ['private'] });
    expect(priv).toMatchObject({
      reason: 'InvalidCredentials',
      message:
        "key 'kubeconfig' of Secret ns/s has clusters[0].cluster.server that is a private address, which provider-rook's --refuse-endpoint-ranges refuses",
    });
    expect(thrown({ endpoint: 'https://[fd00:ec2::254]', clusterCA: caPem, token: 't' }).message).toMatch(/cloud metadata address/);
  });

  it('refuses plain http unless --allow-plain-http, and with a credential always', () => {
    const off = thrown({ kubeconfig: kubeconfig('http://127.0.0.1:8080') });
    expect(off).toMatchObject({
      reason: 'InvalidCredentials',
      message:
        "key 'kubeconfig' of Secret ns/s has clusters[0].cluster.server that uses plain http, which provider-rook refuses unless started with --allow-plain-http",
    });
    expect(
      credentialsFromSecret('ns/s', enc({ kubeconfig: kubeconfig('http://127.0.0.1:8080') }), { endpoints: { allowPlainHttp: true } })
        .server,
    ).toBe('http://127.0.0.1:8080');
    expect(thrown({ kubeconfig: kubeconfig('http://127.0.0.1:8080', { token: 't' }) }, { allowPlainHttp: true }).message).toMatch(
      /plain http, which would send the credentials unencrypted/,
    );
    expect(thrown({ endpoint: 'http://127.0.0.1:8080', token: 't' }, { allowPlainHttp: true }).message).toMatch(
      /plain http, which would send the credentials unencrypted/,
    );
  });

  it('refuses a server URL that carries a user name or password, in both shapes of Secret, without echoing it', () => {
    const endpoint = thrown({ endpoint: 'https://admin:hunter2@k8s.example.com:6443', clusterCA: caPem, token: 't' });
    expect(endpoint).toMatchObject({
      reason: 'InvalidCredentials',
      message: "key 'endpoint' of Secret ns/s carries a user name or password; put credentials in their own keys",
    });
    const config = thrown({ kubeconfig: kubeconfig('http://admin:hunter2@127.0.0.1:8080') }, { allowPlainHttp: true });
    expect(config).toMatchObject({
      reason: 'InvalidCredentials',
      message:
        "key 'kubeconfig' of Secret ns/s has clusters[0].cluster.server that carries a user name or password; put credentials in their own keys",
    });
    expect(JSON.stringify([endpoint.message, config.message])).not.toMatch(/hunter2|admin/);
  });

  it("resolves a host name through the policy's resolver, refusing it with EndpointNotAllowed in words that name neither host nor address", async () => {
    const fake = fakeResolver({ 'metadata.intruder.test': ['127.0.0.1', '169.254.169.254'] });
    const { access } = credentialsFromSecret('ns/s', enc({ kubeconfig: kubeconfig('http://metadata.intruder.test:1') }), {
      endpoints: { allowPlainHttp: true, lookup: fake.lookup },
    });
    const { err } = await resolve(access.lookup!, 'metadata.intruder.test');
    expect(err).toBeInstanceOf(ReasonedError);
    // Not even the Secret: Providers whose Secrets hold the same keys share the client, and this error.
    expect(err).toMatchObject({
      reason: 'EndpointNotAllowed',
      message:
        "the target cluster's host name resolves to a link-local, unspecified or cloud metadata address, which provider-rook never calls",
    });
    const viaEndpoint = credentialsFromSecret('ns/e', enc({ endpoint: 'https://metadata.intruder.test', clusterCA: caPem, token: 't' }), {
      endpoints: { lookup: fake.lookup },
    });
    expect((await resolve(viaEndpoint.access.lookup!, 'metadata.intruder.test')).err).toMatchObject({
      reason: 'EndpointNotAllowed',
      message: err!.message,
    });
  });
});

describe('a target client', () => {
  let server: Server;
  let port: number;
  const attempts: string[] = [];
  const onSocket = ({ socket }: { socket: Socket }): void => void socket.on('connectionAttempt', (ip: string) => attempts.push(ip));
  beforeAll(async () => {
    server = createServer((req, res) =>
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ gitVersion: 'v1.35.0' })),
    );
    await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
    port = (server.address() as AddressInfo).port;
    subscribe('net.client.socket', onSocket as (message: unknown) => void);
  });
  afterAll(async () => {
    unsubscribe('net.client.socket', onSocket as (message: unknown) => void);
    await new Promise((done) => server.close(done));
  });

  it('looks its host name up at each new connection and fails with the refusal, without connecting', async () => {
    // Refusing loopback makes a refused answer one this machine serves: even a failed guard would stay on it.
    const fake = fakeResolver({ 'api.intruder.test': ['127.0.0.1'] });
    const allowed = credentialsFromSecret('ns/s', enc({ kubeconfig: kubeconfig(`http://api.intruder.test:${port}`) }), {
      endpoints: { allowPlainHttp: true, lookup: fake.lookup },
    });
    const refusing = credentialsFromSecret('ns/s', enc({ kubeconfig: kubeconfig(`http://api.intruder.test:${port}`) }), {
      endpoints: { allowPlainHttp: true, refuseRanges: ['loopback'], lookup: fake.lookup },
    });
    const opts = { fieldManager: 'test', trusted: false, name: 'the target cluster', isolate: true };
    const ok = new KubeClient(allowed.access, opts);
    const no = new KubeClient(refusing.access, opts);
    try {
      expect(await ok.serverVersion()).toBe('v1.35.0');
      expect(attempts).toEqual(['127.0.0.1']);
      expect(fake.asked.map((a) => a.hostname)).toEqual(['api.intruder.test']);

      const err = await no.serverVersion().then(
        () => undefined,
        (e: unknown) => e as ReasonedError,
      );
      expect(err).toBeInstanceOf(ReasonedError);
      expect(err).toMatchObject({
        reason: 'EndpointNotAllowed',
        message: expect.stringMatching(/^the target cluster's host name resolves to a loopback address/),
      });
      expect(err!.message).not.toMatch(/intruder|127\.0\.0\.1/);
      // Asked again (a new connection), refused before any socket connected; the breaker stays shut, so the next one asks again too.
      await expect(no.serverVersion()).rejects.toMatchObject({ reason: 'EndpointNotAllowed' });
      expect(fake.asked).toHaveLength(3);
      expect(attempts).toEqual(['127.0.0.1']);
    } finally {
      await ok.close();
      await no.close();
    }
  });

  const kubeconfig = (server: string): string =>
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'c',
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
      clusters: [{ name: 'c', cluster: { server } }],
      users: [{ name: 'u', user: {} }],
    });
});
