// Prometheus metrics, named as controller-runtime names them so existing dashboards work.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

export const reconcileTotal = new Counter({
  name: 'controller_runtime_reconcile_total', help: 'Reconciles per controller and result.',
  labelNames: ['controller', 'result'], registers: [registry],
});
export const reconcileErrors = new Counter({
  name: 'controller_runtime_reconcile_errors_total', help: 'Reconcile errors per controller.',
  labelNames: ['controller'], registers: [registry],
});
export const reconcileTime = new Histogram({
  name: 'controller_runtime_reconcile_time_seconds', help: 'Reconcile duration per controller.',
  labelNames: ['controller'], buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  registers: [registry],
});
export const workqueueDepth = new Gauge({
  name: 'workqueue_depth', help: 'Keys waiting in the queue.', labelNames: ['name'], registers: [registry],
});
export const workqueueRetries = new Counter({
  name: 'workqueue_retries_total', help: 'Rate-limited re-adds.', labelNames: ['name'], registers: [registry],
});
export const targetClients = new Gauge({
  name: 'provider_rook_target_clients', help: 'Cached clients for target clusters (one per credential set).',
  registers: [registry],
});
export const leaderStatus = new Gauge({
  name: 'leader_election_master_status', help: '1 while this process holds the named Lease, 0 otherwise.',
  labelNames: ['name'], registers: [registry],
});
export const restClientRequests = new Counter({
  name: 'rest_client_requests_total', help: 'Requests this process sent to Kubernetes API servers, by host, method and status code.',
  labelNames: ['host', 'method', 'code'], registers: [registry],
});
