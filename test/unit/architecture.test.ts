// The dependency points one way: the kit (the controller-runtime part) knows nothing of provider-rook,
// the generic runtime knows no API kind, no backend and no test double, and a backend knows no other.
import { fileURLToPath } from 'node:url';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
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

const inside = (dir: string) => (file: string) => file.startsWith(dir + path.sep);
const KIT = path.join(src, 'kit');
const RUNTIME = path.join(src, 'runtime');
const BACKENDS = path.join(src, 'backends');
const SHARED = path.join(BACKENDS, 'shared');
/** The backends: one folder each under src/backends/, besides shared/ (what several of them use). */
const backendFolders = (): string[] =>
  readdirSync(BACKENDS, { withFileTypes: true })
    .filter((e) => e.isDirectory() && e.name !== 'shared')
    .map((e) => path.join(BACKENDS, e.name));
/** The imports of the files under `dir` that `allowed` refuses, as "from -> to" (relative to src). */
const reaching = (dir: string, allowed: (file: string, target: string) => boolean): string[] =>
  files(dir).flatMap((f) =>
    imports(f)
      .filter((i) => !allowed(f, i))
      .map((i) => `${path.relative(src, f)} -> ${path.relative(src, i)}`),
  );

/**
 * Each import cycle between folders once. Two files are compared in the folder that holds both: each
 * stands for the subfolder it is in there, or for that folder's own files. So kit/kube may import
 * kit/'s own files only if none of those imports kit/kube.
 */
function folderCycles(sources: string[]): string[] {
  const edges = new Map<string, Set<string>>();
  for (const f of sources)
    for (const t of imports(f).filter((i) => i.startsWith(src + path.sep))) {
      const a = path.relative(src, f).split(path.sep);
      const b = path.relative(src, t).split(path.sep);
      let i = 0;
      while (i < a.length - 1 && i < b.length - 1 && a[i] === b[i]) i++;
      const parent = ['src', ...a.slice(0, i)].join('/');
      const from = `${parent}/${i < a.length - 1 ? a[i] : '(own files)'}`;
      const to = `${parent}/${i < b.length - 1 ? b[i] : '(own files)'}`;
      if (from !== to) edges.set(from, (edges.get(from) ?? new Set()).add(to));
    }
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const found = new Set<string>();
  const visit = (node: string): void => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of edges.get(node) ?? []) {
      if (state.get(next) === 'open') found.add([...stack.slice(stack.indexOf(next)), next].join(' -> '));
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of [...edges.keys()].sort()) if (!state.has(node)) visit(node);
  return [...found].sort();
}

describe('architecture', () => {
  it('src/kit (the controller-runtime part) imports nothing of the runtime, the backends or the APIs', () => {
    expect(reaching(KIT, (_, i) => !i.startsWith(src + path.sep) || inside(KIT)(i))).toEqual([]);
  });

  it("src/kit holds none of provider-rook's own labels or annotations (rook.crossplane.io), nor its name outside comments", () => {
    const own = files(KIT).flatMap((f) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .flatMap((line, i) =>
          /['"`]rook\.crossplane\.io\//.test(line) || (!/^\s*(\/\/|\*|\/\*)/.test(line) && /provider-rook/.test(line))
            ? [`${path.relative(src, f)}:${i + 1}`]
            : [],
        ),
    );
    expect(own).toEqual([]);
  });

  it('src/runtime imports nothing from src/apis, the backends or e2e (only the kit)', () => {
    expect(reaching(RUNTIME, (_, i) => !i.startsWith(src + path.sep) || inside(KIT)(i) || inside(RUNTIME)(i))).toEqual([]);
  });

  it('src/ has no import cycle (type-only imports count: a reader follows them too)', () => {
    expect(importCycles(files(src))).toEqual([]);
  });

  it('no import cycle between folders of src/ either', () => {
    expect(folderCycles(files(src))).toEqual([]);
  });

  it('every import of src/ names its module, so these rules see it: only src/kinds.ts, above every folder, imports by a computed path', () => {
    const computed = /\bimport\(\s*[^'"\s)]/;
    const found = files(src)
      .filter((f) => f !== path.join(src, 'kinds.ts'))
      .flatMap((f) =>
        readFileSync(f, 'utf8')
          .split('\n')
          .flatMap((line, i) => (computed.test(line) && !/^\s*(?:\/\/|\*)/.test(line) ? [`${path.relative(src, f)}:${i + 1}`] : [])),
      );
    expect(found).toEqual([]);
  });

  it('a backend imports no other backend and not the list of them; backends/shared/ imports no backend', () => {
    const backends = backendFolders();
    expect(backends.length).toBeGreaterThanOrEqual(4);
    const list = path.join(BACKENDS, 'index.ts');
    for (const b of backends)
      expect(reaching(b, (_, i) => i !== list && !(inside(BACKENDS)(i) && !inside(b)(i) && !inside(SHARED)(i)))).toEqual([]);
    expect(reaching(SHARED, (_, i) => !backends.some((b) => inside(b)(i)) && i !== list)).toEqual([]);
  });

  it('every backend folder is plugged in, in src/backends/index.ts', () => {
    const list = imports(path.join(BACKENDS, 'index.ts'));
    expect(
      backendFolders()
        .filter((b) => !list.some(inside(b)))
        .map((b) => path.relative(src, b)),
    ).toEqual([]);
  });

  it('nothing in src/ imports from test/ or hack/ (test doubles, specs and tools never ship)', () => {
    const outside = ['test', 'hack'].map((d) => path.join(src, '..', d) + path.sep);
    const reaching = files(src).flatMap((f) =>
      imports(f)
        .filter((i) => outside.some((o) => i.startsWith(o)))
        .map((i) => `${path.relative(src, f)} -> ${path.relative(path.join(src, '..'), i)}`),
    );
    expect(reaching).toEqual([]);
  });

  it('the test kit and the fakes (test/kit, test/fakes) import nothing of hack/: hack/ imports them', () => {
    const hack = path.join(src, '..', 'hack') + path.sep;
    const kit = ['kit', 'fakes'].map((d) => path.join(src, '..', 'test', d));
    expect(kit.flatMap((d) => reaching(d, (_, i) => !i.startsWith(hack)))).toEqual([]);
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
      [...seen]
        .filter((f) => (f.startsWith(path.join(src, 'apis')) && !f.endsWith('kinds.gen.ts')) || /\/api\.ts$/.test(f))
        .map((f) => path.relative(src, f)),
    ).toEqual([]);
    expect(bare.has('pino')).toBe(true); // the walk does reach the packages
  });

  it("every backend's kinds are among the kinds CRDs are generated from", async () => {
    const { allKinds } = await import('../../src/kinds.ts');
    const { resourceTypeOf } = await import('../../src/apis/crd.ts');
    const { backends } = await import('../../src/backends/index.ts');
    const defined = allKinds.map((k) => JSON.stringify(resourceTypeOf(k)));
    expect(backends.flatMap((b) => [b.managed, b.class]).filter((t) => !defined.includes(JSON.stringify(t)))).toEqual([]);
  });

  it('every unit test is named after what it tests: test/unit/P.test.ts (or P.aspect.test.ts) beside src/P.ts or the folder src/P/; hack/ and test/ mirrored alike', () => {
    const root = path.join(src, '..');
    const unit = path.join(root, 'test', 'unit');
    const tested = (rel: string): boolean => {
      const base = rel.startsWith('hack/') || rel.startsWith('test/') ? root : src;
      // The whole name, or without its aspect (apply.create: apply.ts, when creating).
      return [rel, rel.replace(/\.[^./]+$/, '')].some((p) => {
        const at = path.join(base, p);
        return existsSync(`${at}.ts`) || (existsSync(at) && statSync(at).isDirectory());
      });
    };
    const unnamed = files(unit)
      .filter((f) => f.endsWith('.test.ts') && f !== path.join(unit, 'architecture.test.ts'))
      .map((f) => path.relative(unit, f).replace(/\.test\.ts$/, ''))
      .filter((rel) => !tested(rel));
    expect(unnamed).toEqual([]);
  });

  it('a condition is found by getCondition (kit/conditions.ts; cond in test/kit for tests, specs and tools), not by a search of its own', () => {
    // Over the whole text (a search written over two lines is still one), whatever the list is
    // called: a search by a type in quotes (an Event's excepted) or by another condition's type.
    const byHand = /\.(?:find|some|filter)\(\s*\(?(\w+)\)?\s*=>\s*\(?\1\.type === (?:'(?!Warning'|Normal')\w+'|\w+\.type\b)/g;
    const trees = [src, ...['test', 'hack'].map((d) => path.join(src, '..', d))];
    const found = trees
      .flatMap(files)
      .filter((f) => f !== path.join(src, 'kit', 'conditions.ts'))
      .flatMap((f) => {
        const text = readFileSync(f, 'utf8');
        return [...text.matchAll(byHand)].map((m) => `${path.relative(src, f)}:${text.slice(0, m.index).split('\n').length}`);
      });
    expect(found).toEqual([]);
  });

  it('app.ts names no backend: it wires the list, src/backends/index.ts, and the portable API', async () => {
    const app = path.join(src, 'app.ts');
    const list = path.join(BACKENDS, 'index.ts');
    expect(imports(app).filter((i) => inside(BACKENDS)(i) && i !== list)).toEqual([]);
    const { backends } = await import('../../src/backends/index.ts');
    const text = readFileSync(app, 'utf8');
    const named = backends.flatMap((b) => [b.managed.kind, b.class.kind]).filter((k) => new RegExp(`\\b${k}\\b`).test(text));
    expect(named).toEqual([]);
  });

  it('an object is named by an ObjectKey ({ namespace, name }): no function of src/, the tests or the tools takes its name and namespace as two strings, in an order of its own', () => {
    const pair = /\b(?:namespace\??: string(?: \| undefined)?,\s*name: string|name: string,\s*namespace\??: string)/;
    const root = path.join(src, '..');
    const trees = [src, ...['test', 'hack'].map((d) => path.join(root, d))];
    const found = trees.flatMap(files).flatMap((f) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .flatMap((line, i) => (pair.test(line) ? [`${path.relative(root, f)}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(found).toEqual([]);
  });

  it('kit/kube throws its typed errors (kit/kube/errors.ts), which the runtime maps to reasons: never a bare Error', () => {
    const kube = path.join(src, 'kit', 'kube');
    const bare = /(?:throw|reject\()\s*new Error\(/;
    const found = files(kube).flatMap((f) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .flatMap((line, i) => (bare.test(line) ? [`${path.relative(src, f)}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(found).toEqual([]);
  });

  it("an object's key string is made by formatObjectKey (keyOf), not by a template of src/'s own", () => {
    // A namespace (namespace, ns, any case) and a name of any spelling: `${ns}/${x}`.
    const byHand = /`\$\{[^}]*(?:[Nn]amespace|\bns\b)[^}]*\}\/\$\{[^}]*\}`/;
    const found = files(src)
      .filter((f) => f !== path.join(src, 'kit', 'kube', 'object-key.ts'))
      .flatMap((f) =>
        readFileSync(f, 'utf8')
          .split('\n')
          .flatMap((line, i) => (byHand.test(line) ? [`${path.relative(src, f)}:${i + 1}: ${line.trim()}`] : [])),
      );
    expect(found).toEqual([]);
  });

  it('outside src/, the operators are played and installed from one list (test/fakes/backends.ts), derived from the backends: no file keeps a list of its own', async () => {
    const { operatorStandIns } = await import('../fakes/backends.ts');
    const registry = path.join(src, '..', 'test', 'fakes', 'backends.ts');
    // The stand-in classes, as the registry makes them.
    const standIns = [...new Set([...readFileSync(registry, 'utf8').matchAll(/=> new (\w+)\(/g)].map((m) => m[1]!))];
    const operators = Object.keys(operatorStandIns);
    const trees = ['test', 'hack'].map((d) => path.join(src, '..', d));
    const lists: string[] = [];
    for (const f of trees.flatMap(files).filter((f) => f !== registry && !f.startsWith(path.join(src, '..', 'test', 'unit')))) {
      const text = readFileSync(f, 'utf8');
      const made = standIns.filter((c) => text.includes(`new ${c}(`));
      if (made.length > 1) lists.push(`${path.relative(path.join(src, '..'), f)}: plays ${made.join(', ')} by hand`);
      for (const m of text.matchAll(/for \(const \w+ of \[([^\]]*)\]\) await installOperatorBundle/g)) {
        const named = operators.filter((o) => m[1]!.includes(`'${o}'`));
        if (named.length > 1) lists.push(`${path.relative(path.join(src, '..'), f)}: installs ${named.join(', ')} by hand`);
      }
    }
    expect(lists).toEqual([]);
  });

  it("a backend's API is in its own folder (an api.ts): src/apis/ defines only what backends share", async () => {
    const { backends } = await import('../../src/backends/index.ts');
    const served = new Set(backends.flatMap((b) => [b.managed.kind, b.class.kind]));
    const isKind = (v: unknown): v is { kind: string } =>
      typeof v === 'object' && v !== null && ['group', 'version', 'kind', 'plural', 'schema'].every((k) => k in v);
    const apis = path.join(src, 'apis');
    const misplaced: string[] = [];
    for (const f of readdirSync(apis).filter((n) => n.endsWith('.ts') && !n.endsWith('.gen.ts'))) {
      const defined = Object.values((await import(path.join(apis, f))) as Record<string, unknown>).filter(isKind);
      misplaced.push(...defined.filter((k) => served.has(k.kind)).map((k) => `apis/${f}: ${k.kind}`));
    }
    expect(misplaced).toEqual([]);
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

  it("touches no locale data: no localeCompare, toLocale* or Intl in src/ (ICU's collation alone is 3 MiB of an idle process); kit/order.ts sorts", () => {
    const uses = files(src).flatMap((f) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .map((line, i) => ({ line, at: `${path.relative(src, f)}:${i + 1}` }))
        .filter(({ line }) => !/^\s*(\/\/|\*)/.test(line) && /\.localeCompare\(|\.toLocale\w*\(|\bIntl\./.test(line))
        .map(({ at, line }) => `${at}: ${line.trim()}`),
    );
    expect(uses).toEqual([]);
  });

  it("loads only the parts of prom-client it uses: not its push gateway, summaries, or OpenTelemetry's API", () => {
    // Every static import of the process, as above; a resolve hook lists the packages' files it loaded.
    const report =
      'data:text/javascript,import{registerHooks}from"node:module";const seen=[];' +
      'registerHooks({resolve(s,c,n){const r=n(s,c);seen.push(r.url);return r}});' +
      'process.on("exit",()=>process.stderr.write("\\nRESOLVED "+JSON.stringify(seen)+"\\n"))';
    const run = spawnSync(process.execPath, ['--import', report, path.join(src, 'main.ts'), '--no-such-flag'], { encoding: 'utf8' });
    const resolved = JSON.parse(/^RESOLVED (.*)$/m.exec(run.stderr)?.[1] ?? 'null') as string[] | null;
    expect(resolved).not.toBeNull();
    // It did load prom-client's registry and metrics.
    expect(resolved!.some((u) => u.endsWith('prom-client/lib/registry.js'))).toBe(true);
    expect(resolved!.filter((u) => /@opentelemetry|prom-client\/(index|lib\/(pushgateway|summary|cluster))\.js/.test(u))).toEqual([]);
  });
});
