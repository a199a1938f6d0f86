// Turns a Provider's Secret into a ClusterAccess (how to reach and authenticate to the target). Values are plain text (PEM, token, URL), as the design
// doc's Secret holds them. Every failure names the Secret and the key, never a value: the endpoint, too,
// may come from someone else's Secret.
//
// The Secret is written by another team, so it must not make provider-rook read its own files (a
// kubeconfig's tokenFile could be our ServiceAccount token), run programs, or call cloud metadata. A
// kubeconfig is checked raw, and only its current context's inline values are kept. Where it may
// connect is checked twice: a literal address here, a host name's addresses at each connect.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { X509Certificate, createHash, createPrivateKey } from 'node:crypto';
import { load } from 'js-yaml';
import { ReasonedError } from '../../kit/conditions.ts';
import type { ClusterAccess, ExecConfig } from '../../kit/kube/config.ts';
import { Reasons } from '../reasons.ts';

export interface Credentials {
  /** A stable digest of everything that identifies the target and the user: the client cache key. */
  fingerprint: string;
  access: ClusterAccess;
  server: string;
}

export interface CredentialOptions {
  /** Lets a kubeconfig's exec plugin run (the off-by-default --allow-exec-credentials flag). */
  allowExec?: boolean;
  endpoints?: EndpointPolicy;
}

/** Ranges --refuse-endpoint-ranges may refuse besides those always refused. */
export type EndpointRange = 'loopback' | 'private';

/** Where a Provider's endpoint may be, beyond what is always refused. */
export interface EndpointPolicy {
  /** Plain http:// when no credential is sent (--allow-plain-http); with one it is refused always. */
  allowPlainHttp?: boolean;
  refuseRanges?: readonly EndpointRange[];
  /** Resolves host names (default: dns.lookup); tests inject their own. */
  lookup?: LookupFunction;
}

const b64 = (pem: string): string => Buffer.from(pem).toString('base64');

/** The keys a Provider's Secret may hold; any other key is ignored. */
const SECRET_KEYS = ['kubeconfig', 'endpoint', 'clusterCA', 'clientCert', 'clientKey', 'token', 'username', 'password'] as const;
type SecretKeys = Partial<Record<(typeof SECRET_KEYS)[number], string>>;

function secretKeys(text: Record<string, string>): SecretKeys {
  const keys: SecretKeys = {};
  for (const k of SECRET_KEYS) if (text[k] !== undefined) keys[k] = text[k];
  return keys;
}

/** Decodes a Secret's data (base64) into text, dropping empty values. */
export function secretText(data: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(data ?? {})) {
    const text = Buffer.from(v, 'base64').toString('utf8').trim();
    if (text) out[k] = text;
  }
  return out;
}

const subnets = (...rules: [string, number][]): BlockList => {
  const list = new BlockList();
  for (const [address, prefix] of rules) list.addSubnet(address, prefix, isIP(address) === 4 ? 'ipv4' : 'ipv6');
  return list;
};

// BlockList also matches IPv4-mapped IPv6 (::ffff:a.b.c.d) against the IPv4 rules. Loopback and
// private ranges stay allowed unless refused: local and on-premises clusters live there.
const RULES: { range?: EndpointRange; list: BlockList; is: string }[] = [
  {
    // Link-local holds cloud metadata (169.254.169.254; AWS's fd00:ec2::254 too). ::169.254.x.y is
    // IPv4-compatible; 64:ff9b::/96 reaches IPv4 through NAT64.
    list: subnets(
      ['169.254.0.0', 16],
      ['0.0.0.0', 8],
      ['fe80::', 10],
      ['::', 128],
      ['fd00:ec2::254', 128],
      ['::a9fe:0', 112],
      ['64:ff9b::a9fe:0', 112],
    ),
    is: 'a link-local, unspecified or cloud metadata address, which provider-rook never calls',
  },
  {
    range: 'loopback',
    list: subnets(['127.0.0.0', 8], ['::1', 128]),
    is: "a loopback address, which provider-rook's --refuse-endpoint-ranges refuses",
  },
  {
    range: 'private',
    list: subnets(['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16], ['100.64.0.0', 10], ['fc00::', 7]),
    is: "a private address, which provider-rook's --refuse-endpoint-ranges refuses",
  },
];

/** Which rule refuses this IP address, in our words (never the address), or undefined. */
export function refusedAddress(address: string, ranges: readonly EndpointRange[] = []): string | undefined {
  const family = isIP(address) === 4 ? 'ipv4' : 'ipv6';
  return RULES.find((r) => (!r.range || ranges.includes(r.range)) && r.list.check(address, family))?.is;
}

/** Why provider-rook will not talk to this URL, in our own words (never the URL), or undefined. */
export function refusedEndpoint(url: URL, policy: EndpointPolicy = {}): string | undefined {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'is not an http or https URL';
  // A user name or password in the URL would go wherever the URL goes (logs, Basic auth over plain http).
  if (url.username || url.password) return 'carries a user name or password; put credentials in their own keys';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  // A name is checked when connecting (guardedLookup); the URL parser already turned numeric forms into addresses.
  const why = isIP(host) ? refusedAddress(host, policy.refuseRanges) : undefined;
  return why && `is ${why}`;
}

/** Credentials never go over plain http; nothing does unless --allow-plain-http (local development). */
function refusedPlainHttp(url: URL, sendsCredentials: boolean, policy: EndpointPolicy): string | undefined {
  if (url.protocol !== 'http:') return undefined;
  if (sendsCredentials) return 'uses plain http, which would send the credentials unencrypted';
  return policy.allowPlainHttp ? undefined : 'uses plain http, which provider-rook refuses unless started with --allow-plain-http';
}

/**
 * A lookup for net/tls connect that fails when ANY address the name resolves to is refused. It runs
 * at every new connection, so a name whose answer changes later (DNS rebinding) is caught then too.
 */
export function guardedLookup(
  refusal: (why: string) => Error,
  ranges: readonly EndpointRange[] = [],
  resolve: LookupFunction = dnsLookup as LookupFunction,
): LookupFunction {
  return (hostname, options, callback) =>
    resolve(hostname, { ...options, all: true }, (err, answer) => {
      const addresses = answer as LookupAddress[];
      if (err || !addresses.length) return callback(err ?? Object.assign(new Error('no address'), { code: 'ENOTFOUND' }), '');
      const why = addresses.map((a) => refusedAddress(a.address, ranges)).find(Boolean);
      if (why) return callback(refusal(why), '');
      if (options.all) callback(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    });
}

/**
 * The lookup a target's connections use. Its refusal names neither the host nor the address, nor a
 * Secret: Providers whose Secrets hold the same credentials share one client.
 */
function endpointLookup(policy: EndpointPolicy): LookupFunction {
  return guardedLookup(
    (why) => new ReasonedError(Reasons.EndpointNotAllowed, `the target cluster's host name resolves to ${why}`),
    policy.refuseRanges,
    policy.lookup,
  );
}

export function credentialsFromSecret(where: string, data: Record<string, string> | undefined, opts: CredentialOptions = {}): Credentials {
  const keys = secretKeys(secretText(data));
  const policy = opts.endpoints ?? {};
  const fingerprint = createHash('sha256')
    .update(JSON.stringify(Object.entries(keys).sort()))
    .digest('hex')
    .slice(0, 32);

  if (keys.kubeconfig) return { fingerprint, ...fromKubeconfig(where, keys.kubeconfig, opts.allowExec === true, policy) };

  const url = secretEndpoint(where, keys, policy);
  const server = url.toString().replace(/\/+$/, '');
  checkSecretCA(where, keys, url);
  const user = secretUser(where, keys);
  // Every kind of user secretUser returns sends a credential.
  const plain = refusedPlainHttp(url, true, policy);
  if (plain) throw new ReasonedError(Reasons.InvalidCredentials, `key 'endpoint' of Secret ${where} ${plain}`);

  return {
    fingerprint,
    access: { server, caData: keys.clusterCA ? b64(keys.clusterCA) : undefined, ...user, lookup: endpointLookup(policy) },
    server,
  };
}

/** The Secret's 'endpoint' as a URL (a bare host means https), if it is one provider-rook may call. */
function secretEndpoint(where: string, keys: SecretKeys, policy: EndpointPolicy): URL {
  if (!keys.endpoint) {
    throw new ReasonedError(Reasons.SecretKeyMissing, `Secret ${where} has neither a 'kubeconfig' key nor an 'endpoint' key`);
  }
  let url: URL;
  try {
    url = new URL(keys.endpoint.includes('://') ? keys.endpoint : `https://${keys.endpoint}`);
  } catch {
    throw new ReasonedError(Reasons.InvalidCredentials, `key 'endpoint' of Secret ${where} is not a URL`);
  }
  const why = refusedEndpoint(url, policy);
  if (why) throw new ReasonedError(Reasons.InvalidCredentials, `key 'endpoint' of Secret ${where} ${why}`);
  return url;
}

/** An https server is verified against the Secret's 'clusterCA', never trusted blindly. */
function checkSecretCA(where: string, keys: SecretKeys, url: URL): void {
  if (url.protocol === 'https:' && !keys.clusterCA) {
    throw new ReasonedError(
      Reasons.SecretKeyMissing,
      `Secret ${where} has no 'clusterCA' key; it is needed to verify the server in key 'endpoint'`,
    );
  }
  if (keys.clusterCA && !isCertificate(keys.clusterCA)) throw notPem(where, 'clusterCA');
}

type UserCredentials = Pick<ClusterAccess, 'token' | 'certData' | 'keyData' | 'username' | 'password'>;

/** Who the Secret acts as: a token, else a client certificate and key, else a username and password. */
function secretUser(where: string, keys: SecretKeys): UserCredentials {
  const user: UserCredentials = {};
  if (keys.token) {
    user.token = keys.token;
  } else if (keys.clientCert || keys.clientKey) {
    if (!keys.clientCert) throw new ReasonedError(Reasons.SecretKeyMissing, `Secret ${where} has 'clientKey' but no 'clientCert'`);
    if (!keys.clientKey) throw new ReasonedError(Reasons.SecretKeyMissing, `Secret ${where} has 'clientCert' but no 'clientKey'`);
    if (!isCertificate(keys.clientCert)) throw notPem(where, 'clientCert');
    if (!isPrivateKey(keys.clientKey)) {
      throw new ReasonedError(Reasons.InvalidCredentials, `key 'clientKey' of Secret ${where} is not a valid PEM private key`);
    }
    user.certData = b64(keys.clientCert);
    user.keyData = b64(keys.clientKey);
  } else if (keys.username && keys.password) {
    user.username = keys.username;
    user.password = keys.password;
  } else {
    throw new ReasonedError(
      Reasons.SecretKeyMissing,
      `Secret ${where} has no credentials: set 'token', 'clientCert' and 'clientKey', or 'username' and 'password'`,
    );
  }
  return user;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

// User fields that would make us read our disk or run a program. exec is handled on its own.
const userFileFields = ['tokenFile', 'token-file', 'client-certificate', 'client-key'];
// Fields we do not carry over and must not silently drop: they change who we act as or where we connect.
const unsupported = { cluster: ['proxy-url'], user: ['as', 'as-uid', 'as-groups', 'as-user-extra', 'auth-provider'] };

/** An entry of a kubeconfig's contexts/clusters/users: its body, and where it is (e.g. `users[0].user`). */
type Entry = { at: string; body: Obj };
/** A refusal of the kubeconfig, naming the Secret and what is wrong in it (never a value). */
type Fail = (what: string) => ReasonedError;

/** Reads a string field; anything else (a number, a map) is refused rather than passed on. */
function stringField(e: Entry, field: string, fail: Fail): string | undefined {
  const v = e.body[field];
  if (v == null || v === '') return undefined;
  if (typeof v !== 'string') throw fail(`has ${e.at}.${field} that is not a string`);
  return v;
}

const present = (e: Entry, field: string): boolean => e.body[field] != null;

/** Checks a kubeconfig's raw YAML, then keeps only its current context's inline values. */
function fromKubeconfig(
  where: string,
  text: string,
  allowExec: boolean,
  policy: EndpointPolicy,
): { access: ClusterAccess; server: string } {
  const fail: Fail = (what) => new ReasonedError(Reasons.InvalidCredentials, `key 'kubeconfig' of Secret ${where} ${what}`);
  const { c, u } = currentEntries(text, fail);
  refuseUnsafeFields(c, u, allowExec, fail);
  const caData = stringField(c, 'certificate-authority-data', fail);
  if (caData && !isCertificate(Buffer.from(caData, 'base64').toString()))
    throw notPem(where, 'kubeconfig', `${c.at}.certificate-authority-data`);
  const user = inlineUser(where, u, fail);
  const sendsCredentials = Boolean(user.token || user.certData || user.username || user.password || user.exec);
  const { server, skipTLSVerify } = checkedServer(c, sendsCredentials, policy, fail);

  const access: ClusterAccess = {
    server: server.replace(/\/$/, ''),
    caData,
    tlsServerName: stringField(c, 'tls-server-name', fail),
    skipTLSVerify,
    ...user,
    lookup: endpointLookup(policy),
  };
  return { access, server: access.server };
}

/** Parses the kubeconfig and finds its current context's cluster (c) and user (u) entries. */
function currentEntries(text: string, fail: Fail): { c: Entry; u: Entry } {
  let doc: unknown;
  try {
    doc = load(text);
  } catch {
    throw fail('is not a valid kubeconfig');
  }
  if (!isObj(doc)) throw fail('is not a valid kubeconfig');
  const current = doc['current-context'];
  if (typeof current !== 'string' || !current) throw fail('has no current-context');
  const context = entry(doc, 'contexts', 'context', current);
  if (!context) throw fail('has no entry in contexts for its current-context');
  const c = entry(doc, 'clusters', 'cluster', context.body.cluster);
  if (!c) throw fail(`names in ${context.at} a cluster that is not in clusters`);
  const u = entry(doc, 'users', 'user', context.body.user);
  if (!u) throw fail(`names in ${context.at} a user that is not in users`);
  return { c, u };
}

/** Refuses what would read our files, run a program unasked, or be silently dropped (see the top of the file). */
function refuseUnsafeFields(c: Entry, u: Entry, allowExec: boolean, fail: Fail): void {
  if (present(c, 'certificate-authority'))
    throw fail(`sets ${c.at}.certificate-authority: files are never read, use certificate-authority-data`);
  for (const f of userFileFields) {
    if (present(u, f))
      throw fail(`sets ${u.at}.${f}: files are never read, put the value inline (token, client-certificate-data, client-key-data)`);
  }
  if (present(u, 'exec') && !allowExec)
    throw fail(`sets ${u.at}.exec: exec plugins are off (provider-rook's --allow-exec-credentials turns them on)`);
  for (const f of unsupported.cluster) if (present(c, f)) throw fail(`sets ${c.at}.${f}, which provider-rook does not support`);
  for (const f of unsupported.user) if (present(u, f)) throw fail(`sets ${u.at}.${f}, which provider-rook does not support`);
  const exec = u.body.exec;
  if (exec != null && !(isObj(exec) && typeof exec.command === 'string' && exec.command)) throw fail(`has ${u.at}.exec without a command`);
}

/** The user entry's inline credentials, a client certificate only with its key and both valid PEM. */
function inlineUser(where: string, u: Entry, fail: Fail): UserCredentials & Pick<ClusterAccess, 'exec'> {
  const certData = stringField(u, 'client-certificate-data', fail);
  const keyData = stringField(u, 'client-key-data', fail);
  if (!certData !== !keyData) throw fail(`has only one of ${u.at}.client-certificate-data and ${u.at}.client-key-data`);
  if (certData && !isCertificate(Buffer.from(certData, 'base64').toString()))
    throw notPem(where, 'kubeconfig', `${u.at}.client-certificate-data`);
  if (keyData && !isPrivateKey(Buffer.from(keyData, 'base64').toString()))
    throw fail(`has ${u.at}.client-key-data that is not a valid PEM private key`);
  return {
    token: stringField(u, 'token', fail),
    certData,
    keyData,
    username: stringField(u, 'username', fail),
    password: stringField(u, 'password', fail),
    exec: (u.body.exec ?? undefined) as ExecConfig | undefined,
  };
}

/** The cluster's server, if provider-rook may call it, and whether TLS verification is skipped (never with credentials). */
function checkedServer(
  c: Entry,
  sendsCredentials: boolean,
  policy: EndpointPolicy,
  fail: Fail,
): { server: string; skipTLSVerify: boolean } {
  const server = stringField(c, 'server', fail);
  if (!server) throw fail(`has no ${c.at}.server`);
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw fail(`has ${c.at}.server that is not a URL`);
  }
  const why = refusedEndpoint(url, policy) ?? refusedPlainHttp(url, sendsCredentials, policy);
  if (why) throw fail(`has ${c.at}.server that ${why}`);
  const skipTLSVerify = c.body['insecure-skip-tls-verify'] === true;
  if (skipTLSVerify && sendsCredentials)
    throw fail(`sets ${c.at}.insecure-skip-tls-verify while sending credentials; use certificate-authority-data`);
  return { server, skipTLSVerify };
}

/** The entry of contexts/clusters/users with this name, and where it is (e.g. `users[0].user`); never its name. */
function entry(doc: Obj, list: string, field: string, name: unknown): Entry | undefined {
  const items = doc[list];
  if (typeof name !== 'string' || !name || !Array.isArray(items)) return undefined;
  const i = items.findIndex((it) => isObj(it) && it.name === name);
  const body = i < 0 ? undefined : (items[i] as Obj)[field];
  return isObj(body) ? { at: `${list}[${i}].${field}`, body } : undefined;
}

function isCertificate(pem: string): boolean {
  try {
    new X509Certificate(pem);
    return true;
  } catch {
    return false;
  }
}

function isPrivateKey(pem: string): boolean {
  try {
    createPrivateKey(pem);
    return true;
  } catch {
    return false;
  }
}

function notPem(where: string, key: string, field?: string): ReasonedError {
  return new ReasonedError(
    Reasons.InvalidCredentials,
    `key '${key}' of Secret ${where} ${field ? `has ${field} that ` : ''}is not a valid PEM certificate`,
  );
}
