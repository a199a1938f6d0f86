// The probes: what /readyz and /healthz answer in each phase, and when a controller or an informer
// counts as stuck. No sleeps: the checks take the time as an argument.
import { describe, expect, it } from '@jest/globals';
import { Controller } from '../../../src/kit/controller/controller.ts';
import { Health, type HealthSources } from '../../../src/kit/health.ts';
import { Informer } from '../../../src/kit/controller/informer.ts';
import type { KubeClient, KubeObjectLike } from '../../../src/kit/kube/client.ts';
import { KubeError } from '../../../src/kit/kube/errors.ts';
import { silentLogger } from '../../../src/kit/logger.ts';
import { done } from '../../../src/kit/controller/result.ts';

const sources = (synced: boolean, stuck?: string): HealthSources => ({ synced: () => synced, probes: () => [{ stuck: () => stuck }] });

describe('Health', () => {
  it('is ready only once running with synced informers; a standby is ready and says so', () => {
    const h = new Health();
    expect(h.readyz()).toEqual({ status: 503, body: 'starting' });
    h.set('standby', 'waiting for Lease ns/provider-rook');
    expect(h.readyz()).toEqual({
      status: 200,
      body: 'standby: not the leader; controllers start on taking over: waiting for Lease ns/provider-rook',
    });
    h.set('syncing');
    expect(h.readyz()).toEqual({ status: 503, body: 'informers are syncing' });
    h.set('running');
    h.watch(sources(false));
    expect(h.readyz().status).toBe(503);
    h.watch(sources(true));
    expect(h.readyz()).toEqual({ status: 200, body: 'ok' });
    h.set('stopping');
    expect(h.readyz()).toEqual({ status: 503, body: 'shutting down' });
  });

  it('is unhealthy while a part is stuck, and says which', () => {
    const h = new Health();
    h.set('running');
    h.watch(sources(true));
    expect(h.healthz()).toEqual({ status: 200, body: 'ok' });
    h.watch(sources(true, 'controller x: the reconcile of a/b has run 200 s, past its 90 s deadline'));
    expect(h.healthz()).toEqual({ status: 500, body: 'stuck:\ncontroller x: the reconcile of a/b has run 200 s, past its 90 s deadline' });
  });
});

describe('Controller.stuck', () => {
  it('names a reconcile that ignores its deadline, and forgets it once it ends', async () => {
    let finish!: () => void;
    let began!: () => void;
    const started = new Promise<void>((r) => (began = r));
    const controller = new Controller(
      'hung',
      {
        reconcile: () => {
          began();
          return new Promise((r) => (finish = () => r(done())));
        }, // never looks at its signal
      },
      silentLogger,
      { workers: 1, timeoutMs: 1_000, stuckGraceMs: 500 },
    );
    controller.start();
    controller.enqueue('ns/a');
    await started;
    const now = performance.now();
    expect(controller.stuck(now)).toBeUndefined();
    expect(controller.stuck(now + 1_400)).toBeUndefined();
    expect(controller.stuck(now + 2_000)).toMatch(/^controller hung: the reconcile of ns\/a has run 2 s, past its 1 s deadline$/);
    finish();
    await controller.stop();
    expect(controller.stuck(now + 60_000)).toBeUndefined();
  });
});

describe('Informer.stuck', () => {
  const type = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
  /** A client whose watch hangs without a word: what no bound of the real one would let happen. */
  const hangingWatch = (list: () => Promise<{ items: KubeObjectLike[]; resourceVersion: string }>) =>
    ({
      list,
      watch: (_t: unknown, o: { signal: AbortSignal }) => new Promise((resolve) => o.signal.addEventListener('abort', resolve)),
    }) as unknown as KubeClient;

  it('counts a loop without progress past its bound as stuck', async () => {
    const informer = new Informer(
      hangingWatch(async () => ({ items: [], resourceVersion: '1' })),
      type,
      { log: silentLogger, stuckAfterMs: 10_000 },
    );
    await informer.start();
    const now = performance.now();
    expect(informer.stuck(now)).toBeUndefined();
    expect(informer.stuck(now + 11_000)).toMatch(/^informer configmaps: no list, watch, event or retry for 1[01] s$/);
    await informer.stop();
  });

  it('does not count a kind that is not served yet, which rightly waits', async () => {
    const informer = new Informer(
      hangingWatch(async () => {
        throw new KubeError(404, 'NotFound', 'not served');
      }),
      type,
      {
        log: silentLogger,
        stuckAfterMs: 10_000,
        whenServed: (signal) => new Promise((resolve) => signal.addEventListener('abort', () => resolve())),
      },
    );
    await informer.start();
    expect(informer.stuck(performance.now() + 60_000)).toBeUndefined();
    await informer.stop();
  });
});
