// Leader election on a real Lease: one leader at a time, a clean shutdown hands over at once, a
// crashed leader's lease is only taken once it has expired, and a leader that can no longer renew
// steps down before anyone else could take over. Then the same through provider-rook's own process.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { repoRoot } from '../kit/cluster.ts';
import { KubeClient, type KubeObjectLike } from '../../src/kit/kube/client.ts';
import { Leases } from '../../src/kit/kube/resources.ts';
import { LeaderElector, type LeaderElectionOptions } from '../../src/kit/controller/leader.ts';
import { Manager } from '../../src/kit/controller/manager.ts';
import type { Logger } from '../../src/kit/logger.ts';
import { adminClient, kubeConfigOf, testCluster, uniqueName } from '../kit/env.ts';
import { createNamespace, installCrds, ourCrds } from '../kit/provider.ts';
import { eventually } from '../kit/eventually.ts';

type Lease = KubeObjectLike & {
  spec: { holderIdentity?: string; leaseTransitions?: number; renewTime?: string; leaseDurationSeconds?: number };
};

let admin: KubeClient;
let ns: string;

/** A logger that remembers messages, so a test can wait for "standing by" instead of sleeping. */
function recordingLogger(): Logger & { messages: string[] } {
  const messages: string[] = [];
  const log: Logger & { messages: string[] } = {
    messages,
    info: (m) => void messages.push(m),
    warn: (m) => void messages.push(m),
    error: (m) => void messages.push(m),
    debug: () => {},
    with: () => log,
  };
  return log;
}

function elector(name: string, identity: string, timing: Partial<LeaderElectionOptions>, client = admin) {
  const log = recordingLogger();
  return { log, elector: new LeaderElector({ client, namespace: ns, name, identity, log, ...timing }) };
}

const holderOf = async (name: string): Promise<Lease['spec'] | undefined> =>
  (await admin.get<Lease>(Leases, { namespace: ns, name }))?.spec;

beforeAll(async () => {
  admin = adminClient(testCluster('control'));
  ns = await createNamespace(admin, 'lease');
});

describe('leader election', () => {
  it('elects exactly one of three candidates, and a clean release hands over without waiting for expiry', async () => {
    const lease = uniqueName('one');
    // A long lease: a takeover well inside it can only come from the release.
    const timing = { leaseDurationMs: 20_000, renewDeadlineMs: 15_000, retryPeriodMs: 200 };
    const candidates = ['a', 'b', 'c'].map((id) => ({ id, ...elector(lease, id, timing), stop: new AbortController() }));
    const acquired = candidates.map((c) => c.elector.acquire(c.stop.signal).then(() => c));
    const leader = await Promise.race(acquired);
    const holding = leader.elector.hold(leader.stop.signal);
    const others = candidates.filter((c) => c !== leader);
    await eventually(() => others.every((c) => c.log.messages.includes('leader election: standing by')), 'the others to stand by');
    expect((await holderOf(lease))?.holderIdentity).toBe(leader.id);

    leader.stop.abort();
    expect(await holding).toBe('stopped');
    const releasedAt = Date.now();
    await leader.elector.release();
    const next = await Promise.race(acquired.filter((_, i) => candidates[i] !== leader));
    expect(Date.now() - releasedAt).toBeLessThan(timing.leaseDurationMs);
    const spec = await holderOf(lease);
    expect(spec?.holderIdentity).toBe(next.id);
    expect(spec?.leaseTransitions).toBe(1);
    for (const c of candidates) c.stop.abort();
    await Promise.all(acquired);
  });

  it('takes over a crashed leader only after its lease has expired', async () => {
    const lease = uniqueName('crash');
    const timing = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 200 };
    const a = elector(lease, 'a', timing);
    expect(await a.elector.acquire(new AbortController().signal)).toBe(true);
    const crashedAt = Date.now(); // a never renews again and never releases
    const b = elector(lease, 'b', timing);
    expect(await b.elector.acquire(new AbortController().signal)).toBe(true);
    expect(Date.now() - crashedAt).toBeGreaterThanOrEqual(timing.leaseDurationMs);
    expect(b.log.messages).toContain('leader election: standing by');
    expect(await holderOf(lease)).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
  });

  it('steps down as soon as someone else holds the lease', async () => {
    const lease = uniqueName('taken');
    const a = elector(lease, 'a', { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 200 });
    await a.elector.acquire(new AbortController().signal);
    const holding = a.elector.hold(new AbortController().signal);
    const current = await admin.get<Lease>(Leases, { namespace: ns, name: lease });
    await admin.update(Leases, {
      ...current!,
      spec: { ...current!.spec, holderIdentity: 'intruder', renewTime: new Date().toISOString().replace('Z', '000Z') },
    });
    expect(await holding).toBe('lost');
    expect((await holderOf(lease))?.holderIdentity).toBe('intruder');
  });

  it('steps down when it cannot renew, before its lease could expire for anyone else', async () => {
    const lease = uniqueName('cut-off');
    const timing = { leaseDurationMs: 4_000, renewDeadlineMs: 2_000, retryPeriodMs: 200 };
    let cutOff = false;
    const client = new KubeClient(kubeConfigOf(testCluster('control')), {
      fieldManager: 'leader-test',
      onRequest: () => {
        if (cutOff) throw new Error('injected: control plane unreachable');
      },
    });
    const a = elector(lease, 'a', timing, client);
    await a.elector.acquire(new AbortController().signal);
    const holding = a.elector.hold(new AbortController().signal);
    cutOff = true;
    const lastRenew = Date.parse((await holderOf(lease))!.renewTime!);
    expect(await holding).toBe('lost');
    expect(Date.now() - lastRenew).toBeLessThan(timing.leaseDurationMs);
    expect(a.log.messages).toContain('leader election: renewal failed');
    await client.close();
  });
});

describe('a Manager with leader election', () => {
  it('renews its lease from the moment it holds it, however long it takes before its controllers start', async () => {
    const lease = uniqueName('slow-start');
    const timing = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 200 };
    let lost = false;
    const manager = new Manager({
      control: kubeConfigOf(testCluster('control')),
      log: recordingLogger(),
      fieldManager: 'leader-test',
      leaderElection: { namespace: ns, name: lease, identity: 'slow', ...timing, lost: () => void (lost = true) },
    });
    try {
      expect(await manager.lead()).toBe(true);
      // Whatever comes between holding the Lease and starting (the Provider system's setup, the caches'
      // first lists) may outlast the lease: a candidate trying for twice its length never gets it.
      const other = elector(lease, 'other', timing);
      expect(await other.elector.acquire(AbortSignal.timeout(2 * timing.leaseDurationMs))).toBe(false);
      expect((await holderOf(lease))?.holderIdentity).toBe('slow');
      expect(lost).toBe(false);
      expect(await manager.start()).toBe(true);
    } finally {
      await manager.stop();
    }
  });
});

describe('a Manager stopping', () => {
  it('renews its lease until its last reconcile has ended: a standby takes over only then', async () => {
    const lease = uniqueName('stopping');
    const timing = { leaseDurationMs: 1_500, renewDeadlineMs: 1_000, retryPeriodMs: 200 };
    const manager = new Manager({
      control: kubeConfigOf(testCluster('control')),
      log: recordingLogger(),
      fieldManager: 'leader-test',
      leaderElection: { namespace: ns, name: lease, identity: 'stopping', ...timing, lost: () => {} },
    });
    let entered!: () => void;
    const running = new Promise<void>((resolve) => (entered = resolve));
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    // A slow reconcile (a target that is slow to answer): it goes on writing after stop() is called.
    const controller = manager.controller('slow', {
      reconcile: async () => {
        entered();
        await finished;
        return { kind: 'done' };
      },
    });
    let stopped: Promise<void> | undefined;
    try {
      expect(await manager.start()).toBe(true);
      controller.enqueue('k');
      await running;
      stopped = manager.stop();
      // While it runs, a standby trying for twice the lease's length never gets it.
      const standby = elector(lease, 'standby', timing);
      expect(await standby.elector.acquire(AbortSignal.timeout(2 * timing.leaseDurationMs))).toBe(false);
      finish();
      await stopped;
      // Given up once everything has stopped: the standby takes it at once.
      expect(await standby.elector.acquire(AbortSignal.timeout(timing.leaseDurationMs))).toBe(true);
    } finally {
      finish();
      await (stopped ?? manager.stop());
    }
  });
});

describe('provider-rook with --leader-elect', () => {
  const processes: ChildProcess[] = [];
  beforeAll(() => installCrds(admin, ourCrds()), 60_000);
  afterAll(() => {
    for (const p of processes) p.kill('SIGKILL');
  });

  function start(lease: string, watched: string): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
    let out = '';
    const child = spawn(
      process.execPath,
      [
        path.join(repoRoot, 'src', 'main.ts'),
        '--kubeconfig',
        testCluster('control').kubeconfig,
        '--namespace',
        watched,
        '--leader-elect',
        'true',
        '--leader-election-namespace',
        ns,
        '--leader-election-id',
        lease,
        '--metrics-addr',
        '127.0.0.1:0',
      ],
      { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    processes.push(child);
    return { child, output: () => out, exited: new Promise((resolve) => child.once('exit', resolve)) };
  }

  /** GET one of the process's probes, at the address it logged. */
  async function probe(output: string, what: '/readyz' | '/healthz'): Promise<[number, string]> {
    const addr = /"addr":"([^"]+)"[^\n]*serving \/metrics|serving \/metrics[^\n]*"addr":"([^"]+)"/.exec(output);
    const res = await fetch(`http://${addr![1] ?? addr![2]}${what}`);
    return [res.status, (await res.text()).trim()];
  }

  it('runs the controllers in one process only, and a SIGTERM hands them to the standby', async () => {
    const lease = uniqueName('provider');
    const watched = await createNamespace(admin, 'le-watched');
    const first = start(lease, watched);
    await eventually(() => first.output().includes('provider-rook started'), 'the first process to lead and start', 60_000);
    const second = start(lease, watched);
    await eventually(() => second.output().includes('standing by'), 'the second process to stand by', 60_000);
    expect(second.output()).not.toContain('provider-rook started');
    // The leader is ready with synced informers; the standby is ready too, and says why it idles.
    expect(await probe(first.output(), '/readyz')).toEqual([200, 'ok']);
    expect(await probe(first.output(), '/healthz')).toEqual([200, 'ok']);
    expect(await probe(second.output(), '/readyz')).toEqual([
      200,
      `standby: not the leader; controllers start on taking over: waiting for Lease ${ns}/${lease}`,
    ]);

    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    await eventually(() => second.output().includes('provider-rook started'), 'the standby to take over after the release', 60_000);
    expect(
      await eventually(async () => {
        const [code, body] = await probe(second.output(), '/readyz');
        return body === 'ok' && code;
      }, 'the new leader ready'),
    ).toBe(200);
    expect((await holderOf(lease))?.holderIdentity).toMatch(/_/);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    expect((await holderOf(lease))?.holderIdentity).toBe('');
  }, 120_000);
});
