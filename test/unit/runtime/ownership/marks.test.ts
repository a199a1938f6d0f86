// Ownership marks: what a signature proves, and what a copy, an edit, another key or another
// control plane cannot. A table in crossplane-runtime's style: each case names its vouchers and the
// relation they must give.
import { describe, expect, it } from '@jest/globals';
import type { ObjectRef, ResourceType } from '../../../../src/kit/kube/resources.ts';
import type { ManagedResource } from '../../../../src/runtime/managed/types.ts';
import { Reasons, UnprovenError } from '../../../../src/runtime/reasons.ts';
import { OwnershipKey } from '../../../../src/runtime/ownership/key.ts';
import { ANNOTATION_CREATE_PENDING, ANNOTATION_CREATE_SUCCEEDED } from '../../../../src/kit/meta.ts';
import {
  ANNOTATION_COMPANION_UIDS,
  ANNOTATION_MADE_AT,
  ANNOTATION_OWNER_PROOF,
  ANNOTATION_RECLAIM_POLICY,
  ANNOTATION_TARGET_UID,
  LABEL_OWNER_UID,
  OwnershipMarks,
  ResourceOwnership,
  type Marked,
  type OwnedCompanion,
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

describe('OwnershipMarks.remade (a signed copy is not the object we made)', () => {
  const madeAt = Date.parse('2026-11-29T04:00:00.400Z');
  const tolerance = 5 * 60_000;
  /** Our object as created at `madeAt`, as the API server gives it back created `after` ms later. */
  const created = (after: number, o = owner): Marked & { metadata: { creationTimestamp: string } } => {
    const made = marks.stamped(Stores, marks.mark(Stores, { metadata: { name: 'store', namespace: 'minio' } }, o), madeAt);
    // The server's timestamps have whole seconds.
    const at = new Date(Math.floor((madeAt + after) / 1000) * 1000).toISOString().replace('.000Z', 'Z');
    return { metadata: { ...made.metadata, uid: 'obj-1', creationTimestamp: at } };
  };

  it('takes the object made then for ours, within the clock skew either way', () => {
    expect(marks.remade(Stores, created(300), tolerance)).toBeUndefined();
    expect(marks.remade(Stores, created(tolerance), tolerance)).toBeUndefined();
    expect(marks.remade(Stores, created(-tolerance), tolerance)).toBeUndefined();
  });

  it('calls a copy made an hour later (a restore, a re-apply of its manifest) a copy, and says when each was made', () => {
    expect(marks.remade(Stores, created(3_600_000), tolerance)).toBe(
      'it was created at 2026-11-29T05:00:00.000Z, but provider-rook made it at 2026-11-29T04:00:00.000Z: it is a copy ' +
        '(restored from a backup, or re-created from its manifest), not the object provider-rook made; delete it by hand if it is not wanted',
    );
    expect(marks.remade(Stores, created(tolerance + 2_000), tolerance)).toMatch(/it is a copy/);
  });

  it('refuses a time someone moved, or one signed for another object; believes one re-marked for a restored owner', () => {
    const moved = edit(created(3_600_000), (m) => {
      const [, proof] = m.annotations![ANNOTATION_MADE_AT]!.split('.');
      m.annotations![ANNOTATION_MADE_AT] = `${Math.floor((madeAt + 3_600_000) / 1000)}.${proof}`;
    });
    expect(marks.remade(Stores, moved, tolerance)).toMatch(/does not verify/);
    const elsewhere = edit(created(0), (m) => {
      m.name = 'other';
    });
    expect(marks.remade(Stores, elsewhere, tolerance)).toMatch(/does not verify/);
    expect(
      marks.remade(
        Stores,
        edit(created(0), (m) => (m.annotations![ANNOTATION_MADE_AT] = 'x.y')),
        tolerance,
      ),
    ).toMatch(/does not verify/);
    // As many characters as a proof, more bytes: refused, not thrown (anyone may write this on an object that carries our labels).
    const wide = edit(created(0), (m) => {
      const [seconds, proof] = m.annotations![ANNOTATION_MADE_AT]!.split('.');
      m.annotations![ANNOTATION_MADE_AT] = `${seconds}.é${proof!.slice(1)}`;
    });
    expect(marks.remade(Stores, wide, tolerance)).toMatch(/does not verify/);
    // A restored resource re-signs its objects for its new uid; the time they were made stays true.
    const remarked = marks.mark(Stores, created(0), restoredOwner);
    expect(marks.remade(Stores, remarked, tolerance)).toBeUndefined();
  });

  it('leaves an object without a time to its signature (made before times were signed)', () => {
    const old = edit(created(3_600_000), (m) => {
      delete m.annotations![ANNOTATION_MADE_AT];
    });
    expect(marks.remade(Stores, old, tolerance)).toBeUndefined();
  });
});

// One resource's ownership of its objects: the rules observe, apply and delete judge its companions by.
describe('ResourceOwnership', () => {
  type Obj = Marked & { data?: Record<string, string> };
  const managed = (annotations: Record<string, string> = {}): ManagedResource =>
    ({
      apiVersion: 'minio.rook.crossplane.io/v1alpha1',
      kind: 'ObjectStore',
      metadata: { name: 'store', namespace: 'platform', uid: 'mr-1', annotations },
      spec: { deletionPolicy: 'Delete' },
    }) as unknown as ManagedResource;
  const ownership = (annotations?: Record<string, string>, references?: (o: Obj) => ObjectRef[]) =>
    new ResourceOwnership<Obj>(marks, { resource: owner.resource, references }, managed(annotations));
  const keys: OwnedCompanion<Obj> = {
    type: Secrets,
    name: 'store-keys',
    namespace: 'minio',
    purpose: 'access-keys Secret',
    build: () => ({ metadata: { name: 'store-keys', namespace: 'minio' }, data: { key: 'a' } }),
  };
  const endpoint: OwnedCompanion<Obj> = { ...keys, name: 'store-s3', purpose: 'endpoint Service', publishedAs: ['endpoint'] };
  const there = (o: ResourceOwnership<Obj>, c: OwnedCompanion<Obj>, uid: string): Obj => ({
    ...o.built(c),
    metadata: { ...o.built(c).metadata, uid },
  });
  const record = (entries: Record<string, string>) => ({ [ANNOTATION_COMPANION_UIDS]: JSON.stringify(entries) });
  const key = (c: ObjectRef) => `v1/Secret/minio/${c.name}`;

  it('records a companion made beside what was recorded, in order, and writes nothing when it is recorded already', () => {
    const o = ownership(record({ [key(endpoint)]: 'uid-s' }));
    expect(o.companionRecord({ [key(endpoint)]: 'uid-s' })).toEqual({});
    // Sorted by identity, whatever order they were made in: the same record is the same string.
    expect(o.companionRecord({ [key(keys)]: 'uid-k' })).toEqual(record({ [key(keys)]: 'uid-k', [key(endpoint)]: 'uid-s' }));
    // An entry stays until its object is made again.
    expect(ownership(record({ [key(keys)]: 'uid-k' })).companionRecord({ [key(endpoint)]: 'uid-s' })).toEqual(
      record({ [key(keys)]: 'uid-k', [key(endpoint)]: 'uid-s' }),
    );
    expect(ownership(record({ [key(keys)]: 'uid-k' })).companionRecord({ [key(keys)]: 'uid-k2' })).toEqual(
      record({ [key(keys)]: 'uid-k2' }),
    );
  });

  it('drops the companions of retired keys from the record, and only those', () => {
    const o = ownership(record({ [key(keys)]: 'uid-k', [key(endpoint)]: 'uid-s' }));
    expect(o.companionRecord({}, [keys])).toEqual(record({ [key(endpoint)]: 'uid-s' }));
    // Nothing to drop, nothing new: nothing is written.
    expect(ownership(record({ [key(endpoint)]: 'uid-s' })).companionRecord({}, [keys])).toEqual({});
    // One made again this pass stays recorded.
    expect(o.companionRecord({ [key(keys)]: 'uid-k2' }, [keys])).toEqual(record({ [key(keys)]: 'uid-k2', [key(endpoint)]: 'uid-s' }));
  });

  it('records the uid of a main object it proved by its signature, once, and never of an unsigned or unproven one', () => {
    const o = ownership();
    const signed = ours();
    expect(o.objectRecord(Stores, signed, 'ours', 0)).toEqual({ [ANNOTATION_TARGET_UID]: 'obj-1' });
    expect(ownership({ [ANNOTATION_TARGET_UID]: 'obj-1' }).objectRecord(Stores, signed, 'ours', 0)).toEqual({});
    expect(o.objectRecord(Stores, signed, 'unproven', 0)).toEqual({});
    const legacy = edit(signed, (m) => delete m.annotations![ANNOTATION_OWNER_PROOF]);
    expect(o.objectRecord(Stores, legacy, 'ours', 0)).toEqual({});
  });

  it('ends a create whose record was lost with the uid it proves: a signed copy made after ours is deleted is refused then', () => {
    // A create under way (pending after the last success), its record of the object lost.
    const annotations = { [ANNOTATION_CREATE_PENDING]: '2026-11-29T10:00:00Z' };
    const record = ownership(annotations).objectRecord(Stores, ours(), 'ours', Date.parse('2026-11-29T10:00:05Z'));
    expect(record).toEqual({ [ANNOTATION_TARGET_UID]: 'obj-1', [ANNOTATION_CREATE_SUCCEEDED]: '2026-11-29T10:00:05Z' });
    const copy = edit(ours(), (m) => (m.uid = 'obj-2'));
    // Before: the create still under way, the copy passed for ours.
    expect(ownership({ ...annotations, [ANNOTATION_TARGET_UID]: 'obj-1' }).relationOf(Stores, copy)).toBe('ours');
    expect(ownership({ ...annotations, ...record }).relationOf(Stores, copy)).toBe('unproven');
  });

  it('knows a recorded companion by its uid, its marks stripped, and refuses a signed copy put in its place', () => {
    const o = ownership(record({ [key(keys)]: 'uid-k' }));
    const stripped = edit(there(o, keys, 'uid-k'), (m) => {
      delete m.labels;
      delete m.annotations;
    });
    expect(o.trusted(keys, stripped, undefined, 'ours')).toBe('ours');
    expect(() => o.trusted(keys, there(o, keys, 'uid-copy'), undefined, 'ours')).toThrow(
      expect.objectContaining({ reason: 'CompanionNotOwned', message: expect.stringMatching(/it was replaced/) }),
    );
  });

  it('reads a record entry that is not text (written by hand) as no record, not as an error on every pass', () => {
    const o = ownership({ [ANNOTATION_COMPANION_UIDS]: JSON.stringify({ [key(keys)]: 5 }) });
    expect(o.trusted(keys, there(o, keys, 'uid-k'), undefined, 'ours')).toBe('ours');
    expect(o.companionVouchersFor(keys, 'ours').recordedUid).toBeUndefined();
  });

  it('withholds what leads to an unproven endpoint, and names the keys', () => {
    const o = ownership();
    const foreign: Obj = { metadata: { name: 'store-s3', namespace: 'minio', uid: 'x' } };
    let thrown: unknown;
    try {
      o.trusted(endpoint, foreign, undefined, 'ours');
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(UnprovenError);
    expect(thrown).toMatchObject({ reason: 'EndpointNotProven', withheld: ['endpoint'] });
  });

  it('uses an unmarked companion only on import, and only one the adopted object names in its own namespace', () => {
    const foreign: Obj = { metadata: { name: 'store-keys', namespace: 'minio', uid: 'x' } };
    const observed: Obj = { metadata: { name: 'store', namespace: 'minio', uid: 'o' } };
    const names = () => [{ type: Secrets, name: 'store-keys', namespace: 'minio' }];
    const imported = ownership({ 'crossplane.io/external-name': 'store' }, names);
    expect(imported.trusted(keys, foreign, observed, 'unmarked')).toBe('unmarked');
    expect(() => ownership({}, names).trusted(keys, foreign, observed, 'ours')).toThrow(/not made by provider-rook for this resource/);
    expect(() =>
      imported.trusted(keys, foreign, { ...observed, metadata: { ...observed.metadata, namespace: 'other' } }, 'unmarked'),
    ).toThrow(/not made by provider-rook/);
  });

  it('finds drift in what the build says, and in nothing else of an irreplaceable companion but its marks', () => {
    const o = ownership();
    const have = there(o, keys, 'uid-k');
    expect(o.verdict(keys, have, undefined, 'ours').drift).toEqual([]);
    expect(o.verdict(keys, { ...have, data: { key: 'b' } }, undefined, 'ours').drift).not.toEqual([]);
    const rootKeys = { ...keys, irreplaceable: { reason: Reasons.AccessKeysLost, remedy: 'restore them' } };
    expect(o.verdict(rootKeys, { ...have, data: { key: 'b' } }, undefined, 'ours')).toEqual({ relation: 'ours', drift: [] });
    const retained = new ResourceOwnership<Obj>(marks, { resource: owner.resource }, {
      ...managed(),
      spec: { deletionPolicy: 'Orphan' },
    } as unknown as ManagedResource);
    expect(retained.verdict(rootKeys, have, undefined, 'ours').drift).toEqual([' ownership marks']);
  });

  it('refuses to act on an object it does not own, and on an unmarked one unless it is imported', () => {
    const ref = { type: Stores, name: 'store', namespace: 'minio' };
    expect(() => ownership().refuseForeign('another', ref)).toThrow(/belongs to another managed resource/);
    expect(() => ownership().refuseForeign('unproven', ref)).toThrow(/nothing proves/);
    expect(() => ownership().refuseForeign('unmarked', ref)).toThrow(expect.objectContaining({ reason: 'ExternalResourceConflict' }));
    expect(() => ownership({ 'crossplane.io/external-name': 'store' }).refuseForeign('unmarked', ref)).not.toThrow();
    expect(() => ownership().refuseForeign('ours', ref)).not.toThrow();
  });
});
