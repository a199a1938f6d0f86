// Prometheus metrics, named as controller-runtime names them so existing dashboards work.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const registry = new Registry();
// Node's event loop delay is sampled by a timer: prom-client's default (every 10 ms) wakes an idle
// process 100 times a second, most of its CPU at rest. Once a second still catches every stall a
// 30 s scrape would show.
export const EVENT_LOOP_SAMPLE_MS = 1000;
collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });

export const reconcileTotal = new Counter({
  name: 'controller_runtime_reconcile_total',
  help: 'Reconciles per controller and result.',
  labelNames: ['controller', 'result'],
  registers: [registry],
});
export const reconcileErrors = new Counter({
  name: 'controller_runtime_reconcile_errors_total',
  help: 'Reconcile errors per controller.',
  labelNames: ['controller'],
  registers: [registry],
});
export const reconcileTime = new Histogram({
  name: 'controller_runtime_reconcile_time_seconds',
  help: 'Reconcile duration per controller.',
  labelNames: ['controller'],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [registry],
});

/** What the queue gauges read at scrape time (so they cost nothing between scrapes). */
export interface QueueGauges {
  readonly length: number;
  unfinishedWorkSeconds(): number;
  longestRunningSeconds(): number;
}

const queues = new Set<{ name: string; queue: QueueGauges }>();

/** Reports a controller's queue under its name until the returned function is called. */
export function observeQueue(name: string, queue: QueueGauges): () => void {
  const entry = { name, queue };
  queues.add(entry);
  return () => queues.delete(entry);
}

/** A gauge per queue name, folded with `fold` when several queues share a name (several managers in one process). */
function queueGauge(name: string, help: string, read: (q: QueueGauges) => number, fold: (a: number, b: number) => number): Gauge {
  return new Gauge({
    name,
    help,
    labelNames: ['name'],
    registers: [registry],
    collect(this: Gauge) {
      this.reset();
      const byName = new Map<string, number>();
      for (const { name: queueName, queue } of queues) {
        const value = read(queue);
        const seen = byName.get(queueName);
        byName.set(queueName, seen === undefined ? value : fold(seen, value));
      }
      for (const [queueName, value] of byName) this.set({ name: queueName }, value);
    },
  });
}

// client-go's workqueue gauges, under its names.
queueGauge(
  'workqueue_depth',
  'Keys waiting in the queue.',
  (q) => q.length,
  (a, b) => a + b,
);
queueGauge(
  'workqueue_unfinished_work_seconds',
  'Seconds of work in progress that no reconcile has finished yet; a value that keeps growing means a stuck worker.',
  (q) => q.unfinishedWorkSeconds(),
  (a, b) => a + b,
);
queueGauge(
  'workqueue_longest_running_processor_seconds',
  'Seconds the longest-running reconcile of the queue has been running.',
  (q) => q.longestRunningSeconds(),
  Math.max,
);
export const workqueueRetries = new Counter({
  name: 'workqueue_retries_total',
  help: 'Rate-limited re-adds.',
  labelNames: ['name'],
  registers: [registry],
});
export const leaderStatus = new Gauge({
  name: 'leader_election_master_status',
  help: '1 while this process holds the named Lease, 0 otherwise.',
  labelNames: ['name'],
  registers: [registry],
});
export const restClientRequests = new Counter({
  name: 'rest_client_requests_total',
  help: 'Requests this process sent to Kubernetes API servers, by host, method and status code.',
  labelNames: ['host', 'method', 'code'],
  registers: [registry],
});
