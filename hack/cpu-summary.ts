// A CPU profile (.cpuprofile, as V8 writes it) summed up: the functions and the files where the time
// went (self time), most first. node hack/cpu-summary.ts FILE [N]
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const [file, most = '25'] = process.argv.slice(2);
if (!file) {
  console.error('usage: node hack/cpu-summary.ts FILE.cpuprofile [N]');
  process.exit(1);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const total = [...self.values()].reduce((a, b) => a + b, 0);
const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
const fns = new Map<string, number>();
const files = new Map<string, number>();
for (const [id, us] of self) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  const where = url.replace(/^.*\/(node_modules\/[^/]+|dist|src)\//, '$1/') || '(native)';
  add(fns, `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`, us);
  add(files, where, us);
}
const show = (title: string, m: Map<string, number>) => {
  console.log(`${title} (self time, of ${(total / 1e6).toFixed(2)} s sampled)`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, Number(most)))
    console.log(`  ${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1e3).toFixed(0).padStart(6)} ms  ${k}`);
};
show('files', files);
show('functions', fns);
