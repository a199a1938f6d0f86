// Turns a Provider's Secret into a KubeConfig. Values are plain text (PEM, token, URL), as the design
// doc's Secret holds them. Every failure names the Secret and the key, never a value.
import { X509Certificate, createHash, createPrivateKey } from 'node:crypto';
import { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { ReasonedError } from '../conditions.ts';

export interface Credentials {
  /** A stable digest of everything that identifies the target and the user: the client cache key. */
  fingerprint: string;
  kubeConfig: KubeConfig;
  server: string;
}

const b64 = (pem: string): string => Buffer.from(pem).toString('base64');

const secretKeys = z.object({
  kubeconfig: z.string().optional(),
  endpoint: z.string().optional(),
  clusterCA: z.string().optional(),
  clientCert: z.string().optional(),
  clientKey: z.string().optional(),
  token: z.string().optional(),
  username: z.string().optional(),
  password: z.string().optional(),
});

/** Decodes a Secret's data (base64) into text, dropping empty values. */
export function secretText(data: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(data ?? {})) {
    const text = Buffer.from(v, 'base64').toString('utf8').trim();
    if (text) out[k] = text;
  }
  return out;
}

export function credentialsFromSecret(where: string, data: Record<string, string> | undefined): Credentials {
  const keys = secretKeys.parse(secretText(data));
  const fingerprint = createHash('sha256').update(JSON.stringify(Object.entries(keys).sort())).digest('hex').slice(0, 32);
  const kc = new KubeConfig();

  if (keys.kubeconfig) {
    try {
      kc.loadFromString(keys.kubeconfig);
    } catch {
      throw new ReasonedError('InvalidCredentials', `key 'kubeconfig' of Secret ${where} is not a valid kubeconfig`);
    }
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new ReasonedError('InvalidCredentials', `key 'kubeconfig' of Secret ${where} has no current context`);
    if (cluster.caData) checkCertificate(Buffer.from(cluster.caData, 'base64').toString(), where, 'kubeconfig (certificate-authority-data)');
    return { fingerprint, kubeConfig: kc, server: cluster.server };
  }

  if (!keys.endpoint) {
    throw new ReasonedError('SecretKeyMissing', `Secret ${where} has neither a 'kubeconfig' key nor an 'endpoint' key`);
  }
  let url: URL;
  try {
    url = new URL(keys.endpoint.includes('://') ? keys.endpoint : `https://${keys.endpoint}`);
  } catch {
    throw new ReasonedError('InvalidCredentials', `key 'endpoint' of Secret ${where} is not a URL`);
  }
  const server = url.toString().replace(/\/+$/, '');
  if (url.protocol === 'https:' && !keys.clusterCA) {
    throw new ReasonedError('SecretKeyMissing', `Secret ${where} has no 'clusterCA' key; it is needed to verify ${server}`);
  }
  if (keys.clusterCA) checkCertificate(keys.clusterCA, where, 'clusterCA');

  const user: { name: string; token?: string; certData?: string; keyData?: string; username?: string; password?: string } = { name: 'provider-rook' };
  if (keys.token) {
    user.token = keys.token;
  } else if (keys.clientCert || keys.clientKey) {
    if (!keys.clientCert) throw new ReasonedError('SecretKeyMissing', `Secret ${where} has 'clientKey' but no 'clientCert'`);
    if (!keys.clientKey) throw new ReasonedError('SecretKeyMissing', `Secret ${where} has 'clientCert' but no 'clientKey'`);
    checkCertificate(keys.clientCert, where, 'clientCert');
    try {
      createPrivateKey(keys.clientKey);
    } catch {
      throw new ReasonedError('InvalidCredentials', `key 'clientKey' of Secret ${where} is not a valid PEM private key`);
    }
    user.certData = b64(keys.clientCert);
    user.keyData = b64(keys.clientKey);
  } else if (keys.username && keys.password) {
    user.username = keys.username;
    user.password = keys.password;
  } else {
    throw new ReasonedError('SecretKeyMissing', `Secret ${where} has no credentials: set 'token', 'clientCert' and 'clientKey', or 'username' and 'password'`);
  }
  kc.loadFromClusterAndUser(
    { name: 'target', server, caData: keys.clusterCA ? b64(keys.clusterCA) : undefined, skipTLSVerify: url.protocol === 'http:' },
    user,
  );
  return { fingerprint, kubeConfig: kc, server };
}

function checkCertificate(pem: string, where: string, key: string): void {
  try {
    new X509Certificate(pem);
  } catch {
    throw new ReasonedError('InvalidCredentials', `key '${key}' of Secret ${where} is not a valid PEM certificate`);
  }
}
