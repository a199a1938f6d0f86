// Connection Secrets as the managed reconciler and the claims write and remove them, counted by
// request: a synced cache answers what it can, and every write stays conditional on the copy checked.
import { describe, expect, it } from '@jest/globals';
import type { Client } from '../../../../src/kit/kube/client.ts';
import { KubeError } from '../../../../src/kit/kube/errors.ts';
import { publishSecret, unpublishSecret, type SecretObject } from '../../../../src/runtime/managed/publisher.ts';

const owner = { apiVersion: 'x/v1', kind: 'Thing', metadata: { name: 'm', uid: 'mr-uid' } };
const secret = (controller: string, rv = '1'): SecretObject => ({
  metadata: { name: 's', namespace: 'ns', uid: 's-uid', resourceVersion: rv, ownerReferences: [{ uid: controller, controller: true }] },
  data: { k: 'dg==' },
});

/** A server holding at most one Secret, ns/s; DELETE and PATCH check uid and resourceVersion. */
function server(stored: SecretObject | undefined) {
  const log: string[] = [];
  const state = { stored };
  const client = {
    get: async () => (log.push('GET'), structuredClone(state.stored)),
    create: async (_t: unknown, obj: SecretObject) => {
      log.push('POST');
      if (state.stored) throw new KubeError(409, 'AlreadyExists', 'exists');
      state.stored = obj;
      return obj;
    },
    delete: async (_t: unknown, _key: unknown, o: { uid?: string; resourceVersion?: string }) => {
      log.push(`DELETE${o.resourceVersion ? ' rv' : ''}`);
      if (!state.stored) return 'absent';
      if (o.uid !== state.stored.metadata.uid || (o.resourceVersion && o.resourceVersion !== state.stored.metadata.resourceVersion))
        throw new KubeError(409, 'Conflict', 'precondition');
      state.stored = undefined;
      return 'deleted';
    },
  } as unknown as Client;
  return { client, log, state };
}
const cacheOf = (copy: SecretObject | undefined) => ({ hasSynced: true, get: () => copy });
const signal = new AbortController().signal;

describe('connection Secrets', () => {
  it('a Secret the synced cache misses is created without a read; one there after all is read and checked', async () => {
    const empty = server(undefined);
    await publishSecret({ client: empty.client, cache: cacheOf(undefined), signal }, owner, { namespace: 'ns', name: 's' }, { k: 'v' });
    expect(empty.log).toEqual(['POST']);
    const foreign = server(secret('someone-else'));
    const err = await publishSecret(
      { client: foreign.client, cache: cacheOf(undefined), signal },
      owner,
      { namespace: 'ns', name: 's' },
      { k: 'w' },
    ).catch((e: unknown) => e);
    expect((err as { reason?: string }).reason).toBe('ConnectionSecretConflict');
    expect(foreign.log).toEqual(['POST', 'GET']);
  });

  it('removes ours from the cached copy (uid and resourceVersion), reads nothing the cache does not hold, and never removes another', async () => {
    const ours = server(secret('mr-uid'));
    await unpublishSecret({ client: ours.client, cache: cacheOf(secret('mr-uid')), signal }, owner, { namespace: 'ns', name: 's' });
    expect([ours.log, ours.state.stored]).toEqual([['DELETE rv'], undefined]);

    const missed = server(undefined);
    await unpublishSecret({ client: missed.client, cache: cacheOf(undefined), signal }, owner, { namespace: 'ns', name: 's' });
    expect(missed.log).toEqual([]); // one of ours the cache has not seen names its owner: the garbage collector takes it

    const stale = server(secret('someone-else', '2')); // taken over since the cache's copy
    await unpublishSecret({ client: stale.client, cache: cacheOf(secret('mr-uid', '1')), signal }, owner, { namespace: 'ns', name: 's' });
    expect(stale.log).toEqual(['DELETE rv', 'GET']);
    expect(stale.state.stored).toBeDefined();
  });
});
