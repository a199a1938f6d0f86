// make soak [MINUTES=30]: provider-rook under steady claim churn on two targets, for half an hour
// (longer with --minutes), with one outage of target B in the middle. Not in CI. Every cycle (a
// minute) creates claims on both targets, waits until they are Bound, deletes them and waits until
// nothing is left; at the end of each cycle, at rest, it samples the process: RSS, the V8 heap, open
// handles, timers and sockets (Node's own counts, from /metrics). It fails if any of them grows from
// one cycle to the next beyond noise: the growth from the first third of the cycles (after a warm-up)
// to the last third may not exceed the band `--calm` measured, with the process at rest and no churn
// (run it first: it writes .local/soak/calm.json), plus the spread the churn itself shows from one
// cycle to the next. Figures and samples go to .local/soak/.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Buckets } from '../src/app.ts';
import { samples } from '../test/kit/apiserver-metrics.ts';
import { ChaosEnv, CLUSTERS, Replica, World, sleep } from './lib/chaos.ts';
import { down, repoRoot } from '../test/kit/cluster.ts';
import { PROVIDER_NODE_FLAGS } from './lib/node-flags.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: process.env.MINUTES || '30' },
    'cycle-s': { type: 'string', default: '60' },
    claims: { type: 'string', default: '10' },
    calm: { type: 'boolean', default: false },
    'warm-up': { type: 'string', default: '3' },
  },
});
const minutes = Number(values.minutes);
const cycleMs = Number(values['cycle-s']) * 1000;
const perTarget = Number(values.claims);
const warmUp = Number(values['warm-up']);
const dir = path.join(repoRoot, '.local', 'soak');
mkdirSync(dir, { recursive: true });
const say = (line: string): void => console.log(`[soak] ${line}`);

type Sample = Record<'rssMiB' | 'heapMiB' | 'handles' | 'timers' | 'sockets', number>;
const METRICS: (keyof Sample)[] = ['rssMiB', 'heapMiB', 'handles', 'timers', 'sockets'];

async function sample(replica: Replica): Promise<Sample> {
  const body = await replica.metricsText();
  const one = (name: string): number =>
    Number(
      body
        .split('\n')
        .find((l) => l.startsWith(`${name} `))
        ?.split(' ')[1] ?? 0,
    );
  const byType = (name: string, types: string[]) =>
    samples(body, name)
      .filter((s) => types.includes(s.labels.type ?? ''))
      .reduce((n, s) => n + s.value, 0);
  return {
    rssMiB: one('process_resident_memory_bytes') / 1048576,
    heapMiB: one('nodejs_heap_size_used_bytes') / 1048576,
    handles: one('nodejs_active_handles_total'),
    timers: byType('nodejs_active_resources', ['Timeout', 'Immediate']),
    sockets: byType('nodejs_active_handles', ['Socket', 'TLSSocket']),
  };
}

// The noise band the verdict needs, read before half an hour is spent.
const calmBandFile = path.join(dir, 'calm-band.json');
if (!values.calm && !existsSync(calmBandFile)) {
  console.error(`make soak: ${calmBandFile} is missing: run npm run soak -- --calm --minutes 8 first (it measures the noise)`);
  process.exit(2);
}
const env = await ChaosEnv.up((l) => say(l));
const world = await new World(env, 'soak').create();
// As the image runs it: Node's flags, info logging.
const replica = new Replica('soak', env.control, [], { nodeFlags: PROVIDER_NODE_FLAGS, logLevel: 'info' });
await replica.start();
await sleep(10_000); // informers synced, first Provider checks done
const cycles = Math.max(1, Math.floor((minutes * 60_000) / cycleMs));
const outageAt = Math.floor(cycles / 2);
const rows: (Sample & { cycle: number; boundS?: number; emptiedS?: number })[] = [];
const started = performance.now();
for (let c = 0; c < cycles; c++) {
  const t = performance.now();
  const row: (typeof rows)[number] = { cycle: c, ...(await sample(replica)) };
  if (!values.calm) {
    const names = ['a', 'b'].flatMap((on) => Array.from({ length: perTarget }, (_, i) => `${on}-${c}-${i}`));
    await world.claims(
      names.filter((n) => n.startsWith('a-')),
      'a',
    );
    await world.claims(
      names.filter((n) => n.startsWith('b-')),
      'b',
    );
    if (c === outageAt) {
      say(`cycle ${c}: target B's API server stopped for 30 s`);
      await env.stopTarget(env.targets.b);
      await sleep(30_000);
      await env.startTarget(env.targets.b);
    }
    await world.bound(names, 300_000);
    row.boundS = (performance.now() - t) / 1000;
    for (const n of names) await env.admin.delete(Buckets, { namespace: world.app, name: n });
    const left = async () => (await world.leftovers()).length;
    for (let waited = 0; (await left()) > 0; waited += 500) {
      if (waited > 300_000) throw new Error(`cycle ${c}: ${await left()} objects left 5 minutes after the deletes`);
      await sleep(500);
    }
    row.emptiedS = (performance.now() - t) / 1000 - row.boundS;
  }
  // At rest until the cycle ends, then the sample that counts.
  // At least 10 s at rest, even after a cycle that overran (the outage's).
  await sleep(Math.max(10_000, cycleMs - (performance.now() - t)));
  Object.assign(row, await sample(replica));
  rows.push(row);
  say(
    `cycle ${c}: ${METRICS.map((m) => `${m} ${row[m].toFixed(1)}`).join(', ')}${row.boundS ? `; Bound in ${row.boundS.toFixed(1)} s, emptied in ${row.emptiedS!.toFixed(1)} s` : ''}`,
  );
}
await replica.kill();
await env.close();
if (!process.env.KEEP_CLUSTERS) await down([...CLUSTERS]);

writeFileSync(path.join(dir, values.calm ? 'calm.json' : 'soak.json'), `${JSON.stringify(rows, null, 2)}\n`);
const after = rows.slice(warmUp);
const band = (xs: number[]) => Math.max(...xs) - Math.min(...xs);
if (values.calm) {
  const calm = Object.fromEntries(METRICS.map((m) => [m, band(after.map((r) => r[m]))]));
  writeFileSync(path.join(dir, 'calm-band.json'), `${JSON.stringify(calm, null, 2)}\n`);
  say(`calm band over ${after.length} samples: ${METRICS.map((m) => `${m} ${calm[m]!.toFixed(2)}`).join(', ')}`);
  process.exit(0);
}
const calmBand = JSON.parse(readFileSync(calmBandFile, 'utf8')) as Record<string, number>;
const third = Math.max(1, Math.floor(after.length / 3));
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
let failed = false;
for (const m of METRICS) {
  const growth = mean(after.slice(-third).map((r) => r[m])) - mean(after.slice(0, third).map((r) => r[m]));
  const churn = 2 * median(after.slice(1).map((r, i) => Math.abs(r[m] - after[i]![m])));
  const allowed = (calmBand[m] ?? 0) + churn;
  const ok = growth <= allowed;
  failed ||= !ok;
  say(
    `${m}: ${growth >= 0 ? '+' : ''}${growth.toFixed(2)} from the first to the last third (allowed ${allowed.toFixed(2)}: calm ${(calmBand[m] ?? 0).toFixed(2)} + churn ${churn.toFixed(2)}) ${ok ? 'ok' : 'GROWS'}`,
  );
}
say(
  `${cycles} cycles of ${2 * perTarget} claims in ${((performance.now() - started) / 60_000).toFixed(1)} min, outage at cycle ${outageAt}: ${failed ? 'FAILED' : 'passed'}`,
);
process.exit(failed ? 1 : 0);
