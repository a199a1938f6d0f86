// The controller's metrics carry controller-runtime's names and label values, so dashboards work.
import { describe, expect, it } from '@jest/globals';
import { Controller } from '../../../../src/kit/controller/controller.ts';
import { silentLogger } from '../../../../src/kit/logger.ts';
import { registry } from '../../../../src/kit/metrics.ts';
import { done, requeue, requeueAfter, type Result } from '../../../../src/kit/controller/result.ts';
import { eventually } from '../../../kit/eventually.ts';

async function resultCount(controller: string, result: string): Promise<number> {
  const metric = await registry.getSingleMetric('controller_runtime_reconcile_total')!.get();
  return metric.values.find((v) => v.labels.controller === controller && v.labels.result === result)?.value ?? 0;
}

describe('Controller metrics', () => {
  it('counts reconciles as success, requeue, requeue_after and error', async () => {
    const outcomes: (Result | Error)[] = [done(), requeue(), requeueAfter(60_000), new Error('boom')];
    let finished = 0;
    const controller = new Controller(
      'metrics-test',
      {
        reconcile: async (key) => {
          finished++;
          const outcome = outcomes[Number(key)]!;
          if (outcome instanceof Error) throw outcome;
          return outcome;
        },
      },
      silentLogger,
      { workers: 1, maxReconcileRate: 1000 },
    );
    controller.start();
    for (const key of ['0', '1', '2', '3']) controller.enqueue(key);
    await eventually(() => finished === 4, 'four reconciles to finish', 5_000);
    await controller.stop();
    expect(await Promise.all(['success', 'requeue', 'requeue_after', 'error'].map((r) => resultCount('metrics-test', r)))).toEqual([
      1, 1, 1, 1,
    ]);
    expect(await resultCount('metrics-test', 'done')).toBe(0);
  });

  it('shows a stuck reconcile in workqueue_longest_running_processor_seconds and workqueue_unfinished_work_seconds', async () => {
    const gauge = async (name: string): Promise<number | undefined> =>
      (await registry.getSingleMetric(name)!.get()).values.find((v) => v.labels.name === 'stuck-test')?.value;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const controller = new Controller(
      'stuck-test',
      {
        reconcile: async () => {
          started();
          await released; // a reconcile that ignores its deadline
          return done();
        },
      },
      silentLogger,
      { workers: 2, maxReconcileRate: 1000 },
    );
    controller.start();
    controller.enqueue('stuck');
    await running;
    await new Promise((r) => setTimeout(r, 300));
    const longest = await gauge('workqueue_longest_running_processor_seconds');
    const unfinished = await gauge('workqueue_unfinished_work_seconds');
    expect(longest).toBeGreaterThanOrEqual(0.29);
    expect(unfinished).toBeGreaterThanOrEqual(0.29);
    release();
    await eventually(
      async () => (await gauge('workqueue_longest_running_processor_seconds')) === 0,
      'the released reconcile to leave the gauge',
      5_000,
    );
    expect(await gauge('workqueue_longest_running_processor_seconds')).toBe(0);
    expect(await gauge('workqueue_unfinished_work_seconds')).toBe(0);
    await controller.stop();
    expect(await gauge('workqueue_longest_running_processor_seconds')).toBeUndefined(); // a stopped controller is no longer reported
  });
});
