// Leader election on a coordination.k8s.io Lease, as client-go does it: one holder at a time, the
// others standing by. A holder that cannot renew for renewDeadline steps down before its lease can
// expire for anyone else (renewDeadline < leaseDuration), so two leaders never act at once.
// Expiry is judged by when *we* last saw the record change, never by the holder's clock.
import { keyOf } from './result.ts';
import type { Client, KubeObjectLike } from '../kube/client.ts';
import { isAlreadyExists, isConflict } from '../kube/errors.ts';
import { Leases } from '../kube/resources.ts';
import type { Logger } from '../logger.ts';
import { leaderStatus } from '../metrics.ts';
import { sleep } from '../backoff.ts';

export interface LeaderElectionOptions {
  client: Client;
  namespace: string;
  name: string;
  /** Unique per process (e.g. hostname + random suffix). */
  identity: string;
  log: Logger;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}
type Lease = KubeObjectLike & { spec?: LeaseSpec };

/** Reads and writes a release makes at most, should the lease change under it. */
const RELEASE_ATTEMPTS = 3;

/** Kubernetes MicroTime: RFC 3339 with exactly six fractional digits. */
const microTime = (ms: number): string => new Date(ms).toISOString().replace(/Z$/, '000Z');

export class LeaderElector {
  private readonly o: Required<LeaderElectionOptions>;
  /**
   * The last record seen and when we saw it change (a monotonic clock): expiry is measured from that
   * moment, so a jump of this machine's wall clock never makes a lease another holds look expired.
   */
  private observed?: { spec: LeaseSpec; at: number };
  /**
   * When the last write that held the Lease was sent (a monotonic clock: a wall-clock jump neither
   * lengthens nor cuts the renew deadline). hold() measures its deadline from here, so the time
   * between acquiring and holding (the caches' first lists) counts against it.
   */
  private renewedAt = 0;

  constructor(opts: LeaderElectionOptions) {
    this.o = {
      ...opts,
      leaseDurationMs: opts.leaseDurationMs ?? 15_000,
      renewDeadlineMs: opts.renewDeadlineMs ?? 10_000,
      retryPeriodMs: opts.retryPeriodMs ?? 2_000,
    };
    if (this.o.renewDeadlineMs >= this.o.leaseDurationMs) throw new Error('renewDeadline must be shorter than leaseDuration');
    leaderStatus.set({ name: this.o.name }, 0);
  }

  /** Resolves once we hold the Lease (false if the signal stopped us first). */
  async acquire(signal: AbortSignal): Promise<boolean> {
    let waiting = false;
    while (!signal.aborted) {
      const outcome = await this.tryAcquireOrRenew(signal).catch((err: unknown) => {
        this.o.log.warn('leader election: cannot read or write the lease; retrying', { lease: this.where, error: (err as Error).message });
        return 'failed' as const;
      });
      if (outcome === 'held') {
        leaderStatus.set({ name: this.o.name }, 1);
        this.o.log.info('leader election: acquired the lease', { lease: this.where, identity: this.o.identity });
        return true;
      }
      if (outcome === 'heldByOther' && !waiting) {
        waiting = true;
        this.o.log.info('leader election: standing by', { lease: this.where, leader: this.observed?.spec.holderIdentity });
      }
      await sleep(this.o.retryPeriodMs * (1 + Math.random() * 0.2), signal);
    }
    return false;
  }

  /**
   * Renews every retryPeriod until the signal stops us ('stopped') or leadership is gone ('lost'):
   * someone else holds the Lease, or no renewal succeeded for renewDeadline.
   */
  async hold(signal: AbortSignal): Promise<'lost' | 'stopped'> {
    while (!signal.aborted) {
      await sleep(this.o.retryPeriodMs, signal);
      if (signal.aborted) break;
      const remaining = this.renewedAt + this.o.renewDeadlineMs - performance.now();
      const attempt = AbortSignal.any([signal, AbortSignal.timeout(Math.max(Math.ceil(remaining), 1))]);
      const outcome = await this.tryAcquireOrRenew(attempt).catch((err: unknown) => {
        this.o.log.warn('leader election: renewal failed', { lease: this.where, error: (err as Error).message });
        return 'failed' as const;
      });
      if (outcome === 'held') continue;
      if (signal.aborted) break;
      if (outcome === 'heldByOther' || performance.now() - this.renewedAt >= this.o.renewDeadlineMs) {
        leaderStatus.set({ name: this.o.name }, 0);
        this.o.log.warn('leader election: lost the lease', { lease: this.where, leader: this.observed?.spec.holderIdentity });
        return 'lost';
      }
    }
    return 'stopped';
  }

  /** Gives the Lease up at once (on a clean shutdown) so a standby need not wait for it to expire. */
  async release(): Promise<void> {
    leaderStatus.set({ name: this.o.name }, 0);
    // A renewal cut short by the stop may still reach the server after the read below: its conflict
    // is read again (the lease is still ours), or the others would wait for the whole lease to expire.
    for (let attempt = 1; ; attempt++) {
      const lease = await this.o.client.get<Lease>(Leases, { namespace: this.o.namespace, name: this.o.name }).catch(() => undefined);
      if (!lease || lease.spec?.holderIdentity !== this.o.identity) return;
      const now = Date.now();
      try {
        await this.o.client.update(Leases, {
          ...lease,
          spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: microTime(now), renewTime: microTime(now) },
        });
        return;
      } catch (err) {
        if (isConflict(err) && attempt < RELEASE_ATTEMPTS) continue;
        this.o.log.warn('leader election: could not release the lease', { lease: this.where, error: (err as Error).message });
        return;
      }
    }
  }

  private get where(): string {
    return keyOf(this.o);
  }

  private async tryAcquireOrRenew(signal: AbortSignal): Promise<'held' | 'heldByOther' | 'failed'> {
    const sent = performance.now();
    const now = Date.now();
    const mine: LeaseSpec = {
      holderIdentity: this.o.identity,
      leaseDurationSeconds: Math.ceil(this.o.leaseDurationMs / 1000),
      renewTime: microTime(now),
    };
    const lease = await this.o.client.get<Lease>(Leases, { namespace: this.o.namespace, name: this.o.name }, signal);
    if (!lease) {
      const spec = { ...mine, acquireTime: mine.renewTime, leaseTransitions: 0 };
      try {
        await this.o.client.create(
          Leases,
          { apiVersion: Leases.apiVersion, kind: Leases.kind, metadata: { name: this.o.name, namespace: this.o.namespace }, spec },
          signal,
        );
      } catch (err) {
        if (isAlreadyExists(err)) return 'failed';
        throw err;
      }
      this.observed = { spec, at: sent };
      this.renewedAt = sent;
      return 'held';
    }

    const seen = lease.spec ?? {};
    if (!this.observed || !sameRecord(this.observed.spec, seen)) this.observed = { spec: seen, at: sent };
    const holder = seen.holderIdentity;
    if (holder && holder !== this.o.identity) {
      const expiresAt = this.observed.at + (seen.leaseDurationSeconds ?? 0) * 1000;
      if (expiresAt > performance.now()) return 'heldByOther';
    }

    const takeover = holder !== this.o.identity;
    const spec: LeaseSpec = {
      ...mine,
      acquireTime: takeover ? mine.renewTime : seen.acquireTime,
      leaseTransitions: (seen.leaseTransitions ?? 0) + (takeover ? 1 : 0),
    };
    try {
      await this.o.client.update(Leases, { ...lease, spec }, signal); // resourceVersion guards the race
    } catch (err) {
      if (isConflict(err)) return 'failed';
      throw err;
    }
    this.observed = { spec, at: sent };
    this.renewedAt = sent;
    return 'held';
  }
}

function sameRecord(a: LeaseSpec, b: LeaseSpec): boolean {
  return a.holderIdentity === b.holderIdentity && a.renewTime === b.renewTime && a.leaseDurationSeconds === b.leaseDurationSeconds;
}
