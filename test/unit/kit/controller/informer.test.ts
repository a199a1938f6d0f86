// A cache reads its own writes: until the watch delivers a written version, get() answers with it.
import { describe, expect, it } from '@jest/globals';
import { Informer } from '../../../../src/kit/controller/informer.ts';
import type { KubeClient, KubeObjectLike } from '../../../../src/kit/kube/client.ts';
import { silentLogger } from '../../../../src/kit/logger.ts';
import { KubeError, UnreachableError } from '../../../../src/kit/kube/errors.ts';
import { eventually } from '../../../kit/eventually.ts';

const type = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const cm = (rv: string, value: string): KubeObjectLike & { data: { v: string } } => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'c', namespace: 'ns', resourceVersion: rv },
  data: { v: value },
});

function informer() {
  const inf = new Informer<KubeObjectLike & { data: { v: string } }>({} as KubeClient, type, { log: silentLogger });
  const events: string[] = [];
  inf.on({ updated: (_old, obj) => events.push(obj.metadata.resourceVersion!) });
  // What the watch delivers (the informer's own path).
  const watched = (obj: ReturnType<typeof cm>) => (inf as unknown as { upsert(o: unknown): void }).upsert(obj);
  const removed = (obj: ReturnType<typeof cm>) => (inf as unknown as { remove(o: unknown): void }).remove(obj);
  return { inf, events, watched, removed };
}

describe('Informer reads its own writes', () => {
  it('answers with a write until the watch delivers it, and still tells handlers then', () => {
    const { inf, events, watched } = informer();
    watched(cm('5', 'a'));
    const written = cm('7', 'b');
    inf.remember(written);
    written.data.v = 'changed by the writer afterwards';
    expect(inf.get('ns/c')?.data.v).toBe('b');
    expect(inf.list().map((o) => o.data.v)).toEqual(['b']);
    watched(cm('6', 'older'));
    expect(inf.get('ns/c')?.data.v).toBe('b');
    watched(cm('7', 'b'));
    expect(events).toEqual(['6', '7']);
    watched(cm('8', 'someone else'));
    expect(inf.get('ns/c')?.data.v).toBe('someone else');
  });

  it('ignores older writes, objects it does not hold, and forgets writes of deleted objects', () => {
    const { inf, watched, removed } = informer();
    inf.remember(cm('9', 'not held'));
    expect(inf.get('ns/c')).toBeUndefined();
    watched(cm('5', 'a'));
    inf.remember(cm('4', 'older'));
    expect(inf.get('ns/c')?.data.v).toBe('a');
    inf.remember(cm('6', 'b'));
    removed(cm('5', 'a'));
    expect(inf.get('ns/c')).toBeUndefined();
  });
});

describe('Informer remembers what the server said was deleted', () => {
  it('says an object of that uid was deleted until something is seen at its key again', () => {
    const { inf, watched, removed } = informer();
    const withUid = (rv: string, uid: string) => ({ ...cm(rv, 'x'), metadata: { ...cm(rv, 'x').metadata, uid } });
    expect(inf.wasDeleted('ns/c', 'u1')).toBe(false); // never seen: no answer
    watched(withUid('5', 'u1'));
    expect(inf.wasDeleted('ns/c', 'u1')).toBe(false); // still there
    removed(withUid('5', 'u1'));
    expect(inf.wasDeleted('ns/c', 'u1')).toBe(true);
    expect(inf.wasDeleted('ns/c', 'u2')).toBe(false); // another object of that name: not known
    watched(withUid('9', 'u2'));
    expect(inf.wasDeleted('ns/c', 'u1')).toBe(false); // made again: the cache holds it now
  });
});

describe('Informer health', () => {
  it('recovers when the server is back and answers that the kind is not served: it no longer counts as failing', async () => {
    let calls = 0;
    const client = {
      list: async () => {
        // The server down, then back without the kind's CRD.
        if (calls++ === 0) throw new UnreachableError('connect ECONNREFUSED 127.0.0.1:1');
        throw new KubeError(404, 'NotFound', 'the server could not find the requested resource');
      },
      watch: (_t: unknown, o: { signal: AbortSignal }) => new Promise((resolve) => o.signal.addEventListener('abort', resolve)),
    } as unknown as KubeClient;
    let recovered = 0;
    const inf = new Informer(client, type, {
      log: silentLogger,
      onRecovered: () => recovered++,
      whenServed: (signal) => new Promise((resolve) => signal.addEventListener('abort', () => resolve())),
    });
    void inf.start();
    await eventually(async () => (calls >= 2 ? true : undefined), 'the list to be tried again after its backoff', {
      timeoutMs: 5_000,
      delayMs: 50,
    });
    await eventually(async () => (!inf.failing ? true : undefined), 'the informer to stop counting as failing', {
      timeoutMs: 1_000,
      delayMs: 20,
    });
    expect(recovered).toBe(1);
    await inf.stop();
  });
});
