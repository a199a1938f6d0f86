// What a SeaweedStore asks of its Seaweed: a gateway that starts with the guard identity when
// provider-rook makes the Seaweed, and nothing of the kind when it imports one (which keeps its own).
import { describe, expect, it } from '@jest/globals';
import type { SeaweedStore } from '../../../../src/backends/seaweedfs/api.ts';
import { seaweedNameFor } from '../../../../src/backends/seaweedfs/seaweed.ts';
import { seaweedStoreKind } from '../../../../src/backends/seaweedfs/store.ts';
import { nameOf } from '../../../../src/runtime/native/kind.ts';
import { S3_ENDPOINT_KEYS } from '../../../../src/backends/shared/s3-details.ts';
import { ANNOTATION_EXTERNAL_NAME } from '../../../../src/kit/meta.ts';
import { testContext } from '../../../kit/kind-context.ts';

const store = (annotations: Record<string, string> = {}): SeaweedStore =>
  ({
    apiVersion: 'seaweedfs.crossplane.io/v1alpha1',
    kind: 'SeaweedStore',
    metadata: { name: 's', namespace: 'platform', uid: 'mr-1', annotations },
    spec: { forProvider: {}, targetNamespace: 'sw', providerRef: { name: 'p' } },
  }) as unknown as SeaweedStore;
const s3Of = (mr: SeaweedStore) => (seaweedStoreKind.desired(mr, 's', testContext).spec as { s3: Record<string, unknown> }).s3;
const guardOf = (mr: SeaweedStore) => (seaweedStoreKind.companions?.(mr, 's', testContext) ?? []).find((c) => c.name === 's-s3-config');

describe("a SeaweedStore's gateway identities", () => {
  it('a Seaweed provider-rook makes names the guard Secret, whose copy in its place withholds the endpoint', () => {
    expect(s3Of(store()).configSecret).toEqual({ name: 's-s3-config', key: 'config.json' });
    expect(guardOf(store())?.publishedAs).toEqual(S3_ENDPOINT_KEYS);
  });

  it('an imported Seaweed keeps the identities it names: no configSecret is written, no guard made', () => {
    const imported = store({ [ANNOTATION_EXTERNAL_NAME]: 's' });
    expect(s3Of(imported)).not.toHaveProperty('configSecret');
    expect(guardOf(imported)).toBeUndefined();
  });
});

describe("who reaches a Seaweed's servers", () => {
  const isolationOf = (mr: SeaweedStore, operatorNamespace?: string) =>
    (seaweedStoreKind.companions?.(mr, 's', { ...testContext, ...(operatorNamespace ? { operatorNamespace } : {}) }) ?? []).find(
      (c) => c.type.kind === 'NetworkPolicy',
    );

  it("lets only its own servers and its operator's namespace reach them (the one its Provider names), and anyone its S3 gateway", () => {
    const policy = isolationOf(store(), 'storage-operators')!.build();
    expect(policy.metadata).toMatchObject({ name: 's-ingress', namespace: 'sw' });
    expect(policy.spec).toMatchObject({
      podSelector: { matchLabels: { 'app.kubernetes.io/instance': 's' } },
      ingress: [
        { from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/instance': 's' } } }] },
        { from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'storage-operators' } } }] },
        { ports: [{ port: 8333 }] },
      ],
    });
  });

  it('an imported Seaweed is left as its owner has it: no NetworkPolicy', () => {
    expect(isolationOf(store({ [ANNOTATION_EXTERNAL_NAME]: 's' }), 'storage-operators')).toBeUndefined();
  });
});

describe("a SeaweedStore's Seaweed name", () => {
  // A claim's store: "<namespace>-<claim>-<5 characters>", up to 52 characters.
  const claimed = 'team-payments-production-invoices-archive-bu-x7k2p';
  const named = (name: string, annotations: Record<string, string> = {}) => ({
    ...store(annotations),
    metadata: { ...store(annotations).metadata, name },
  });

  it("fits what the operator derives from it (StatefulSet pods' revision label, the -volume-peer Service): at most 45 characters, a letter first", () => {
    const name = seaweedNameFor(claimed);
    expect(name.length).toBeLessThanOrEqual(45);
    expect(`${name}-volume-peer`.length).toBeLessThanOrEqual(63);
    expect(name).toMatch(/^team-payments-production-invoices-ar-[0-9a-f]{8}$/);
    expect(seaweedNameFor(claimed)).toBe(name);
    // Two long names alike but for their end stay apart.
    expect(seaweedNameFor(claimed.replace('x7k2p', 'x7k2q'))).not.toBe(name);
    expect(seaweedNameFor('1team-app-x7k2p')).toMatch(/^s-1team-app-x7k2p-[0-9a-f]{8}$/);
    expect(seaweedNameFor('short-store')).toBe('short-store');
  });

  it('is what a create records for it, and a name the store records already stays (its Seaweed was made under it)', () => {
    expect(nameOf(seaweedStoreKind, named(claimed) as SeaweedStore)).toBe(seaweedNameFor(claimed));
    expect(nameOf(seaweedStoreKind, named(claimed, { [ANNOTATION_EXTERNAL_NAME]: claimed }) as SeaweedStore)).toBe(claimed);
  });
});

describe("a SeaweedStore's lifecycle worker", () => {
  const withBucket = (features?: object) =>
    ({ ...store(), spec: { ...store().spec, bucket: { name: 'b', ...(features ? { features } : {}) } } }) as unknown as SeaweedStore;
  const specOf = (mr: SeaweedStore) => seaweedStoreKind.desired(mr, 's', testContext).spec as Record<string, unknown>;
  const adminSecret = (mr: SeaweedStore) =>
    (seaweedStoreKind.companions?.(mr, 's', testContext) ?? []).find((c) => c.name === 's-admin-credentials');

  it('runs, beside an admin server with credentials of its own, where a bucket of the store has lifecycle rules: nothing else expires them', () => {
    const mr = withBucket({ lifecycle: { rules: [{ id: 'logs', expirationDays: 30 }] } });
    expect(specOf(mr).admin).toEqual({ credentialsSecret: { name: 's-admin-credentials' } });
    expect(specOf(mr).worker).toEqual({ replicas: 1, jobType: 's3_lifecycle' });
    const secret = adminSecret(mr)!.build() as unknown as { data: Record<string, string> };
    expect(Buffer.from(secret.data.adminPassword!, 'base64').toString()).toHaveLength(40);
    // The same on every pass: derived, not drawn.
    expect(adminSecret(mr)!.build()).toEqual(secret);
  });

  it('runs in a shared store (no bucket of its own: its buckets may have rules), and not in a store whose bucket has none, nor in an imported one', () => {
    expect(specOf(store()).worker).toEqual({ replicas: 1, jobType: 's3_lifecycle' });
    expect(specOf(withBucket()).worker).toBeUndefined();
    expect(adminSecret(withBucket())).toBeUndefined();
    expect(specOf(store({ [ANNOTATION_EXTERNAL_NAME]: 's' })).worker).toBeUndefined();
  });
});

describe('what provider-rook 0.2.0 made of a bucket user that is no longer wanted', () => {
  // Its S3Policy gave the policy the user's name, with dots, which SeaweedFS refuses for a policy.
  const oldPolicy = ['S3Policy sw/s-bucket', 'S3PolicyBinding sw/s-bucket'];
  const retired = (mr: SeaweedStore) => (seaweedStoreKind.retired?.(mr, 's') ?? []).map((r) => `${r.type.kind} ${r.namespace}/${r.name}`);

  it("a store with a bucket retires its user's S3Policy and S3PolicyBinding of the old name, and makes them under the new", () => {
    const withBucket = { ...store(), spec: { ...store().spec, bucket: { name: 'b' } } } as unknown as SeaweedStore;
    expect(retired(withBucket)).toEqual(expect.arrayContaining(oldPolicy));
    const made = (seaweedStoreKind.companions?.(withBucket, 's', testContext) ?? []).map((c) => `${c.type.kind} ${c.namespace}/${c.name}`);
    expect(made).toEqual(expect.arrayContaining(['S3Policy sw/s-bucket-policy', 'S3PolicyBinding sw/s-bucket-policy']));
    expect(made).not.toEqual(expect.arrayContaining([oldPolicy[0]]));
  });

  it('a store without one has none to retire', () => {
    expect(retired(store())).not.toEqual(expect.arrayContaining([oldPolicy[0]]));
  });
});
