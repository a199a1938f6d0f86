// The dependency points one way: the generic runtime knows no API kind, no backend and no test double.
import { fileURLToPath } from 'node:url';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from '@jest/globals';

const src = fileURLToPath(new URL('../../src', import.meta.url));
const files = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
// Every module a file names: imports (type-only too), re-exports (`export ... from`) and import().
const IMPORT = /^\s*(?:import|export)\s+(?:type\s+)?(?:[\w*{}\s,$]+?\s+from\s+)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm;
const specifiers = (file: string): string[] => [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((m) => (m[1] ?? m[2])!);
/** Files imported by relative path, resolved (packages left out). */
const imports = (file: string): string[] =>
  specifiers(file)
    .filter((s) => s.startsWith('.'))
    .map((s) => path.resolve(path.dirname(file), s));

/** Each import cycle among `sources` once, as "a.ts -> b.ts -> a.ts" (relative to src). */
function importCycles(sources: string[]): string[] {
  const known = new Set(sources);
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const found = new Set<string>();
  const visit = (file: string): void => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of imports(file).filter((i) => known.has(i))) {
      if (state.get(next) === 'open') {
        const cycle = stack.slice(stack.indexOf(next)).map((f) => path.relative(src, f));
        // The same circle entered elsewhere: name it from its smallest file.
        const start = cycle.indexOf([...cycle].sort()[0]!);
        const rotated = [...cycle.slice(start), ...cycle.slice(0, start)];
        found.add([...rotated, rotated[0]].join(' -> '));
      } else if (!state.has(next)) {
        visit(next);
      }
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of sources) if (!state.has(file)) visit(file);
  return [...found].sort();
}

describe('architecture', () => {
  it('src/runtime imports nothing from src/apis, the backends or e2e (only the kit)', () => {
    const runtime = path.join(src, 'runtime');
    const kit = path.join(src, 'kit');
    const outside = files(runtime).flatMap((f) =>
      imports(f)
        .filter((i) => i.startsWith(src) && !i.startsWith(runtime) && !i.startsWith(kit))
        .map((i) => `${path.relative(src, f)} -> ${path.relative(src, i)}`),
    );
    expect(outside).toEqual([]);
  });

  it('src/ has no import cycle (type-only imports count: a reader follows them too)', () => {
    expect(importCycles(files(src))).toEqual([]);
  });

  it('no backend imports src/backends/index.ts, the list that imports them (the Backend type is src/runtime/system/backend.ts)', () => {
    const list = path.join(src, 'backends', 'index.ts');
    const backends = ['rook-minio', 'minio-operator', 'rook-ceph'];
    const importing = backends.flatMap((b) =>
      files(path.join(src, 'backends', b))
        .filter((f) => imports(f).includes(list))
        .map((f) => path.relative(src, f)),
    );
    expect(importing).toEqual([]);
  });

  it('nothing in src/ imports from test/, e2e/ or hack/ (test doubles and tools never ship)', () => {
    const outside = ['test', 'e2e', 'hack'].map((d) => path.join(src, '..', d) + path.sep);
    const reaching = files(src).flatMap((f) =>
      imports(f)
        .filter((i) => outside.some((o) => i.startsWith(o)))
        .map((i) => `${path.relative(src, f)} -> ${path.relative(path.join(src, '..'), i)}`),
    );
    expect(reaching).toEqual([]);
  });

  it('no backend imports another backend', () => {
    const backends = ['rook-minio', 'minio-operator', 'rook-ceph'];
    const crossing = backends.flatMap((b) =>
      files(path.join(src, 'backends', b)).flatMap((f) =>
        imports(f)
          .filter((i) => backends.some((other) => other !== b && i.startsWith(path.join(src, 'backends', other))))
          .map((i) => `${path.relative(src, f)} -> ${path.relative(src, i)}`),
      ),
    );
    expect(crossing).toEqual([]);
  });

  it('the running process never loads zod: it defines our APIs at generation time only (src/apis/kinds.gen.ts names them at run time)', () => {
    // Follow value imports (not `import type`, which Node strips) from the entry point.
    const seen = new Set<string>();
    const bare = new Set<string>();
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const m of readFileSync(file, 'utf8').matchAll(/^import (?!type )[^'"]*['"]([^'"]+)['"]/gm)) {
        const spec = m[1]!;
        if (spec.startsWith('.')) visit(path.resolve(path.dirname(file), spec));
        else bare.add(spec);
      }
    };
    visit(path.join(src, 'main.ts'));
    expect([...bare].filter((s) => s === 'zod' || s.startsWith('zod/'))).toEqual([]);
    expect(
      [...seen].filter((f) => f.startsWith(path.join(src, 'apis')) && !f.endsWith('kinds.gen.ts')).map((f) => path.relative(src, f)),
    ).toEqual([]);
    expect(bare.has('pino')).toBe(true); // the walk does reach the packages
  });

  it("every backend's kinds are among the kinds CRDs are generated from", async () => {
    const { allKinds } = await import('../../src/apis/index.ts');
    const { resourceTypeOf } = await import('../../src/apis/crd.ts');
    const { backends } = await import('../../src/backends/index.ts');
    const defined = allKinds.map((k) => JSON.stringify(resourceTypeOf(k)));
    expect(backends.flatMap((b) => [b.managed, b.class]).filter((t) => !defined.includes(JSON.stringify(t)))).toEqual([]);
  });
});

describe('what the process loads', () => {
  it("loads none of the built-ins that only an ESM import's eager copy of node:http would pull in (undici, http2, web streams)", () => {
    // Every static import of the process, loaded under the image's Node with an unknown flag (it exits
    // at once); the preload reports the built-in modules it holds then. See src/kit/builtins.ts.
    const report =
      'data:text/javascript,process.on("exit",()=>process.stderr.write("\\nLOADED "+JSON.stringify(process.moduleLoadList)+"\\n"))';
    const run = spawnSync(process.execPath, ['--import', report, path.join(src, 'main.ts'), '--no-such-flag'], { encoding: 'utf8' });
    const loaded = JSON.parse(/^LOADED (.*)$/m.exec(run.stderr)?.[1] ?? 'null') as string[] | null;
    expect(loaded).not.toBeNull();
    expect(loaded!.filter((m) => /undici|http2|webstreams|fs\/promises/.test(m))).toEqual([]);
    // It did load the HTTP client and server it uses.
    expect(loaded).toEqual(expect.arrayContaining(['NativeModule _http_server', 'NativeModule _http_agent']));
  });
});
