// How to reach and authenticate to one API server. Our own, not client-node's KubeConfig: loading
// client-node pulls in its whole generated API (about 80 MiB of RSS, measured), and all we need is a
// server, TLS material and a credential. Values are kept as kubeconfig holds them (base64 data).
import { execFile } from 'node:child_process';
import path from 'node:path';
import type { LookupFunction } from 'node:net';
import { load } from 'js-yaml';
import type { TlsOptions } from './transport.ts';
import { fs } from '../builtins.ts';
import { ConfigError, CredentialPluginError } from './errors.ts';

export interface ExecConfig {
  command: string;
  args?: string[];
  env?: { name: string; value: string }[];
  apiVersion?: string;
  /** provideClusterInfo: the plugin is told the cluster (KUBERNETES_EXEC_INFO spec.cluster). */
  cluster?: Record<string, unknown>;
}

export interface ClusterAccess {
  server: string;
  /** base64 PEM, as in a kubeconfig's certificate-authority-data. */
  caData?: string;
  tlsServerName?: string;
  skipTLSVerify?: boolean;
  certData?: string;
  keyData?: string;
  token?: string;
  /** Read again on every refresh (a projected ServiceAccount token rotates). Only from our own config, never from a Secret. */
  tokenFile?: string;
  username?: string;
  password?: string;
  exec?: ExecConfig;
  /** Whom to act as (kubeconfig as, as-uid, as-groups, as-user-extra): Impersonate-* headers on every request. */
  impersonate?: { user?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  /** Resolves the server's host name for each new connection (default: dns.lookup); a Provider Secret's refuses what it may not reach. */
  lookup?: LookupFunction;
}

export interface Authentication {
  /** A list is sent as that many header lines (Impersonate-Group). */
  headers: Record<string, string | string[]>;
  tls: TlsOptions;
  /** When an exec credential runs out (ms since the epoch); undefined when it does not. */
  expiresAt?: number;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (o: Obj, k: string): string | undefined => (typeof o[k] === 'string' && o[k] ? o[k] : undefined);
const named = (doc: Obj, list: string, field: string, name: unknown): Obj => {
  const item = (Array.isArray(doc[list]) ? doc[list] : []).find((it: unknown) => isObj(it) && it.name === name) as Obj | undefined;
  return isObj(item?.[field]) ? item[field] : {};
};
const fileData = (file: string | undefined, dir: string): string | undefined =>
  file ? fs.readFileSync(path.resolve(dir, file)).toString('base64') : undefined;

// Every field of clientcmd's v1 Cluster, AuthInfo and Context, and what this reader does with it.
// Nothing is ignored: a field it does not honour is refused at start, saying so.
const HONOURED = {
  cluster: [
    'server',
    'certificate-authority',
    'certificate-authority-data',
    'tls-server-name',
    'insecure-skip-tls-verify',
    'disable-compression',
    'extensions',
  ],
  user: [
    'client-certificate',
    'client-certificate-data',
    'client-key',
    'client-key-data',
    'token',
    'tokenFile',
    'username',
    'password',
    'exec',
    'as',
    'as-uid',
    'as-groups',
    'as-user-extra',
    'extensions',
  ],
  context: ['cluster', 'user', 'namespace', 'extensions'],
  // interactiveMode Always is refused below: this process never has a terminal.
  exec: ['command', 'args', 'env', 'apiVersion', 'provideClusterInfo', 'interactiveMode', 'installHint'],
};
const REFUSED: Record<string, string> = {
  'auth-provider': 'auth-provider plugins were removed from Kubernetes clients in 1.26; use an exec plugin (e.g. kubelogin) or a token',
  'proxy-url': 'this client connects to the API server directly and sends nothing through a proxy; reach it without one',
};

/** Refuses any field of `obj` (a kubeconfig's `what`) that this reader does not honour. */
function refuseUnhonoured(obj: Obj, what: 'cluster' | 'user' | 'context' | 'exec', name: unknown): void {
  for (const field of Object.keys(obj)) {
    if (HONOURED[what].includes(field)) continue;
    const why = REFUSED[field] ?? `this reader does not know this field, and ignores nothing`;
    throw new ConfigError(`the kubeconfig's ${what} ${JSON.stringify(name)} sets ${field}: ${why}`);
  }
}

/** The cluster's client.authentication.k8s.io/exec extension, which client-go passes to the plugin as spec.cluster.config. */
function execExtension(cluster: Obj): { config?: unknown } {
  const ext = (Array.isArray(cluster.extensions) ? cluster.extensions : []).find(
    (e: unknown) => isObj(e) && e.name === 'client.authentication.k8s.io/exec',
  ) as Obj | undefined;
  return ext && 'extension' in ext ? { config: ext.extension } : {};
}

/** An extra key as client-go puts it in a header name: every byte outside a token's characters, and %, percent-encoded. */
const headerKey = (key: string): string =>
  [...Buffer.from(key, 'utf8')]
    .map((b) =>
      /[A-Za-z0-9!#$&'*+.^_`|~-]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');

const strings = (v: unknown): string[] | undefined => (Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined);

/** Impersonation as the kubeconfig asks it (kubectl's --as and friends). */
function impersonation(user: Obj): ClusterAccess['impersonate'] {
  const extra = isObj(user['as-user-extra'])
    ? Object.fromEntries(Object.entries(user['as-user-extra']).map(([k, v]) => [k, strings(v) ?? []]))
    : undefined;
  const asked = {
    ...(str(user, 'as') ? { user: str(user, 'as') } : {}),
    ...(str(user, 'as-uid') ? { uid: str(user, 'as-uid') } : {}),
    ...(strings(user['as-groups'])?.length ? { groups: strings(user['as-groups']) } : {}),
    ...(extra && Object.keys(extra).length ? { extra } : {}),
  };
  if (!Object.keys(asked).length) return undefined;
  // The API server's rule: groups, uid or extra only with a user to act as.
  if (!asked.user) throw new ConfigError('the kubeconfig asks to impersonate groups, a uid or extra fields without a user (as)');
  return asked;
}

/**
 * Our own kubeconfig (--kubeconfig): its current context, with file references read relative to
 * it. This trusts the file, as kubectl does; kubeconfigs from Secrets go through credentials.ts.
 * Every field is honoured or refused with why, never ignored.
 */
export function kubeconfigAccess(text: string, dir = process.cwd()): ClusterAccess {
  const doc = load(text);
  if (!isObj(doc)) throw new ConfigError('the kubeconfig is not a YAML map');
  const context = named(doc, 'contexts', 'context', doc['current-context']);
  const cluster = named(doc, 'clusters', 'cluster', context.cluster);
  const user = named(doc, 'users', 'user', context.user);
  refuseUnhonoured(context, 'context', doc['current-context']);
  refuseUnhonoured(cluster, 'cluster', context.cluster);
  refuseUnhonoured(user, 'user', context.user);
  const impersonate = impersonation(user);
  const server = str(cluster, 'server');
  if (!server) throw new ConfigError('the kubeconfig has no server for its current context');
  const exec = isObj(user.exec) ? user.exec : undefined;
  if (exec) {
    refuseUnhonoured(exec, 'exec', context.user);
    if (exec.interactiveMode === 'Always')
      throw new ConfigError(
        `the kubeconfig's exec plugin for user ${JSON.stringify(context.user)} needs a terminal (interactiveMode Always), and a controller has none`,
      );
  }
  const tokenFile = str(user, 'tokenFile');
  const caData = str(cluster, 'certificate-authority-data') ?? fileData(str(cluster, 'certificate-authority'), dir);
  return {
    server: server.replace(/\/+$/, ''),
    caData,
    tlsServerName: str(cluster, 'tls-server-name'),
    skipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
    certData: str(user, 'client-certificate-data') ?? fileData(str(user, 'client-certificate'), dir),
    keyData: str(user, 'client-key-data') ?? fileData(str(user, 'client-key'), dir),
    token: str(user, 'token'),
    tokenFile: tokenFile && path.resolve(dir, tokenFile),
    username: str(user, 'username'),
    password: str(user, 'password'),
    exec: exec && {
      command: String(exec.command),
      args: exec.args as string[] | undefined,
      env: exec.env as ExecConfig['env'],
      apiVersion: str(exec, 'apiVersion'),
      // What client-go gives a plugin that asks (provideClusterInfo): the cluster's connection, and its exec extension.
      ...(exec.provideClusterInfo === true
        ? {
            cluster: {
              server,
              ...(str(cluster, 'tls-server-name') ? { 'tls-server-name': str(cluster, 'tls-server-name') } : {}),
              ...(cluster['insecure-skip-tls-verify'] === true ? { 'insecure-skip-tls-verify': true } : {}),
              ...(caData ? { 'certificate-authority-data': caData } : {}),
              ...execExtension(cluster),
            },
          }
        : {}),
    },
    ...(impersonate ? { impersonate } : {}),
  };
}

export function kubeconfigFileAccess(file: string): ClusterAccess {
  return kubeconfigAccess(fs.readFileSync(file, 'utf8'), path.dirname(path.resolve(file)));
}

const SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';

/** Inside a pod: the API server from the environment, the ServiceAccount's token and CA. */
export function inClusterAccess(): ClusterAccess {
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) throw new ConfigError('not running in a cluster (KUBERNETES_SERVICE_HOST is unset) and no --kubeconfig given');
  return {
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    caData: fs.readFileSync(`${SERVICE_ACCOUNT}/ca.crt`).toString('base64'),
    tokenFile: `${SERVICE_ACCOUNT}/token`,
  };
}

const text = (b64: string | undefined): string | undefined => (b64 ? Buffer.from(b64, 'base64').toString('utf8') : undefined);

/** Headers and TLS options for the next requests; runs the exec plugin when there is one. */
export async function authenticate(access: ClusterAccess, signal?: AbortSignal): Promise<Authentication> {
  const tls = {
    ca: text(access.caData),
    cert: text(access.certData),
    key: text(access.keyData),
    servername: access.tlsServerName,
    rejectUnauthorized: !access.skipTLSVerify,
  };
  const headers: Record<string, string | string[]> = {};
  let expiresAt: number | undefined;
  let token = access.token ?? (access.tokenFile ? fs.readFileSync(access.tokenFile, 'utf8').trim() : undefined);
  if (access.exec) {
    const credential = await runExec(access.exec, signal);
    token = credential.token ?? token;
    if (credential.clientCertificateData && credential.clientKeyData)
      Object.assign(tls, { cert: credential.clientCertificateData, key: credential.clientKeyData });
    expiresAt = credential.expirationTimestamp ? Date.parse(credential.expirationTimestamp) : undefined;
  }
  if (token) headers.Authorization = `Bearer ${token}`;
  else if (access.username && access.password)
    headers.Authorization = `Basic ${Buffer.from(`${access.username}:${access.password}`).toString('base64')}`;
  const as = access.impersonate;
  if (as?.user) headers['Impersonate-User'] = as.user;
  if (as?.uid) headers['Impersonate-Uid'] = as.uid;
  if (as?.groups?.length) headers['Impersonate-Group'] = as.groups;
  // Extra keys travel percent-encoded in the header name (the API server decodes them).
  for (const [key, values] of Object.entries(as?.extra ?? {})) if (values.length) headers[`Impersonate-Extra-${headerKey(key)}`] = values;
  return { headers, tls, expiresAt };
}

interface ExecCredentialStatus {
  token?: string;
  clientCertificateData?: string;
  clientKeyData?: string;
  expirationTimestamp?: string;
}

/** client.authentication.k8s.io: run the plugin, read an ExecCredential from its stdout. */
function runExec(exec: ExecConfig, signal?: AbortSignal): Promise<ExecCredentialStatus> {
  const apiVersion = exec.apiVersion ?? 'client.authentication.k8s.io/v1';
  const env = {
    ...process.env,
    ...Object.fromEntries((exec.env ?? []).map((e) => [e.name, e.value])),
    KUBERNETES_EXEC_INFO: JSON.stringify({
      apiVersion,
      kind: 'ExecCredential',
      spec: { interactive: false, ...(exec.cluster ? { cluster: exec.cluster } : {}) },
    }),
  };
  return new Promise((resolve, reject) => {
    execFile(exec.command, exec.args ?? [], { env, timeout: 30_000, maxBuffer: 1 << 20, signal }, (err, stdout) => {
      if (err) return reject(new CredentialPluginError('the credential plugin failed'));
      try {
        const status = (JSON.parse(stdout) as { status?: ExecCredentialStatus }).status;
        if (!isObj(status)) throw new CredentialPluginError('no status');
        resolve(status);
      } catch {
        reject(new CredentialPluginError('the credential plugin did not print an ExecCredential'));
      }
    });
  });
}
