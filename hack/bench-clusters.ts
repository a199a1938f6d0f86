// npm run bench:clusters: cold (new cluster) and warm (restart of a stopped one) start times for one
// and for two local control planes, and the memory they hold once ready.
import { readFileSync } from 'node:fs';
import { ensureBinaries } from '../test/kit/binaries.ts';
import { down, start, status, stop, up } from '../test/kit/cluster.ts';

function rssMiB(pid: number | undefined): number {
  if (pid === undefined) return 0;
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return (performance.now() - t) / 1000;
}

await ensureBinaries();
for (const count of [1, 2]) {
  const names = Array.from({ length: count }, (_, i) => `bench-${i}`);
  await down(names);
  const cold = await timed(() => up(names));
  await new Promise((r) => setTimeout(r, 3000)); // let the servers settle before reading memory
  const rss = status()
    .filter((s) => names.includes(s.name))
    .map((s) => ({
      name: s.name,
      etcd: rssMiB(s.running.etcd),
      apiserver: rssMiB(s.running['kube-apiserver']),
      kcm: rssMiB(s.running['kube-controller-manager']),
    }));
  for (const name of names) await stop(name);
  const warm = await timed(() => Promise.all(names.map((n) => start(n))));
  await down(names);
  const total = rss.reduce((sum, r) => sum + r.etcd + r.apiserver + r.kcm, 0);
  console.log(`${count} cluster(s): cold start ${cold.toFixed(2)} s, warm start ${warm.toFixed(2)} s, RSS ${total.toFixed(0)} MiB in all`);
  for (const r of rss)
    console.log(
      `  ${r.name}: etcd ${r.etcd.toFixed(0)} MiB, kube-apiserver ${r.apiserver.toFixed(0)} MiB, kube-controller-manager ${r.kcm.toFixed(0)} MiB`,
    );
}
