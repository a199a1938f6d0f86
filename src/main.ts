// provider-rook: the process. Flags, logging, metrics/health endpoints and graceful shutdown.
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { FIELD_MANAGER, startApp, type App } from './app.ts';
import { FLAGS, parseFlags, type Options } from './flags.ts';
import { KubeClient } from './runtime/kube/client.ts';
import { inClusterAccess, kubeconfigFileAccess } from './runtime/kube/config.ts';
import { Health } from './runtime/health.ts';
import { LeaderElector } from './runtime/leader.ts';
import { pinoLogger } from './runtime/logger.ts';
import { registry } from './runtime/metrics.ts';

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** The Lease lives in our own namespace unless told otherwise. */
function leaseNamespace(flag: string | undefined): string {
  if (flag) return flag;
  if (process.env.POD_NAMESPACE) return process.env.POD_NAMESPACE;
  return existsSync(SERVICE_ACCOUNT_NAMESPACE) ? readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim() : 'default';
}

/** NAME or NAMESPACE/NAME; a bare name lives in our own namespace, beside the Lease. */
function secretRef(flag: string, leaseFlag: string | undefined): { namespace: string; name: string } {
  const [namespace, name] = flag.includes('/') ? flag.split('/') as [string, string] : [leaseNamespace(leaseFlag), flag];
  return { namespace, name };
}

const usage = `usage: provider-rook [--kubeconfig PATH] [--namespace NS[,NS...]] [--control-plane-id ID] [--ownership-key-secret [NS/]NAME] [--poll 1m] [--leak-interval 5m]
       [--leak-mode delete|report] [--leak-grace 5m] [--allow-exec-credentials false] [--allow-plain-http false] [--refuse-endpoint-ranges loopback,private]
       [--workers 4] [--max-reconcile-rate 10] [--metrics-addr :8080] [--log-level info]
       [--leader-elect true|false] [--leader-election-namespace NS] [--leader-election-id provider-rook]`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: Object.fromEntries(Object.keys(FLAGS).map((k) => [k, { type: 'string' as const }])),
    strict: true,
  });
  let opts: Options;
  try {
    opts = parseFlags({ ...values, kubeconfig: values.kubeconfig ?? process.env.KUBECONFIG });
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${usage}`, { cause: err });
  }
  const log = pinoLogger(opts['log-level']);

  const kc = opts.kubeconfig ? kubeconfigFileAccess(opts.kubeconfig) : inClusterAccess();

  const health = new Health();
  const [host, port] = opts['metrics-addr'].split(':');
  const server = createServer((req, res) => {
    if (req.url === '/metrics') {
      void registry.metrics().then((body) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(body));
    } else if (req.url === '/healthz' || req.url === '/readyz') {
      const { status, body } = req.url === '/healthz' ? health.healthz() : health.readyz();
      res.writeHead(status, { 'Content-Type': 'text/plain' }).end(`${body}\n`);
    } else {
      res.writeHead(404).end();
    }
  }).listen(Number(port), host || undefined, () => {
    const addr = server.address();
    if (addr && typeof addr === 'object') log.info('serving /metrics, /healthz and /readyz', { addr: `${addr.address}:${addr.port}` });
  });

  const stop = new AbortController();
  const running: { app?: App; elector?: LeaderElector } = {};
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    health.set('stopping');
    log.info('shutting down', { signal });
    stop.abort();
    server.close();
    void (async () => {
      await running.app?.stop();
      await running.elector?.release(); // only after our last write: the next leader may start at once
      process.exit(0);
    })();
    setTimeout(() => process.exit(1), 20_000).unref();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  if (opts['leader-elect']) {
    const namespace = leaseNamespace(opts['leader-election-namespace']);
    running.elector = new LeaderElector({
      client: new KubeClient(kc, { fieldManager: FIELD_MANAGER }), namespace,
      name: opts['leader-election-id'], identity: `${hostname()}_${randomUUID()}`, log,
    });
    health.set('standby', `waiting for Lease ${namespace}/${opts['leader-election-id']}`);
    if (!(await running.elector.acquire(stop.signal))) return; // asked to stop while standing by
  }
  health.set('syncing');
  running.app = await startApp({
    control: kc, log, namespaces: opts.namespace?.split(','), controlPlaneId: opts['control-plane-id'], ownershipKeySecret: secretRef(opts['ownership-key-secret'], opts['leader-election-namespace']), pollIntervalMs: opts.poll, leakIntervalMs: opts['leak-interval'],
    leakReportOnly: opts['leak-mode'] === 'report', leakGraceMs: opts['leak-grace'], allowExecCredentials: opts['allow-exec-credentials'],
    endpoints: { allowPlainHttp: opts['allow-plain-http'], refuseRanges: opts['refuse-endpoint-ranges'] }, workers: opts.workers, maxReconcileRate: opts['max-reconcile-rate'],
  });
  health.watch(running.app.health);
  if (!stopping) health.set('running');
  void running.elector?.hold(stop.signal).then((outcome) => {
    if (outcome !== 'lost') return;
    // Another process may lead now: stop writing at once. A restart stands by as a fresh candidate.
    log.info('leadership lost; exiting');
    process.exit(1);
  });
}

main().catch((err: unknown) => {
  console.error(`provider-rook: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
