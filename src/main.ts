// provider-rook: the process. Flags, logging and graceful shutdown; the manager serves the probes and
// holds the Lease.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { createApp } from './app.ts';
import { fs, util } from './kit/builtins.ts';
import { FLAGS, parseFlags, type Options } from './flags.ts';
import { inClusterAccess, kubeconfigFileAccess } from './kit/kube/config.ts';
import { pinoLogger } from './kit/logger.ts';
import { countWaitingAfter } from './runtime/managed-metrics.ts';

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** The Lease lives in our own namespace unless told otherwise. */
function leaseNamespace(flag: string | undefined): string {
  if (flag) return flag;
  if (process.env.POD_NAMESPACE) return process.env.POD_NAMESPACE;
  return fs.existsSync(SERVICE_ACCOUNT_NAMESPACE) ? fs.readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim() : 'default';
}

/** NAME or NAMESPACE/NAME; a bare name lives in our own namespace, beside the Lease. */
function secretRef(flag: string, leaseFlag: string | undefined): { namespace: string; name: string } {
  const [namespace, name] = flag.includes('/') ? (flag.split('/') as [string, string]) : [leaseNamespace(leaseFlag), flag];
  return { namespace, name };
}

const usage = `usage: provider-rook [--kubeconfig PATH] [--namespace NS[,NS...]] [--control-plane-id ID] [--ownership-key-secret [NS/]NAME] [--poll 1m] [--leak-interval 5m]
       [--leak-mode delete|report] [--leak-grace 5m] [--waiting-after 5m] [--allow-exec-credentials false] [--allow-plain-http false] [--refuse-endpoint-ranges loopback,private]
       [--workers 8] [--max-reconcile-rate 50] [--metrics-addr :8080] [--log-level info]
       [--leader-elect true|false] [--leader-election-namespace NS] [--leader-election-id provider-rook]
       [--leader-election-lease-duration 15s] [--leader-election-renew-deadline 10s] [--leader-election-retry-period 2s]`;

async function main(): Promise<void> {
  const { values } = util.parseArgs({
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
  countWaitingAfter(opts['waiting-after']);
  const kc = opts.kubeconfig ? readKubeconfig(opts.kubeconfig) : inClusterAccess();
  const app = createApp({
    control: kc,
    log,
    namespaces: opts.namespace?.split(','),
    metricsAddr: opts['metrics-addr'],
    leaderElection: opts['leader-elect']
      ? {
          namespace: leaseNamespace(opts['leader-election-namespace']),
          name: opts['leader-election-id'],
          identity: `${hostname()}_${randomUUID()}`,
          leaseDurationMs: opts['leader-election-lease-duration'],
          renewDeadlineMs: opts['leader-election-renew-deadline'],
          retryPeriodMs: opts['leader-election-retry-period'],
          lost: () => {
            // Another process may lead now: stop writing at once. A restart stands by as a fresh candidate.
            log.error('leadership lost; exiting');
            process.exit(1);
          },
        }
      : undefined,
    controlPlaneId: opts['control-plane-id'],
    ownershipKeySecret: secretRef(opts['ownership-key-secret'], opts['leader-election-namespace']),
    pollIntervalMs: opts.poll,
    leakIntervalMs: opts['leak-interval'],
    leakReportOnly: opts['leak-mode'] === 'report',
    leakGraceMs: opts['leak-grace'],
    allowExecCredentials: opts['allow-exec-credentials'],
    endpoints: { allowPlainHttp: opts['allow-plain-http'], refuseRanges: opts['refuse-endpoint-ranges'] },
    workers: opts.workers,
    maxReconcileRate: opts['max-reconcile-rate'],
  });

  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { signal });
    // The manager stops its controllers, then gives up the Lease after our last write.
    void app.stop().then(() => process.exit(0));
    setTimeout(() => process.exit(1), 20_000).unref();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  try {
    await app.start();
  } catch (err) {
    log.error('could not start; exiting', { error: err instanceof Error ? err.message : String(err) });
    process.exit(1);
  }
}

/** The --kubeconfig file, or one line saying why it cannot be read (never a stack trace). */
function readKubeconfig(file: string): ReturnType<typeof kubeconfigFileAccess> {
  try {
    return kubeconfigFileAccess(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (err as Error).message;
    throw new Error(`cannot read --kubeconfig ${file}: ${why}`, { cause: err });
  }
}

main().catch((err: unknown) => {
  console.error(`provider-rook: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
