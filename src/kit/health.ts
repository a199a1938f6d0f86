// The probes (controller-runtime's healthz/readyz, with checks of our own):
// - /readyz answers 200 once the informers hold a first full list and the controllers run, and on a
//   standby, which says it is standing by. A standby must count as ready: with two replicas, a
//   rolling update would otherwise wait forever for the new standby.
// - /healthz fails when a part is stuck past its bound (a reconcile that outlived its deadline and
//   ignored its abort, an informer loop that stopped making progress), so the kubelet restarts a
//   process that would otherwise sit there looking alive. Failing lists and watches are not stuck:
//   they retry with backoff, and restarting would not bring the API server back.

/** A part that can tell whether it is stuck: a reason, or undefined when it is not. */
export interface Probe {
  stuck(now: number): string | undefined;
}

export interface HealthSources {
  /** Every informer holds a first full list. */
  synced(): boolean;
  probes(): Probe[];
}

export type Phase = 'starting' | 'standby' | 'syncing' | 'running' | 'stopping';

export interface ProbeAnswer {
  status: number;
  body: string;
}

export class Health {
  private phase: Phase = 'starting';
  private detail = '';
  private sources?: HealthSources;
  private readonly now: () => number;

  // The monotonic clock: a forward step of the wall clock must not count a busy reconcile as stuck and have the pod restarted.
  constructor(now: () => number = () => performance.now()) {
    this.now = now;
  }

  /** Where the process is; `detail` is shown as it is (e.g. which Lease a standby waits for). */
  set(phase: Phase, detail = ''): void {
    this.phase = phase;
    this.detail = detail;
  }

  /** The running parts to check; given once the controllers are built. */
  watch(sources: HealthSources): void {
    this.sources = sources;
  }

  readyz(): ProbeAnswer {
    const detailed = (text: string): string => (this.detail ? `${text}: ${this.detail}` : text);
    switch (this.phase) {
      case 'standby':
        return { status: 200, body: detailed('standby: not the leader; controllers start on taking over') };
      case 'running':
        return this.sources?.synced() ? { status: 200, body: 'ok' } : { status: 503, body: 'informers have not synced' };
      case 'stopping':
        return { status: 503, body: 'shutting down' };
      default:
        return { status: 503, body: detailed(this.phase === 'syncing' ? 'informers are syncing' : 'starting') };
    }
  }

  healthz(): ProbeAnswer {
    if (this.phase !== 'running' || !this.sources) return { status: 200, body: 'ok' };
    const now = this.now();
    const stuck = this.sources
      .probes()
      .map((p) => p.stuck(now))
      .filter((s): s is string => s !== undefined);
    return stuck.length ? { status: 500, body: `stuck:\n${stuck.join('\n')}` } : { status: 200, body: 'ok' };
  }
}
