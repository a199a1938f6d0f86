// Our kubeconfig reader against client-node's: the same kubeconfig must give the same server, TLS
// material and credential. client-node stays a dev dependency for this cross-check only.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { HttpMethod, KubeConfig, RequestContext } from '@kubernetes/client-node';
import { dump } from 'js-yaml';
import { authenticate, kubeconfigFileAccess } from '../../../../src/kit/kube/config.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'kubeconfig-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function write(name: string, doc: unknown): string {
  const file = path.join(dir, name);
  writeFileSync(file, typeof doc === 'string' ? doc : dump(doc));
  return file;
}

const config = (cluster: Record<string, unknown>, user: Record<string, unknown>) => ({
  apiVersion: 'v1',
  kind: 'Config',
  'current-context': 'b',
  clusters: [
    { name: 'other', cluster: { server: 'https://wrong:1' } },
    { name: 'c', cluster },
  ],
  users: [
    { name: 'other', user: { token: 'wrong' } },
    { name: 'u', user },
  ],
  contexts: [
    { name: 'a', context: { cluster: 'other', user: 'other' } },
    { name: 'b', context: { cluster: 'c', user: 'u' } },
  ],
});

/** What client-node would send: its headers and TLS options for the current context. */
async function clientNode(
  file: string,
): Promise<{ server: string; headers: Record<string, string>; ca?: string; cert?: string; key?: string }> {
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  const opts: { headers?: Record<string, string>; ca?: Buffer; cert?: Buffer; key?: Buffer } = {};
  await kc.applyToHTTPSOptions(opts);
  const ctx = new RequestContext(kc.getCurrentCluster()!.server, HttpMethod.GET);
  await kc.applySecurityAuthentication(ctx);
  return {
    server: kc.getCurrentCluster()!.server,
    headers: ctx.getHeaders(),
    ca: opts.ca?.toString(),
    cert: opts.cert?.toString(),
    key: opts.key?.toString(),
  };
}

describe('kubeconfigFileAccess', () => {
  it('reads the current context with inline data as client-node does', async () => {
    const b64 = (s: string): string => Buffer.from(s).toString('base64');
    const file = write(
      'inline.yaml',
      config(
        { server: 'https://api.example:6443/', 'certificate-authority-data': b64('CA') },
        { 'client-certificate-data': b64('CERT'), 'client-key-data': b64('KEY') },
      ),
    );
    const ours = await authenticate(kubeconfigFileAccess(file));
    const theirs = await clientNode(file);
    expect(kubeconfigFileAccess(file).server).toBe(theirs.server.replace(/\/$/, ''));
    expect(ours.tls).toMatchObject({ ca: theirs.ca, cert: theirs.cert, key: theirs.key, rejectUnauthorized: true });
    expect(ours.tls.ca).toBe('CA');
  });

  it('reads file references relative to the kubeconfig, and a token file again on every authentication', async () => {
    writeFileSync(path.join(dir, 'ca.crt'), 'FILE-CA');
    writeFileSync(path.join(dir, 'token'), 'first\n');
    const file = write(
      'files.yaml',
      config({ server: 'https://api.example:6443', 'certificate-authority': 'ca.crt' }, { tokenFile: 'token' }),
    );
    const theirs = await clientNode(file);
    const access = kubeconfigFileAccess(file);
    const first = await authenticate(access);
    expect(first.tls.ca).toBe(theirs.ca);
    // kubectl's tokenFile; client-node reads only 'token-file', once, so it is not compared here.
    expect(first.headers.Authorization).toBe('Bearer first');
    writeFileSync(path.join(dir, 'token'), 'rotated\n');
    expect((await authenticate(access)).headers.Authorization).toBe('Bearer rotated');
  });

  it('sends basic auth and skips verification only when told, as client-node does', async () => {
    const file = write(
      'basic.yaml',
      config({ server: 'https://api.example:6443', 'insecure-skip-tls-verify': true }, { username: 'me', password: 'pw' }),
    );
    const ours = await authenticate(kubeconfigFileAccess(file));
    expect(ours.headers.Authorization).toBe((await clientNode(file)).headers.Authorization);
    expect(ours.tls.rejectUnauthorized).toBe(false);
  });

  it('runs an exec plugin with its args and env, and knows when its credential expires', async () => {
    const script =
      "const i = JSON.parse(process.env.KUBERNETES_EXEC_INFO); console.log(JSON.stringify({ apiVersion: i.apiVersion, kind: 'ExecCredential', " +
      "status: { token: process.argv[1] + '-' + process.env.EXTRA, expirationTimestamp: '2030-01-01T00:00:00Z' } }))";
    const file = write(
      'exec.yaml',
      config(
        { server: 'https://api.example:6443' },
        {
          exec: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command: process.execPath,
            args: ['-e', script, 'arg'],
            env: [{ name: 'EXTRA', value: 'env' }],
          },
        },
      ),
    );
    const ours = await authenticate(kubeconfigFileAccess(file));
    expect(ours.headers.Authorization).toBe('Bearer arg-env');
    expect(ours.expiresAt).toBe(Date.parse('2030-01-01T00:00:00Z'));
  });

  it('impersonates as the kubeconfig asks (as, as-uid, as-groups, as-user-extra), as kubectl does', async () => {
    const file = write(
      'as.yaml',
      config(
        { server: 'https://api.example:6443' },
        { token: 't', as: 'jane', 'as-uid': '42', 'as-groups': ['dev', 'ops'], 'as-user-extra': { 'reason/why': ['audit'] } },
      ),
    );
    expect((await authenticate(kubeconfigFileAccess(file))).headers).toEqual({
      Authorization: 'Bearer t',
      'Impersonate-User': 'jane',
      'Impersonate-Uid': '42',
      'Impersonate-Group': ['dev', 'ops'],
      'Impersonate-Extra-reason%2Fwhy': ['audit'],
    });
  });

  it('groups to impersonate without a user are refused, as the API server would', () => {
    const file = write('as-groups.yaml', config({ server: 'https://api.example:6443' }, { token: 't', 'as-groups': ['dev'] }));
    expect(() => kubeconfigFileAccess(file)).toThrow('without a user (as)');
  });

  it.each([
    ['user', 'auth-provider', { 'auth-provider': { name: 'oidc' } }, 'removed from Kubernetes clients in 1.26'],
    ['cluster', 'proxy-url', { 'proxy-url': 'http://proxy:3128' }, 'sends nothing through a proxy'],
    ['cluster', 'sever', { sever: 'typo' }, 'does not know this field'],
    ['user', 'tokenfile', { tokenfile: '/x' }, 'does not know this field'],
  ])('refuses a %s that sets %s, saying why, instead of ignoring it', (where, field, extra, why) => {
    const file = write(
      `refused-${field}.yaml`,
      where === 'cluster'
        ? config({ server: 'https://api.example:6443', ...extra }, { token: 't' })
        : config({ server: 'https://api.example:6443' }, { token: 't', ...extra }),
    );
    expect(() => kubeconfigFileAccess(file)).toThrow(`the kubeconfig's ${where} "${where === 'cluster' ? 'c' : 'u'}" sets ${field}: `);
    expect(() => kubeconfigFileAccess(file)).toThrow(why);
  });

  it('accepts what changes nothing here: extensions, disable-compression, a context namespace', () => {
    const doc = config({ server: 'https://api.example:6443', 'disable-compression': true, extensions: [] }, { token: 't', extensions: [] });
    doc.contexts[1]!.context = { ...doc.contexts[1]!.context, namespace: 'x' } as never;
    expect(kubeconfigFileAccess(write('benign.yaml', doc)).server).toBe('https://api.example:6443');
  });

  it("tells an exec plugin the cluster when it asks (provideClusterInfo), with the cluster's exec extension, as client-go does", async () => {
    const script =
      "const i = JSON.parse(process.env.KUBERNETES_EXEC_INFO); console.log(JSON.stringify({ apiVersion: i.apiVersion, kind: 'ExecCredential', " +
      'status: { token: i.spec.cluster.server + "|" + i.spec.cluster.config.audience } }))';
    const file = write(
      'exec-cluster.yaml',
      config(
        { server: 'https://api.example:6443', extensions: [{ name: 'client.authentication.k8s.io/exec', extension: { audience: 'aud' } }] },
        {
          exec: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command: process.execPath,
            args: ['-e', script],
            provideClusterInfo: true,
            interactiveMode: 'Never',
            installHint: 'get it',
          },
        },
      ),
    );
    expect((await authenticate(kubeconfigFileAccess(file))).headers.Authorization).toBe('Bearer https://api.example:6443|aud');
  });

  it('refuses an exec plugin that needs a terminal, or sets a field it does not know', () => {
    const exec = (extra: object) => config({ server: 'https://api.example:6443' }, { exec: { command: 'x', ...extra } });
    expect(() => kubeconfigFileAccess(write('exec-always.yaml', exec({ interactiveMode: 'Always' })))).toThrow('needs a terminal');
    expect(() => kubeconfigFileAccess(write('exec-odd.yaml', exec({ stdin: true })))).toThrow(`the kubeconfig's exec "u" sets stdin`);
  });

  it('escapes an extra key as client-go does: what a header name cannot hold, and %, percent-encoded', async () => {
    const file = write(
      'as-extra.yaml',
      config({ server: 'https://api.example:6443' }, { as: 'jane', 'as-user-extra': { 'scope(v1)%': ['x'] } }),
    );
    expect((await authenticate(kubeconfigFileAccess(file))).headers).toMatchObject({ 'Impersonate-Extra-scope%28v1%29%25': ['x'] });
  });
});
