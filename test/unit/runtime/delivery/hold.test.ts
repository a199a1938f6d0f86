// The hold on replaced keys: it names the consumers that do not hold the published keys yet, and
// wakes the managed resource as soon as what they hold changes, rather than at its next recheck.
import { describe, expect, it } from '@jest/globals';
import type { Handlers } from '../../../../src/kit/controller/informer.ts';
import type { Manager } from '../../../../src/kit/controller/manager.ts';
import type { ResourceType } from '../../../../src/kit/kube/resources.ts';
import { keysDigest, rotationHold } from '../../../../src/runtime/delivery/hold.ts';
import type { DeliveringClaim } from '../../../../src/runtime/delivery/consumers.ts';
import type { ManagedResource } from '../../../../src/runtime/managed/types.ts';

const Claims: ResourceType = { apiVersion: 'storage.example.com/v1', kind: 'Bucket', plural: 'buckets', namespaced: true };
const Stores: ResourceType = { apiVersion: 'x.example.com/v1', kind: 'Store', plural: 'stores', namespaced: true };
const Others: ResourceType = { apiVersion: 'x.example.com/v1', kind: 'Other', plural: 'others', namespaced: true };

/** Informers by kind: objects by "namespace/name", and the handlers registered on them. */
function fakeManager(objects: Record<string, Record<string, unknown>>) {
  const handlers: Record<string, Handlers<unknown>[]> = {};
  const manager = {
    informer: (type: ResourceType) => ({
      get: (key: { namespace?: string; name: string }) => objects[type.kind]?.[`${key.namespace}/${key.name}`],
      on: (h: Handlers<unknown>) => (handlers[type.kind] ??= []).push(h),
    }),
  } as unknown as Pick<Manager, 'informer'>;
  return { manager, handlers };
}

const mr: ManagedResource = {
  apiVersion: Stores.apiVersion,
  kind: Stores.kind,
  metadata: { name: 'mr', namespace: 'infra' },
  spec: { claimRef: { kind: 'Bucket', name: 'b', namespace: 'app' }, writeConnectionSecretToRef: { name: 'conn' } },
};
const published = Buffer.from('NEWKEY').toString('base64');
const claim = (keys: string | undefined, ref: ResourceType = Stores): DeliveringClaim => ({
  apiVersion: Claims.apiVersion,
  kind: Claims.kind,
  metadata: { name: 'b', namespace: 'app' },
  spec: { resourceRef: { apiVersion: ref.apiVersion, kind: ref.kind, name: 'mr', namespace: 'infra' } },
  status: { deliveries: [{ to: 'p/consumer/app', secretName: 'b-s3', keys, delivered: Boolean(keys) }] },
});

describe('rotationHold', () => {
  it('holds the replaced keys while a consumer lacks the published ones, and not once it has them', () => {
    const objects = { Secret: { 'infra/conn': { data: { AWS_ACCESS_KEY_ID: published } } }, Bucket: { 'app/b': claim('older') } };
    const hold = rotationHold(fakeManager(objects).manager, [Claims]);
    expect(hold.why(mr)).toMatch(/not yet: p\/consumer\/app$/);
    objects.Bucket['app/b'] = claim(keysDigest(published));
    expect(hold.why(mr)).toBeUndefined();
  });

  it('is not held by a consumer that holds no keys of the claim (never delivered to: not allowed, no endpoint, down from the start)', () => {
    const objects = { Secret: { 'infra/conn': { data: { AWS_ACCESS_KEY_ID: published } } }, Bucket: { 'app/b': claim(undefined) } };
    expect(rotationHold(fakeManager(objects).manager, [Claims]).why(mr)).toBeUndefined();
  });

  it("is not held by another claim made since under its claim's name (what that one's consumers hold are not these keys)", () => {
    const own = { ...mr, spec: { ...mr.spec, claimRef: { kind: 'Bucket', name: 'b', namespace: 'app', uid: 'first' } } };
    const successor = { ...claim('older'), metadata: { name: 'b', namespace: 'app', uid: 'second' } };
    const objects = { Secret: { 'infra/conn': { data: { AWS_ACCESS_KEY_ID: published } } }, Bucket: { 'app/b': successor } };
    const hold = rotationHold(fakeManager(objects).manager, [Claims]);
    expect(hold.why(own)).toBeUndefined();
    objects.Bucket['app/b'] = { ...successor, metadata: { ...successor.metadata, uid: 'first' } };
    expect(hold.why(own)).toMatch(/not yet: p\/consumer\/app$/);
  });

  it('wakes the resource its claim names when what the consumers hold changes, and only then', () => {
    const { manager, handlers } = fakeManager({});
    const woken: string[] = [];
    rotationHold(manager, [Claims]).wake(Stores, { enqueue: (key) => woken.push(key) });
    const updated = (old: DeliveringClaim, now: DeliveringClaim) => handlers.Bucket!.forEach((h) => h.updated?.(old, now));
    updated(claim('older'), claim(keysDigest(published)));
    expect(woken).toEqual(['infra/mr']);
    // A status write that leaves the deliveries as they were wakes nothing; nor does a claim of another kind's resource.
    updated(claim('older'), { ...claim('older'), status: { ...claim('older').status, conditions: [] } });
    updated(claim('older', Others), claim(keysDigest(published), Others));
    expect(woken).toEqual(['infra/mr']);
  });
});
