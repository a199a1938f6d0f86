// Every kind provider-rook serves: each KindDefinition exported by a file of this folder (the
// Provider, the portable storage API, and each backend's managed kind and class), so a backend adds
// its API by adding its own file here. crds/ and src/apis/kinds.gen.ts are generated from this list
// (npm run gen); a unit test checks that every backend in src/backends/index.ts has its two kinds here.
// Build time only: the running process loads kinds.gen.ts, never zod.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { KindDefinition } from './crd.ts';

const isKind = (v: unknown): v is KindDefinition =>
  typeof v === 'object' && v !== null && ['group', 'version', 'kind', 'plural', 'schema'].every((k) => k in v);

const files = readdirSync(fileURLToPath(new URL('.', import.meta.url)))
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.gen.ts') && f !== 'index.ts')
  .sort();
// One after the other: jest's module linker does not take concurrent imports of one package.
const modules: Record<string, unknown>[] = [];
for (const f of files) modules.push(await import(`./${f}`));

/** Sorted by group, then kind: the generated files do not change with the order of files or exports. */
export const allKinds: KindDefinition[] = modules
  .flatMap((m) => Object.values(m).filter(isKind))
  .sort((a, b) => a.group.localeCompare(b.group) || a.kind.localeCompare(b.kind));
