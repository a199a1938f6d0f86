// Reads write-request counters from a real API server's /metrics: zero-write steady state is
// measured where requests land, whoever sent them (tests and benchmarks).
import { adminGet, type LocalCluster } from './cluster.ts';

const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'APPLY', 'DELETE', 'DELETECOLLECTION']);
// Writes the API server makes to itself: it renews its identity Lease every few seconds, and keeps
// trying to publish the default/kubernetes Endpoints (rejected on loopback addresses). Never ours.
const IGNORED_RESOURCES = new Set(['leases', 'endpoints']);

/** The samples of one metric in a Prometheus text exposition. */
export function samples(body: string, metric: string): { labels: Record<string, string>; value: number }[] {
  return body
    .split('\n')
    .filter((line) => line.startsWith(`${metric}{`))
    .map((line) => ({
      labels: Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!])),
      value: Number(line.slice(line.lastIndexOf(' ') + 1)),
    }));
}

/** Write requests served so far, by "VERB resource[/subresource]". */
export async function writeCounts(cluster: LocalCluster): Promise<Map<string, number>> {
  const { status, body } = await adminGet(cluster, '/metrics');
  if (status !== 200) throw new Error(`GET /metrics returned ${status}`);
  const counts = new Map<string, number>();
  for (const { labels, value } of samples(body, 'apiserver_request_total')) {
    if (!WRITE_VERBS.has(labels.verb!) || IGNORED_RESOURCES.has(labels.resource!)) continue;
    const key = `${labels.verb} ${labels.resource}${labels.subresource ? `/${labels.subresource}` : ''}`;
    counts.set(key, (counts.get(key) ?? 0) + value);
  }
  return counts;
}

export function difference(after: Map<string, number>, before: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of after) if (v - (before.get(k) ?? 0) > 0) out[k] = v - (before.get(k) ?? 0);
  return out;
}

/** What an API server has served so far: requests (not watches), their seconds in all, and 429s (APF or max-in-flight). */
export async function serverLoad(cluster: LocalCluster): Promise<{ requests: number; seconds: number; throttled: number }> {
  const { status, body } = await adminGet(cluster, '/metrics');
  if (status !== 200) throw new Error(`GET /metrics returned ${status}`);
  const served = (metric: string) =>
    samples(body, metric)
      .filter((s) => s.labels.verb !== 'WATCH' && s.labels.verb !== 'CONNECT' && !IGNORED_RESOURCES.has(s.labels.resource ?? ''))
      .reduce((n, s) => n + s.value, 0);
  const throttled = samples(body, 'apiserver_request_total')
    .filter((s) => s.labels.code === '429')
    .reduce((n, s) => n + s.value, 0);
  return {
    requests: served('apiserver_request_duration_seconds_count'),
    seconds: served('apiserver_request_duration_seconds_sum'),
    throttled,
  };
}

/** Between two readings of every server: requests, their mean latency (ms), and 429s. */
export function loadBetween(
  after: { requests: number; seconds: number; throttled: number }[],
  before: { requests: number; seconds: number; throttled: number }[],
): { requests: number; meanMs: number; throttled: number } {
  const sum = (k: 'requests' | 'seconds' | 'throttled') => after.reduce((n, a, i) => n + a[k] - (before[i]?.[k] ?? 0), 0);
  const requests = sum('requests');
  return { requests, meanMs: requests ? Math.round((sum('seconds') / requests) * 1000 * 10) / 10 : 0, throttled: sum('throttled') };
}
