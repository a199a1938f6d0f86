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

describe('Informer against a server that misbehaves', () => {
  /** A client whose list answers at once and whose every watch runs `watch` with the event callback. */
  function serving(watch: (onEvent: (type: string, obj: unknown) => void, signal: AbortSignal) => Promise<void>) {
    let watches = 0;
    const client = {
      list: async () => ({ items: [], resourceVersion: '1' }),
      watch: async (_t: unknown, o: { signal: AbortSignal }, onEvent: (type: string, obj: unknown) => void) => {
        watches++;
        await watch(onEvent, o.signal);
      },
    } as unknown as KubeClient;
    return { client, watches: () => watches };
  }

  it('tells every handler of an event although one throws, and does not count that as a failing watch', async () => {
    let delivered = false;
    const { client } = serving(async (onEvent, signal) => {
      if (!delivered) onEvent('ADDED', cm('2', 'a'));
      delivered = true;
      await new Promise((resolve) => signal.addEventListener('abort', resolve)); // then holds the watch open
    });
    const inf = new Informer<ReturnType<typeof cm>>(client, type, { log: silentLogger });
    const told: string[] = [];
    inf.on({
      added: () => {
        throw new Error('a handler tripped on the object');
      },
    });
    inf.on({ added: (obj) => void told.push(obj.metadata.name) });
    void inf.start();
    await eventually(async () => (told.length ? true : undefined), 'the second handler to be told', { timeoutMs: 2_000, delayMs: 10 });
    expect([told, inf.failing, inf.get('ns/c')?.data.v]).toEqual([['c'], false, 'a']);
    await inf.stop();
  });

  it("caches no object without a name, and keeps a bookmark's resourceVersion", async () => {
    const versions: unknown[] = [];
    let round = 0;
    const client = {
      list: async () => ({ items: [{ metadata: {} }, cm('1', 'listed')], resourceVersion: '1' }),
      watch: async (_t: unknown, o: { resourceVersion: string; signal: AbortSignal }, onEvent: (type: string, obj: unknown) => void) => {
        versions.push(o.resourceVersion);
        if (round++ === 0) {
          onEvent('ADDED', null);
          onEvent('MODIFIED', { metadata: { name: 7, resourceVersion: '5' } });
          onEvent('BOOKMARK', { metadata: { resourceVersion: '9' } });
          return;
        }
        await new Promise((resolve) => o.signal.addEventListener('abort', resolve));
      },
    } as unknown as KubeClient;
    const inf = new Informer<ReturnType<typeof cm>>(client, type, { log: silentLogger });
    void inf.start();
    await eventually(async () => (versions.length === 2 ? true : undefined), 'a second watch', { timeoutMs: 2_000, delayMs: 10 });
    expect([versions, inf.list().map((o) => o.metadata.name), inf.failing]).toEqual([['1', '9'], ['c'], false]);
    await inf.stop();
  });

  it('does not open watch after watch without pause when each ends as soon as it opens', async () => {
    // Each watch ends on the next turn of the event loop, as a server closing it at once would.
    const { client, watches } = serving(() => new Promise((resolve) => setImmediate(resolve)));
    const inf = new Informer(client, type, { log: silentLogger });
    void inf.start();
    const started = Date.now();
    await eventually(async () => (Date.now() - started >= 1_500 ? true : undefined), '1.5 s to pass', { timeoutMs: 3_000, delayMs: 100 });
    await inf.stop();
    // At once, at once, then one a second: a handful, not thousands.
    expect(watches()).toBeLessThanOrEqual(4);
  });
});
