import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { makeCa } from '../../../kit/pki.ts';
import { credentialsFromSecret, refusedEndpoint } from '../../../../src/runtime/providers/credentials.ts';
import { authenticate } from '../../../../src/kit/kube/config.ts';
import { diffFields } from '../../../../src/kit/json.ts';

const enc = (o: Record<string, string>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** The error credentialsFromSecret throws; fails the test when it throws nothing. */
function thrownBy(fn: () => unknown): { reason?: string; message: string } {
  try {
    fn();
  } catch (err) {
    return err as { reason?: string; message: string };
  }
  throw new Error('expected an error, but nothing was thrown');
}

let dir: string;
let caPem: string; // a real self-signed CA, also used as a client certificate
let keyPem: string;
beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'credentials-test-'));
  const ca = await makeCa(path.join(dir, 'ca'), 'credentials-test');
  caPem = readFileSync(ca.cert, 'utf8');
  keyPem = readFileSync(ca.key, 'utf8');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A one-context kubeconfig (JSON is YAML) with these cluster and user fields. */
function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown>, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': 'ctx',
    contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u' } }],
    clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:6443', 'certificate-authority-data': b64(caPem), ...cluster } }],
    users: [{ name: 'u', user }],
    ...extra,
  });
}

/** An exec plugin that leaves a marker file when it runs and hands back a token. */
function execPlugin(marker: string): Record<string, unknown> {
  const script =
    `require('fs').writeFileSync(${JSON.stringify(marker)}, 'ran');` +
    `console.log(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: 'from-exec' } }))`;
  return { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: ['-e', script] };
}

describe('credentialsFromSecret', () => {
  it.each([
    [{}, 'SecretKeyMissing', /neither a 'kubeconfig' key nor an 'endpoint' key/],
    [{ endpoint: 'https://k:6443' }, 'SecretKeyMissing', /no 'clusterCA' key/],
    [{ endpoint: 'https://k:6443', clusterCA: 'garbage' }, 'InvalidCredentials', /'clusterCA' .* not a valid PEM certificate/],
    [{ kubeconfig: 'clusters: [' }, 'InvalidCredentials', /not a valid kubeconfig/],
    [{ kubeconfig: 'clusters: []' }, 'InvalidCredentials', /has no current-context/],
    [{ endpoint: 'http://k:8080' }, 'SecretKeyMissing', /has no credentials/],
    [{ endpoint: 'http://k:8080', clientCert: 'x' }, 'SecretKeyMissing', /'clientCert' but no 'clientKey'/],
  ])('rejects %j with %s', (keys, reason, message) => {
    const thrown = thrownBy(() => credentialsFromSecret('ns/s', enc(keys)));
    expect(thrown.reason).toBe(reason);
    expect(thrown.message).toMatch(message);
    expect(thrown.message).toContain('ns/s');
  });

  it('rejects a kubeconfig whose current context, cluster or user is missing', () => {
    const base = JSON.parse(kubeconfig({}, { token: 't' })) as Record<string, unknown>;
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ 'current-context': 'other' }, /no entry in contexts for its current-context/],
      [{ clusters: [] }, /contexts\[0\]\.context a cluster that is not in clusters/],
      [{ users: [] }, /contexts\[0\]\.context a user that is not in users/],
      [{ contexts: [{ name: 'ctx', context: { cluster: 'c' } }] }, /a user that is not in users/],
    ];
    for (const [change, message] of cases) {
      const thrown = thrownBy(() => credentialsFromSecret('ns/s', enc({ kubeconfig: JSON.stringify({ ...base, ...change }) })));
      expect(thrown.reason).toBe('InvalidCredentials');
      expect(thrown.message).toMatch(message);
      expect(thrown.message).toContain('ns/s');
    }
  });

  it('never puts a value into an error', () => {
    const cases: [Record<string, string>, string[]][] = [
      [{ endpoint: 'https://k:6443', clusterCA: 'SUPER-SECRET-VALUE' }, ['SUPER-SECRET-VALUE']],
      [{ endpoint: 'http://secret-host:8080', token: 'SUPER-SECRET-TOKEN' }, ['secret-host', 'SUPER-SECRET-TOKEN']],
      [{ endpoint: 'https://secret-host:6443' }, ['secret-host']],
      [
        { kubeconfig: kubeconfig({ server: 'http://secret-host' }, { token: 'SUPER-SECRET-TOKEN' }) },
        ['secret-host', 'SUPER-SECRET-TOKEN'],
      ],
      [{ kubeconfig: kubeconfig({}, { token: 'SUPER-SECRET-TOKEN', tokenFile: '/secret/path' }) }, ['/secret/path', 'SUPER-SECRET-TOKEN']],
    ];
    for (const [keys, values] of cases) {
      const { message } = thrownBy(() => credentialsFromSecret('ns/s', enc(keys)));
      for (const value of values) expect(message).not.toContain(value);
    }
  });

  it('gives the same fingerprint for the same credentials and another for different ones', () => {
    const a = credentialsFromSecret('ns/a', enc({ endpoint: 'https://k:6443', clusterCA: caPem, token: 't1' }));
    const b = credentialsFromSecret('ns/b', enc({ endpoint: 'https://k:6443', clusterCA: caPem, token: 't1' }));
    const c = credentialsFromSecret('ns/a', enc({ endpoint: 'https://k:6443', clusterCA: caPem, token: 't2' }));
    expect(a.fingerprint).toBe(b.fingerprint);
    expect(a.fingerprint).not.toBe(c.fingerprint);
    expect(a.server).toBe('https://k:6443');
  });

  it('accepts a client certificate and loopback', () => {
    const creds = credentialsFromSecret(
      'ns/s',
      enc({ endpoint: 'https://127.0.0.1:6443', clusterCA: caPem, clientCert: caPem, clientKey: keyPem }),
    );
    expect(creds.server).toBe('https://127.0.0.1:6443');
    expect(creds.access.certData).toBe(b64(caPem.trim())); // Secret values are trimmed
  });

  it('refuses plain http when a credential would be sent', () => {
    const sets: Record<string, string>[] = [{ token: 't' }, { username: 'u', password: 'p' }, { clientCert: caPem, clientKey: keyPem }];
    for (const creds of sets) {
      const thrown = thrownBy(() => credentialsFromSecret('ns/s', enc({ endpoint: 'http://k:8080', ...creds })));
      expect(thrown.reason).toBe('InvalidCredentials');
      expect(thrown.message).toMatch(/key 'endpoint' of Secret ns\/s uses plain http/);
    }
  });

  it.each([
    'https://169.254.169.254',
    'https://169.254.169.254:443/latest',
    'https://0xA9FEA9FE',
    'https://[::ffff:169.254.169.254]',
    'https://[fe80::1]:6443',
    'https://0.0.0.0:6443',
    'https://[::]:6443',
    '169.254.169.254:6443',
  ])('refuses the link-local or unspecified endpoint %s', (endpoint) => {
    const thrown = thrownBy(() => credentialsFromSecret('ns/s', enc({ endpoint, clusterCA: caPem, token: 't' })));
    expect(thrown.reason).toBe('InvalidCredentials');
    expect(thrown.message).toMatch(/key 'endpoint' of Secret ns\/s is a link-local, unspecified or cloud metadata address/);
    expect(thrown.message).not.toMatch(/169\.254|fe80|0\.0\.0\.0|::/);
  });

  it('says why an endpoint is refused, and allows names and loopback', () => {
    expect(refusedEndpoint(new URL('https://169.254.169.254'))).toMatch(/link-local/);
    expect(refusedEndpoint(new URL('file:///etc/passwd'))).toMatch(/not an http or https URL/);
    expect(refusedEndpoint(new URL('https://127.0.0.1:6443'))).toBeUndefined();
    expect(refusedEndpoint(new URL('https://[::1]:6443'))).toBeUndefined();
    expect(refusedEndpoint(new URL('https://kubernetes.default.svc'))).toBeUndefined();
  });
});

describe('credentialsFromSecret with a kubeconfig', () => {
  const refuse = (config: string, field: RegExp, opts = {}): string => {
    const thrown = thrownBy(() => credentialsFromSecret('ns/s', enc({ kubeconfig: config }), opts));
    expect(thrown.reason).toBe('InvalidCredentials');
    expect(thrown.message).toContain("key 'kubeconfig' of Secret ns/s");
    expect(thrown.message).toMatch(field);
    return thrown.message;
  };

  it('keeps inline values only', async () => {
    const config = kubeconfig({ 'tls-server-name': 'kubernetes' }, { token: 'inline-token' });
    const {
      access: { lookup, ...access },
      server,
    } = credentialsFromSecret('ns/s', enc({ kubeconfig: config }));
    expect(server).toBe('https://127.0.0.1:6443');
    expect(Object.fromEntries(Object.entries(access).filter(([, v]) => v !== undefined))).toEqual({
      server: 'https://127.0.0.1:6443',
      caData: b64(caPem),
      tlsServerName: 'kubernetes',
      skipTLSVerify: false,
      token: 'inline-token',
    });
    expect(lookup).toBeInstanceOf(Function); // ours, which checks what the server's name resolves to (credentials.endpoints.test.ts)
    const auth = await authenticate(access);
    expect(auth.headers.Authorization).toBe('Bearer inline-token');
    expect(auth.tls).toMatchObject({ ca: caPem, servername: 'kubernetes', rejectUnauthorized: true });
  });

  it('carries nothing from other users or clusters in the kubeconfig', async () => {
    const marker = path.join(dir, 'other-user-exec-ran');
    const base = JSON.parse(kubeconfig({}, { token: 'inline-token' })) as { users: unknown[]; clusters: unknown[] };
    base.users.push({
      name: 'other',
      user: { exec: execPlugin(marker), tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token' },
    });
    base.clusters.push({ name: 'other', cluster: { server: 'https://169.254.169.254', 'certificate-authority': '/etc/ca.crt' } });
    const { access } = credentialsFromSecret('ns/s', enc({ kubeconfig: JSON.stringify(base) }));
    expect(access.exec).toBeUndefined();
    expect(access.tokenFile).toBeUndefined();
    expect(access.server).toBe('https://127.0.0.1:6443');
    await authenticate(access);
    expect(existsSync(marker)).toBe(false);
  });

  it('refuses an exec plugin by default, and never runs it', async () => {
    const marker = path.join(dir, 'exec-ran');
    const config = kubeconfig({}, { exec: execPlugin(marker) });
    refuse(config, /users\[0\]\.user\.exec: exec plugins are off .*--allow-exec-credentials/);
    refuse(config, /users\[0\]\.user\.exec/, { allowExec: false });
    expect(existsSync(marker)).toBe(false);

    // With allowExec the plugin is carried over, and runs only when a client authenticates.
    const { access } = credentialsFromSecret('ns/s', enc({ kubeconfig: config }), { allowExec: true });
    expect(access.exec).toMatchObject({ command: process.execPath });
    expect(existsSync(marker)).toBe(false);
    const auth = await authenticate(access);
    expect(existsSync(marker)).toBe(true);
    expect(auth.headers.Authorization).toBe('Bearer from-exec');
  });

  it('refuses an exec plugin over plain http even when exec is allowed', () => {
    refuse(kubeconfig({ server: 'http://127.0.0.1:8080' }, { exec: execPlugin(path.join(dir, 'never')) }), /server that uses plain http/, {
      allowExec: true,
    });
  });

  it.each([
    ['tokenFile', '/var/run/secrets/kubernetes.io/serviceaccount/token'],
    ['token-file', '/var/run/secrets/kubernetes.io/serviceaccount/token'],
    ['client-certificate', '/etc/kubernetes/pki/admin.crt'],
    ['client-key', '/etc/shadow'],
  ])('refuses the file field users[].user.%s without naming the path', (field, file) => {
    const message = refuse(kubeconfig({}, { [field]: file }), new RegExp(`users\\[0\\]\\.user\\.${field}: files are never read`));
    expect(message).not.toContain(file);
  });

  it('refuses a certificate-authority path even next to inline data', () => {
    const message = refuse(
      kubeconfig({ 'certificate-authority': '/etc/shadow' }, { token: 't' }),
      /clusters\[0\]\.cluster\.certificate-authority: files are never read/,
    );
    expect(message).not.toContain('/etc/shadow');
  });

  it.each([
    [{}, { 'auth-provider': { name: 'gcp', config: { 'cmd-path': '/bin/sh' } } }, /users\[0\]\.user\.auth-provider/],
    [{}, { token: 't', as: 'someone' }, /users\[0\]\.user\.as, which provider-rook does not support/],
    [{ 'proxy-url': 'http://169.254.169.254' }, { token: 't' }, /clusters\[0\]\.cluster\.proxy-url/],
    [{ 'insecure-skip-tls-verify': true }, { token: 't' }, /clusters\[0\]\.cluster\.insecure-skip-tls-verify while sending credentials/],
    [
      { server: 'https://169.254.169.254' },
      { token: 't' },
      /clusters\[0\]\.cluster\.server that is a link-local, unspecified or cloud metadata address/,
    ],
    [{ server: 'https://[::ffff:169.254.169.254]:443' }, { token: 't' }, /server that is a link-local/],
    [{ server: 'http://127.0.0.1:8080' }, { token: 't' }, /clusters\[0\]\.cluster\.server that uses plain http/],
    [{ server: 'http://127.0.0.1:8080' }, { username: 'u', password: 'p' }, /server that uses plain http/],
    [{ 'certificate-authority-data': b64('garbage') }, { token: 't' }, /certificate-authority-data that is not a valid PEM certificate/],
    [{}, { 'client-certificate-data': b64('garbage') }, /only one of/],
    [{}, { token: 12345 }, /users\[0\]\.user\.token that is not a string/],
  ])('refuses cluster %j with user %j', (cluster, user, message) => {
    const text = refuse(kubeconfig(cluster, user), message);
    expect(text).not.toMatch(/169\.254|\/bin\/sh|someone/);
  });

  it('allows insecure-skip-tls-verify when no credential is sent, and plain http too with --allow-plain-http', () => {
    expect(
      credentialsFromSecret('ns/s', enc({ kubeconfig: kubeconfig({ 'insecure-skip-tls-verify': true }, {}) })).access.skipTLSVerify,
    ).toBe(true);
    const plain = kubeconfig({ server: 'http://127.0.0.1:8080' }, {});
    refuse(
      plain,
      /clusters\[0\]\.cluster\.server that uses plain http, which provider-rook refuses unless started with --allow-plain-http/,
    );
    expect(credentialsFromSecret('ns/s', enc({ kubeconfig: plain }), { endpoints: { allowPlainHttp: true } }).server).toBe(
      'http://127.0.0.1:8080',
    );
  });

  it('accepts inline client certificate data', () => {
    const { access } = credentialsFromSecret(
      'ns/s',
      enc({ kubeconfig: kubeconfig({}, { 'client-certificate-data': b64(caPem), 'client-key-data': b64(keyPem) }) }),
    );
    expect(access).toMatchObject({ certData: b64(caPem), keyData: b64(keyPem) });
  });
});

describe('diffFields', () => {
  it('reports only fields we want that differ or are missing', () => {
    expect(diffFields({ spec: { a: 1, b: [1, 2] } }, { spec: { a: 1, b: [1, 2], extra: true } })).toEqual([]);
    expect(diffFields({ spec: { a: 1, b: [1, 2] } }, { spec: { a: 2, b: [1] } })).toEqual(['.spec.a', '.spec.b']);
    expect(diffFields({ spec: { m: { k: 'v' } } }, { spec: {} })).toEqual(['.spec.m']);
  });
});
