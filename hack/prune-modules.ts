// What production node_modules carry that nothing runs: tests and their data, examples, benchmarks,
// docs, TypeScript declarations and sources, source maps, and the packages' own tooling configs.
// Licences stay. Both image builds use it: make image (hack/lib/image.ts) and the Dockerfile
// (`node hack/prune-modules.ts node_modules`). Self-contained: the Dockerfile runs it on its own.
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const DIRECTORIES = new Set(['test', 'tests', '__tests__', 'example', 'examples', 'benchmark', 'benchmarks', 'bench', 'docs', '.github']);
const FILES = [
  /\.md$/i,
  /\.markdown$/i,
  /\.d\.[mc]?ts$/,
  /\.map$/,
  /(?<!\.d)\.[mc]?ts$/,
  /^\.(eslintrc|prettierrc|travis|editorconfig|npmignore|nycrc)/,
  /^tsconfig.*\.json$/,
];
const KEEP = /^(licen[cs]e|copying|notice)/i;

/** Removes those from a node_modules folder; returns how many paths went. */
export function pruneModules(dir: string): number {
  let removed = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (DIRECTORIES.has(entry.name)) {
        rmSync(full, { recursive: true, force: true });
        removed++;
      } else removed += pruneModules(full);
    } else if (!KEEP.test(entry.name) && FILES.some((f) => f.test(entry.name))) {
      rmSync(full, { force: true });
      removed++;
    }
  }
  return removed;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2] ?? 'node_modules';
  console.log(`pruned ${pruneModules(dir)} paths from ${dir}`);
}
