// What a claim delivers where, decided without I/O: the places it names, the consumer Provider's
// consent, and the endpoint keys as they resolve in the consumer's cluster; what the consumer's
// watch holds of a Secret there.
import { describe, expect, it } from '@jest/globals';
import {
  dataDigest,
  dataFor,
  digestOf,
  heldAsDigest,
  refuseUnlessConsented,
  wantedPlaces,
  type DeliveringClaim,
} from '../../../../src/runtime/delivery/consumers.ts';
import type { ProviderObject } from '../../../../src/runtime/providers/provider.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const text = (d: Record<string, string>) => Object.fromEntries(Object.entries(d).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
const source = {
  endpoint: b64('http://s-s3.ns.svc.cluster.local:9000'),
  AWS_ENDPOINT_URL: b64('http://s-s3.ns.svc.cluster.local:9000'),
  BUCKET_HOST: b64('s-s3.ns.svc.cluster.local'),
  BUCKET_PORT: b64('9000'),
  AWS_ACCESS_KEY_ID: b64('AK'),
  AWS_SECRET_ACCESS_KEY: b64('SK'),
  BUCKET_NAME: b64('b'),
};
const claim = (consumers: unknown[], deleting = false): DeliveringClaim =>
  ({
    kind: 'Bucket',
    metadata: { name: 'app', namespace: 'team-a', ...(deleting ? { deletionTimestamp: '2026-11-27T00:00:00Z' } : {}) },
    spec: { writeConnectionSecretToRef: { name: 'app-s3' }, consumers },
  }) as DeliveringClaim;
const provider = (consumers?: ProviderObject['spec']['consumers']): ProviderObject => ({
  metadata: { name: 'eu-1', namespace: 'infra' },
  spec: { credentialsSecretRef: { name: 'x' }, ...(consumers ? { consumers } : {}) },
});

describe('delivery decisions', () => {
  it('the places a claim names: its own Secret name by default, one per place however often named, none while it is deleted', () => {
    const c = [
      { providerRef: { name: 'eu-1', namespace: 'infra' }, namespace: 'app' },
      { providerRef: { name: 'eu-1', namespace: 'infra' }, namespace: 'app' },
      { providerRef: { name: 'eu-1', namespace: 'infra' }, namespace: 'app', secretName: 'other' },
    ];
    expect(wantedPlaces(claim(c)).map((p) => [p.to, p.secretName, p.field])).toEqual([
      ['infra/eu-1/app', 'app-s3', 'spec.consumers[0]'],
      ['infra/eu-1/app', 'other', 'spec.consumers[2]'],
    ]);
    expect(wantedPlaces(claim(c, true))).toEqual([]);
  });

  it("a place is consented only when the consumer Provider lists the claim's namespace with that namespace", () => {
    const [place] = wantedPlaces(claim([{ providerRef: { name: 'eu-1', namespace: 'infra' }, namespace: 'app' }]));
    expect(() => refuseUnlessConsented(provider([{ claimNamespace: 'team-a', namespaces: ['app'] }]), 'team-a', place!)).not.toThrow();
    expect(() => refuseUnlessConsented(provider(), 'team-a', place!)).toThrow(/spec.consumers\[0\].*names no entry for team-a/);
    expect(() => refuseUnlessConsented(provider([{ claimNamespace: 'team-a', namespaces: ['other'] }]), 'team-a', place!)).toThrow(
      /into its namespace app \(its spec.consumers allows other\)/,
    );
    expect(() => refuseUnlessConsented(provider([{ claimNamespace: 'team-b', namespaces: ['app'] }]), 'team-a', place!)).toThrow(
      /ConsumerNotAllowed|does not let claims of namespace team-a/,
    );
  });

  it("in the store's cluster the keys are the claim's own; elsewhere the exposure's URL, host, port, addressing style and CA", () => {
    expect(text(dataFor(source, 'ClusterDNS'))).toEqual({ ...text(source), AWS_S3_ADDRESSING_STYLE: 'path' });
    const exposed = text(
      dataFor(source, 'Exposed', {
        url: 'https://s3.eu-1.example.com/',
        caBundle: '-----BEGIN CERTIFICATE-----x',
        addressingStyle: 'virtual',
      }),
    );
    expect(exposed).toEqual({
      ...text(source),
      endpoint: 'https://s3.eu-1.example.com',
      AWS_ENDPOINT_URL: 'https://s3.eu-1.example.com',
      BUCKET_HOST: 's3.eu-1.example.com',
      BUCKET_PORT: '443',
      AWS_S3_ADDRESSING_STYLE: 'virtual',
      'ca.crt': '-----BEGIN CERTIFICATE-----x',
    });
  });

  it('a copy that withholds its endpoint (the store is not proven) withholds it from every consumer, exposed or not', () => {
    const withheld = { ...source } as Record<string, string>;
    for (const k of ['endpoint', 'AWS_ENDPOINT_URL', 'BUCKET_HOST', 'BUCKET_PORT']) delete withheld[k];
    const out = text(dataFor(withheld, 'Exposed', { url: 'http://127.0.77.1:9000' }));
    expect(Object.keys(out).filter((k) => ['endpoint', 'AWS_ENDPOINT_URL', 'BUCKET_HOST', 'BUCKET_PORT'].includes(k))).toEqual([]);
  });
});

describe("what the consumer's watch holds of a Secret", () => {
  const secret = (data: Record<string, string>) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 's', namespace: 'app' },
    type: 'x',
    data,
  });

  it('all but its data, which it holds as a digest: a Secret of a megabyte takes a few bytes', () => {
    const held = heldAsDigest(secret({ blob: 'x'.repeat(1_000_000) }));
    expect(held).not.toHaveProperty('data');
    expect(held).toMatchObject({ metadata: { name: 's', namespace: 'app' }, type: 'x' });
    expect(JSON.stringify(held).length).toBeLessThan(300);
  });

  it('a digest the same for the same keys and values in any order, another for other data, whether held or read whole', () => {
    const a = secret({ k: b64('1'), l: b64('2') });
    expect(digestOf(heldAsDigest(a))).toBe(dataDigest({ l: b64('2'), k: b64('1') }));
    expect(digestOf(a)).toBe(digestOf(heldAsDigest(a)));
    expect(digestOf(heldAsDigest(secret({ k: b64('1'), l: b64('3') })))).not.toBe(digestOf(a));
    expect(digestOf(heldAsDigest(secret({ k: b64('1') })))).not.toBe(digestOf(a));
  });
});
