// provider-rook: the process. Flags, logging, metrics/health endpoints and graceful shutdown.
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { startApp } from './app.ts';
import { pinoLogger } from './runtime/logger.ts';
import { registry } from './runtime/metrics.ts';

const duration = z.string().regex(/^\d+(ms|s|m|h)$/, 'use a duration like 30s, 1m or 1h').transform((v) => {
  const n = Number.parseInt(v, 10);
  return n * ({ ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const)[v.replace(/^\d+/, '') as 'ms' | 's' | 'm' | 'h'];
});

const flags = z.object({
  kubeconfig: z.string().optional(),
  'control-plane-id': z.string().optional(),
  namespace: z.string().regex(/^[a-z0-9-]+(,[a-z0-9-]+)*$/, 'use one namespace or a comma-separated list').optional(),
  poll: duration.default(60_000),
  'leak-interval': duration.default(300_000),
  'leak-mode': z.enum(['delete', 'report']).default('delete'),
  workers: z.coerce.number().int().min(1).max(64).default(4),
  'max-reconcile-rate': z.coerce.number().min(1).default(10),
  'metrics-addr': z.string().default(':8080'),
  'log-level': z.enum(['debug', 'info', 'warn', 'error']).default('info'),
});

const usage = `usage: provider-rook [--kubeconfig PATH] [--namespace NS[,NS...]] [--control-plane-id ID] [--poll 1m] [--leak-interval 5m]
       [--leak-mode delete|report] [--workers 4] [--max-reconcile-rate 10] [--metrics-addr :8080] [--log-level info]`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: Object.fromEntries(Object.keys(flags.shape).map((k) => [k, { type: 'string' as const }])),
    strict: true,
  });
  const parsed = flags.safeParse({ ...values, kubeconfig: values.kubeconfig ?? process.env.KUBECONFIG });
  if (!parsed.success) throw new Error(`${parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('; ')}\n${usage}`);
  const opts = parsed.data;
  const log = pinoLogger(opts['log-level']);

  const kc = new KubeConfig();
  if (opts.kubeconfig) kc.loadFromFile(opts.kubeconfig);
  else kc.loadFromCluster();

  const app = await startApp({
    control: kc, log, namespaces: opts.namespace?.split(','), controlPlaneId: opts['control-plane-id'], pollIntervalMs: opts.poll, leakIntervalMs: opts['leak-interval'],
    leakReportOnly: opts['leak-mode'] === 'report', workers: opts.workers, maxReconcileRate: opts['max-reconcile-rate'],
  });

  const [host, port] = opts['metrics-addr'].split(':');
  const server = createServer((req, res) => {
    if (req.url === '/metrics') {
      void registry.metrics().then((body) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(body));
    } else if (req.url === '/healthz' || req.url === '/readyz') {
      res.writeHead(200).end('ok');
    } else {
      res.writeHead(404).end();
    }
  }).listen(Number(port), host || undefined);

  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { signal });
    server.close();
    void app.stop().then(() => process.exit(0));
    setTimeout(() => process.exit(1), 20_000).unref();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  console.error(`provider-rook: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
