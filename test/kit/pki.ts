// Certificates for a local control plane, made with the openssl CLI (Node has no X.509 writer).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';

export interface Pki {
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  adminCert: string;
  adminKey: string;
  serviceAccountKey: string;
  serviceAccountPub: string;
}

export function pkiPaths(dir: string): Pki {
  const p = (file: string): string => path.join(dir, file);
  return {
    caCert: p('ca.crt'),
    caKey: p('ca.key'),
    servingCert: p('apiserver.crt'),
    servingKey: p('apiserver.key'),
    adminCert: p('admin.crt'),
    adminKey: p('admin.key'),
    serviceAccountKey: p('sa.key'),
    serviceAccountPub: p('sa.pub'),
  };
}

async function openssl(args: string[]): Promise<void> {
  try {
    await execa('openssl', args);
  } catch (err) {
    const e = err as { code?: string; stderr?: string };
    if (e.code === 'ENOENT')
      throw new Error('openssl was not found on PATH; it is needed to make local cluster certificates', { cause: err });
    throw new Error(`openssl ${args[0]} failed: ${e.stderr ?? String(err)}`, { cause: err });
  }
}

/** Creates a CA and signs a certificate with it (for tests that need a second, unrelated CA). */
export async function makeCa(dir: string, commonName: string): Promise<{ cert: string; key: string }> {
  mkdirSync(dir, { recursive: true });
  const cert = path.join(dir, 'ca.crt');
  const key = path.join(dir, 'ca.key');
  await openssl([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '3650',
    '-subj',
    `/CN=${commonName}`,
    '-keyout',
    key,
    '-out',
    cert,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
  ]);
  return { cert, key };
}

async function signed(dir: string, name: string, subject: string, ca: { cert: string; key: string }, extensions: string): Promise<void> {
  const key = path.join(dir, `${name}.key`);
  const csr = path.join(dir, `${name}.csr`);
  const ext = path.join(dir, `${name}.ext`);
  writeFileSync(ext, extensions);
  await openssl([
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-subj',
    subject,
    '-keyout',
    key,
    '-out',
    csr,
  ]);
  await openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.cert,
    '-CAkey',
    ca.key,
    '-CAcreateserial',
    '-days',
    '3650',
    '-out',
    path.join(dir, `${name}.crt`),
    '-extfile',
    ext,
  ]);
}

/** Makes every certificate a local cluster needs, once; later calls reuse them. */
export async function ensurePki(dir: string, clusterName: string): Promise<Pki> {
  const pki = pkiPaths(dir);
  if (Object.values(pki).every((file) => existsSync(file))) return pki;
  const ca = await makeCa(dir, `${clusterName}-ca`);
  await signed(
    dir,
    'apiserver',
    '/CN=kube-apiserver',
    ca,
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' +
      'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\n',
  );
  await signed(
    dir,
    'admin',
    '/O=system:masters/CN=admin',
    ca,
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n',
  );
  await openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', pki.serviceAccountKey]);
  await openssl(['pkey', '-in', pki.serviceAccountKey, '-pubout', '-out', pki.serviceAccountPub]);
  return pki;
}

export function readPem(file: string): string {
  return readFileSync(file, 'utf8');
}

/** A serving certificate for `hostnames` (wildcards allowed) signed by `ca`: <dir>/<name>.crt and .key (for tests' TLS endpoints). */
export async function makeServingCert(
  dir: string,
  name: string,
  hostnames: string[],
  ca: { cert: string; key: string },
): Promise<{ cert: string; key: string }> {
  mkdirSync(dir, { recursive: true });
  await signed(
    dir,
    name,
    `/CN=${hostnames[0]}`,
    ca,
    `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=${hostnames.map((h) => `DNS:${h}`).join(',')}\n`,
  );
  return { cert: path.join(dir, `${name}.crt`), key: path.join(dir, `${name}.key`) };
}
