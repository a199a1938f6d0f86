// Every kind provider-rook serves: each KindDefinition exported by a file of src/apis/ (the
// Provider, the portable storage API) or by the api.ts of a backend's folder (its managed kind and
// class), so a backend brings its API in its own folder. crds/ and src/apis/kinds.gen.ts are
// generated from this list (npm run gen); the architecture test checks that every backend in
// src/backends/index.ts has its two kinds here, and that src/apis/ defines none of them.
// Build time only: the running process loads kinds.gen.ts, never zod. It sits above apis/ and
// backends/, as app.ts does, because it reads both: apis/ imports no backend.
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { KindDefinition } from './apis/crd.ts';
import { byText } from './kit/order.ts';

const isKind = (v: unknown): v is KindDefinition =>
  typeof v === 'object' && v !== null && ['group', 'version', 'kind', 'plural', 'schema'].every((k) => k in v);

const apisDir = new URL('./apis/', import.meta.url);
const backendsDir = new URL('./backends/', import.meta.url);
const files = [
  ...readdirSync(fileURLToPath(apisDir))
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.gen.ts'))
    .map((f) => `./apis/${f}`),
  ...readdirSync(fileURLToPath(backendsDir), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) =>
      readdirSync(fileURLToPath(new URL(`${d.name}/`, backendsDir)))
        .filter((f) => f === 'api.ts')
        .map((f) => `./backends/${d.name}/${f}`),
    ),
].sort();
// One after the other: jest's module linker does not take concurrent imports of one package.
const modules: Record<string, unknown>[] = [];
for (const f of files) modules.push(await import(f));

/** Sorted by group, then kind: the generated files do not change with the order of files or exports. */
export const allKinds: KindDefinition[] = modules
  .flatMap((m) => Object.values(m).filter(isKind))
  .sort((a, b) => byText(a.group, b.group) || byText(a.kind, b.kind));
