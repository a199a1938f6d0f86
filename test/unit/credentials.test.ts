import { describe, expect, it } from '@jest/globals';
import { credentialsFromSecret } from '../../src/runtime/native/credentials.ts';
import { diffFields } from '../../src/runtime/native/external.ts';

const enc = (o: Record<string, string>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));

describe('credentialsFromSecret', () => {
  it.each([
    [{}, 'SecretKeyMissing', /neither a 'kubeconfig' key nor an 'endpoint' key/],
    [{ endpoint: 'https://k:6443' }, 'SecretKeyMissing', /no 'clusterCA' key/],
    [{ endpoint: 'https://k:6443', clusterCA: 'garbage' }, 'InvalidCredentials', /'clusterCA' .* not a valid PEM certificate/],
    [{ kubeconfig: 'clusters: [' }, 'InvalidCredentials', /not a valid kubeconfig/],
    [{ endpoint: 'http://k:8080' }, 'SecretKeyMissing', /has no credentials/],
    [{ endpoint: 'http://k:8080', clientCert: 'x' }, 'SecretKeyMissing', /'clientCert' but no 'clientKey'/],
  ])('rejects %j with %s', (keys, reason, message) => {
    let thrown: { reason?: string; message: string } | undefined;
    try {
      credentialsFromSecret('ns/s', enc(keys));
    } catch (err) {
      thrown = err as { reason?: string; message: string };
    }
    expect(thrown?.reason).toBe(reason);
    expect(thrown?.message).toMatch(message);
    expect(thrown?.message).toContain('ns/s');
  });

  it('never puts a value into an error', () => {
    try {
      credentialsFromSecret('ns/s', enc({ endpoint: 'https://k:6443', clusterCA: 'SUPER-SECRET-VALUE' }));
    } catch (err) {
      expect((err as Error).message).not.toContain('SUPER-SECRET-VALUE');
    }
  });

  it('gives the same fingerprint for the same credentials and another for different ones', () => {
    const a = credentialsFromSecret('ns/a', enc({ endpoint: 'http://k:8080', token: 't1' }));
    const b = credentialsFromSecret('ns/b', enc({ endpoint: 'http://k:8080', token: 't1' }));
    const c = credentialsFromSecret('ns/a', enc({ endpoint: 'http://k:8080', token: 't2' }));
    expect(a.fingerprint).toBe(b.fingerprint);
    expect(a.fingerprint).not.toBe(c.fingerprint);
    expect(a.server).toBe('http://k:8080');
  });
});

describe('diffFields', () => {
  it('reports only fields we want that differ or are missing', () => {
    expect(diffFields({ spec: { a: 1, b: [1, 2] } }, { spec: { a: 1, b: [1, 2], extra: true } })).toEqual([]);
    expect(diffFields({ spec: { a: 1, b: [1, 2] } }, { spec: { a: 2, b: [1] } })).toEqual(['.spec.a', '.spec.b']);
    expect(diffFields({ spec: { m: { k: 'v' } } }, { spec: {} })).toEqual(['.spec.m']);
  });
});
