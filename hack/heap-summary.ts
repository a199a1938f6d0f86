// node hack/heap-summary.ts FILE.heapsnapshot [TOP]: where a V8 heap snapshot's bytes are, by
// constructor (objects) or type (strings, code, arrays), self sizes summed. For `make bench` profiles.
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}
const [file, top = '30'] = process.argv.slice(2);
if (!file) throw new Error('usage: heap-summary FILE.heapsnapshot [TOP]');
const snap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
const fields = snap.snapshot.meta.node_fields;
const types = snap.snapshot.meta.node_types[0];
const [TYPE, NAME, SIZE] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [number, number, number];
const groups = new Map<string, { count: number; bytes: number }>();
let total = 0;
for (let i = 0; i < snap.nodes.length; i += fields.length) {
  const type = types[snap.nodes[i + TYPE]!]!;
  const bytes = snap.nodes[i + SIZE]!;
  const key = type === 'object' || type === 'closure' ? `${type} ${snap.strings[snap.nodes[i + NAME]!]}` : type;
  const g = groups.get(key) ?? { count: 0, bytes: 0 };
  g.count++;
  g.bytes += bytes;
  groups.set(key, g);
  total += bytes;
}
console.log(`total ${(total / 1048576).toFixed(1)} MiB in ${snap.nodes.length / fields.length} nodes`);
for (const [key, g] of [...groups].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, Number(top))) {
  console.log(`${(g.bytes / 1048576).toFixed(2).padStart(8)} MiB ${String(g.count).padStart(8)}  ${key}`);
}
