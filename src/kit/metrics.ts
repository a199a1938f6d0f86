// Prometheus metrics, named as controller-runtime names them so existing dashboards work.
// prom-client's parts are imported one by one: its index also loads a push gateway client, summaries,
// cluster aggregation and, for the CPU metric's exemplars, OpenTelemetry's API (51 modules), none of
// which we use: 1.5 MiB of an idle process.
import Counter from 'prom-client/lib/counter.js';
import Gauge from 'prom-client/lib/gauge.js';
import Histogram from 'prom-client/lib/histogram.js';
import Registry from 'prom-client/lib/registry.js';
import eventLoopLag from 'prom-client/lib/metrics/eventLoopLag.js';
import gc from 'prom-client/lib/metrics/gc.js';
import heapSizeAndUsed from 'prom-client/lib/metrics/heapSizeAndUsed.js';
import heapSpacesSizeAndUsed from 'prom-client/lib/metrics/heapSpacesSizeAndUsed.js';
import osMemoryHeap from 'prom-client/lib/metrics/osMemoryHeap.js';
import processHandles from 'prom-client/lib/metrics/processHandles.js';
import processMaxFileDescriptors from 'prom-client/lib/metrics/processMaxFileDescriptors.js';
import processOpenFileDescriptors from 'prom-client/lib/metrics/processOpenFileDescriptors.js';
import processRequests from 'prom-client/lib/metrics/processRequests.js';
import processResources from 'prom-client/lib/metrics/processResources.js';
import processStartTime from 'prom-client/lib/metrics/processStartTime.js';
import version from 'prom-client/lib/metrics/version.js';

export { Counter, Gauge, Histogram };

export const registry = new Registry();
// Node's event loop delay is sampled by a timer: prom-client's default (every 10 ms) wakes an idle
// process 100 times a second, most of its CPU at rest. Once a second still catches every stall a
// 30 s scrape would show.
export const EVENT_LOOP_SAMPLE_MS = 1000;
// prom-client's default metrics, each registered as collectDefaultMetrics() would, and the process's
// CPU below (the one default metric written here).
for (const collect of [
  processStartTime,
  osMemoryHeap,
  processOpenFileDescriptors,
  processMaxFileDescriptors,
  eventLoopLag,
  processResources,
  processHandles,
  processRequests,
  heapSizeAndUsed,
  heapSpacesSizeAndUsed,
  version,
  gc,
])
  collect(registry, { eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });

/** The process's CPU time since it started, read at scrape time, under prom-client's names. */
function processCpu(): void {
  let last = { user: 0, system: 0 };
  const counter = (name: string, help: string, collect?: () => void): Counter =>
    new Counter({ name, help, registers: [registry], ...(collect ? { collect } : {}) });
  const user = counter('process_cpu_user_seconds_total', 'Total user CPU time spent in seconds.', () => {
    const now = process.cpuUsage();
    const [u, s] = [(now.user - last.user) / 1e6, (now.system - last.system) / 1e6];
    last = now;
    user.inc(u);
    system.inc(s);
    total.inc(u + s);
  });
  const system = counter('process_cpu_system_seconds_total', 'Total system CPU time spent in seconds.');
  const total = counter('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds.');
}
processCpu();

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
