// Ownership marks: what a signature proves, and what a copy, an edit, another key or another
// control plane cannot. A table in crossplane-runtime's style: each case names its vouchers and the
// relation they must give.
import { describe, expect, it } from '@jest/globals';
import type { ResourceType } from '../../../../src/kit/kube/resources.ts';
import { OwnershipKey } from '../../../../src/runtime/ownership/key.ts';
import {
  ANNOTATION_OWNER_PROOF,
  ANNOTATION_RECLAIM_POLICY,
  LABEL_OWNER_UID,
  OwnershipMarks,
  type Marked,
  type Owner,
  type Relation,
  type Vouchers,
} from '../../../../src/runtime/ownership/marks.ts';

const Stores: ResourceType = { apiVersion: 'minio.rook.io/v1alpha1', kind: 'ObjectStore', plural: 'objectstores', namespaced: true };
const Secrets: ResourceType = { apiVersion: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
const key = new OwnershipKey(Buffer.alloc(32, 1));
const marks = new OwnershipMarks('cp-1', key);
const owner: Owner = {
  resource: 'objectstores.minio.rook.crossplane.io',
  namespace: 'platform',
  name: 'store',
  uid: 'mr-1',
  reclaimPolicy: 'Delete',
};
const restoredOwner: Owner = { ...owner, uid: 'mr-2' };

/** Our object as we make it (the server adds its uid). */
const ours = (over: Partial<Marked['metadata']> = {}, type = Stores, by = marks, o = owner): Marked => {
  const made = by.mark(type, { metadata: { name: 'store', namespace: 'minio', ...over } }, o);
  return { metadata: { ...made.metadata, uid: 'obj-1' } };
};
const edit = (obj: Marked, f: (m: Marked['metadata']) => void): Marked => {
  const copy = structuredClone(obj);
  f(copy.metadata);
  return copy;
};

describe('OwnershipMarks.relation', () => {
  const cases: { name: string; obj: Marked; type?: ResourceType; owner?: Owner; vouchers?: Vouchers; want: Relation }[] = [
    { name: 'our object, signed', obj: ours(), want: 'ours' },
    { name: 'no marks', obj: { metadata: { name: 'store', namespace: 'minio', uid: 'obj-1' } }, want: 'unmarked' },
    { name: 'marks of another control plane', obj: ours({}, Stores, new OwnershipMarks('cp-2', key)), want: 'another' },
    { name: 'marks naming another resource', obj: ours({}, Stores, marks, { ...owner, name: 'other' }), want: 'another' },
    {
      name: 'signed marks copied onto another object (another name)',
      obj: edit(ours(), (m) => {
        m.name = 'victim';
      }),
      want: 'unproven',
    },
    { name: 'signed marks copied onto an object of another kind', obj: ours(), type: Secrets, want: 'unproven' },
    {
      name: 'a reclaim policy edited from Retain to Delete',
      obj: edit(ours({}, Stores, marks, { ...owner, reclaimPolicy: 'Retain' }), (m) => {
        m.annotations![ANNOTATION_RECLAIM_POLICY] = 'Delete';
      }),
      want: 'unproven',
    },
    {
      name: 'signed with another key',
      obj: ours({}, Stores, new OwnershipMarks('cp-1', new OwnershipKey(Buffer.alloc(32, 2)))),
      want: 'unproven',
    },
    {
      name: 'unsigned marks for its uid (forged, or before signatures)',
      obj: edit(ours(), (m) => {
        delete m.annotations![ANNOTATION_OWNER_PROOF];
      }),
      want: 'unproven',
    },
    {
      name: 'unsigned marks of a resource that predates signatures',
      obj: edit(ours(), (m) => {
        delete m.annotations![ANNOTATION_OWNER_PROOF];
      }),
      vouchers: { legacy: true },
      want: 'ours',
    },
    {
      name: 'a bad signature is never legacy',
      obj: edit(ours(), (m) => {
        m.annotations![ANNOTATION_OWNER_PROOF] = 'v1.AAAA';
      }),
      vouchers: { legacy: true },
      want: 'unproven',
    },
    {
      name: 'unsigned, but the resource recorded its uid',
      obj: edit(ours(), (m) => {
        delete m.annotations![ANNOTATION_OWNER_PROOF];
      }),
      vouchers: { recordedUid: 'obj-1' },
      want: 'ours',
    },
    {
      name: 'signed for this resource, but it recorded another object (a copy replayed after ours was deleted)',
      obj: ours(),
      vouchers: { recordedUid: 'obj-0' },
      want: 'unproven',
    },
    {
      name: 'signed for this resource while a create of ours is under way (it replaces the recorded one)',
      obj: ours(),
      vouchers: { recordedUid: 'obj-0', creating: true },
      want: 'ours',
    },
    {
      name: 'restored resource (new uid) that recorded the object',
      obj: ours(),
      owner: restoredOwner,
      vouchers: { recordedUid: 'obj-1' },
      want: 'restored',
    },
    { name: 'a new resource of the same name, recording nothing', obj: ours(), owner: restoredOwner, want: 'unproven' },
    {
      name: 'a new resource of the same name recording another object',
      obj: ours(),
      owner: restoredOwner,
      vouchers: { recordedUid: 'obj-9' },
      want: 'unproven',
    },
    {
      name: 'forged marks with the right names and any uid (finding 1)',
      obj: edit(ours(), (m) => {
        m.labels![LABEL_OWNER_UID] = 'whatever';
      }),
      owner: restoredOwner,
      want: 'unproven',
    },
    {
      name: 'a signed companion of a restored object',
      obj: ours({ name: 'store-keys' }, Secrets),
      type: Secrets,
      owner: restoredOwner,
      vouchers: { restoring: true },
      want: 'restored',
    },
    {
      name: 'an unsigned companion of a restored object',
      obj: edit(ours({ name: 'store-keys' }, Secrets), (m) => {
        delete m.annotations![ANNOTATION_OWNER_PROOF];
      }),
      type: Secrets,
      owner: restoredOwner,
      vouchers: { restoring: true },
      want: 'unproven',
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(marks.relation(c.type ?? Stores, c.obj, c.owner ?? owner, c.vouchers)).toBe(c.want);
    });
  }
});

describe('OwnershipMarks.provenOwner (what the leak sweeper may delete)', () => {
  it('proves a signed object, and nothing once its identity, owner or policy is changed', () => {
    expect(marks.provenOwner(Stores, ours())?.key).toBe('platform/store');
    expect(
      marks.provenOwner(
        Secrets,
        edit(ours({}, Secrets), (m) => {
          m.namespace = 'payments';
          m.name = 'api-token';
        }),
      ),
    ).toBeUndefined();
    expect(
      marks.provenOwner(
        Stores,
        edit(ours(), (m) => {
          m.annotations!['rook.crossplane.io/owner'] = 'objectstores.minio.rook.crossplane.io/platform/gone';
        }),
      ),
    ).toBeUndefined();
    expect(
      marks.provenOwner(
        Stores,
        edit(ours(), (m) => {
          delete m.annotations![ANNOTATION_OWNER_PROOF];
        }),
      ),
    ).toBeUndefined();
  });

  it('is version-free: a store read through another served version still proves', () => {
    expect(marks.provenOwner({ ...Stores, apiVersion: 'minio.rook.io/v1' }, ours())?.key).toBe('platform/store');
  });

  it('refuses a key shorter than 32 bytes', () => {
    expect(() => new OwnershipKey(Buffer.alloc(16))).toThrow(/32 bytes/);
  });
});
