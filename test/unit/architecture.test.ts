// The dependency points one way: the generic runtime knows no API kind, no backend and no test double.
import { fileURLToPath } from 'node:url';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { PROVIDER_NODE_FLAGS } from '../../hack/lib/node-flags.ts';

const src = fileURLToPath(new URL('../../src', import.meta.url));
const files = (dir: string): string[] => readdirSync(dir, { withFileTypes: true })
  .flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
const imports = (file: string): string[] => [...readFileSync(file, 'utf8').matchAll(/^import[^'"]*['"]([^'"]+)['"]/gm)].map((m) => path.resolve(path.dirname(file), m[1]!));

describe('architecture', () => {
  it('src/runtime imports nothing from src/apis, the backends or e2e', () => {
    const runtime = path.join(src, 'runtime');
    const outside = files(runtime).flatMap((f) => imports(f).filter((i) => i.startsWith(src) && !i.startsWith(runtime)).map((i) => `${path.relative(src, f)} -> ${path.relative(src, i)}`));
    expect(outside).toEqual([]);
  });

  it('no backend imports another backend', () => {
    const backends = ['rook-minio', 'minio-operator', 'rook-ceph'];
    const crossing = backends.flatMap((b) => files(path.join(src, b)).flatMap((f) => imports(f)
      .filter((i) => backends.some((other) => other !== b && i.startsWith(path.join(src, other))))
      .map((i) => `${path.relative(src, f)} -> ${path.relative(src, i)}`)));
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
    expect([...seen].filter((f) => f.startsWith(path.join(src, 'apis')) && !f.endsWith('kinds.gen.ts')).map((f) => path.relative(src, f))).toEqual([]);
    expect(bare.has('pino')).toBe(true); // the walk does reach the packages
  });

  it('every backend\'s kinds are among the kinds CRDs are generated from', async () => {
    const { allKinds } = await import('../../src/apis/index.ts');
    const { resourceTypeOf } = await import('../../src/apis/crd.ts');
    const { backends } = await import('../../src/backends.ts');
    const defined = allKinds.map((k) => JSON.stringify(resourceTypeOf(k)));
    expect(backends.flatMap((b) => [b.managed, b.class]).filter((t) => !defined.includes(JSON.stringify(t)))).toEqual([]);
  });

  it('the image runs Node with the flags the bench and demo measured (hack/lib/node-flags.ts)', () => {
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(readFileSync(path.join(src, '..', 'Dockerfile'), 'utf8'))?.[1];
    expect(JSON.parse(entrypoint ?? '[]')).toEqual(['/nodejs/bin/node', ...PROVIDER_NODE_FLAGS, 'dist/main.js']);
  });
});
