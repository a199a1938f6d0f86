// Every YAML example a user may copy is admitted as written: each ```yaml block of README.md and
// docs/, and the Crossplane example in config/crossplane/, parses, and each object applies
// server-side in a dry run to a control plane with provider-rook's CRDs. Namespaces the examples
// name are mapped to namespaces of this test. Crossplane is not installed here (its Go module is not
// served), so its two kinds get open stand-in CRDs; what they describe is still checked: the XRD's
// schema becomes the CRD of its composite (as Crossplane does), the example composite is admitted
// by it, and what the Composition makes of that composite (its patches and transforms applied as
// function-patch-and-transform applies them) is admitted by provider-rook's CRDs.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import * as yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { KubeClient } from '../../src/kit/kube/client.ts';
import { CustomResourceDefinitions, Namespaces, typeOfManifest } from '../../src/kit/kube/resources.ts';
import { repoRoot } from '../kit/cluster.ts';
import { installCrds, loadManifests, typeFor, type Manifest } from '../kit/manifests.ts';
import { adminClient, testCluster } from '../kit/env.ts';
import { createNamespace, ourCrds } from '../kit/provider.ts';
import { eventually } from '../kit/eventually.ts';

/** A ```yaml block: where it is, and its text. */
interface Example {
  where: string;
  text: string;
}

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    return statSync(p).isDirectory() ? markdownFiles(p) : f.endsWith('.md') ? [p] : [];
  });
}

function examples(file: string): Example[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const out: Example[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*```yaml\s*$/.test(lines[i]!)) continue;
    const start = i + 1;
    const indent = /^\s*/.exec(lines[i]!)![0].length;
    let end = start;
    while (end < lines.length && !/^\s*```\s*$/.test(lines[end]!)) end++;
    // A snippet (--8<-- "path") is the file it names, from the repository's root, as the site shows it.
    const text = lines
      .slice(start, end)
      .map((l) => l.slice(indent))
      .map((l) => {
        const snippet = /^--8<-- "([^"]+)"$/.exec(l.trim());
        return snippet ? readFileSync(path.join(repoRoot, snippet[1]!), 'utf8') : l;
      })
      .join('\n');
    out.push({ where: `${path.relative(repoRoot, file)}:${start}`, text });
    i = end;
  }
  return out;
}

const documented = [path.join(repoRoot, 'README.md'), ...markdownFiles(path.join(repoRoot, 'docs'))].flatMap(examples);
const crossplaneDir = path.join(repoRoot, 'config', 'crossplane');
const crossplane = readdirSync(crossplaneDir)
  .filter((f) => f.endsWith('.yaml'))
  .sort()
  .flatMap((f) => loadManifests(path.join(crossplaneDir, f)));

let control: KubeClient;
const namespaces = new Map<string, string>();

/** An open CRD for a kind whose schema is not ours to check (Crossplane's own). */
const openCrd = (group: string, kind: string, plural: string, versions: string[]) => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `${plural}.${group}` },
  spec: {
    group,
    scope: 'Cluster',
    names: { kind, plural, listKind: `${kind}List`, singular: kind.toLowerCase() },
    versions: versions.map((name, i) => ({
      name,
      served: true,
      storage: i === 0,
      schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
    })),
  },
});

type Xrd = Manifest & {
  spec: {
    group: string;
    scope?: string;
    names: { kind: string; plural: string };
    versions: { name: string; served: boolean; schema: { openAPIV3Schema: object } }[];
  };
};

/** The CRD Crossplane makes of an XRD: its group, names, scope and versions' schemas. */
const crdOfXrd = (xrd: Xrd) => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `${xrd.spec.names.plural}.${xrd.spec.group}` },
  spec: {
    group: xrd.spec.group,
    scope: xrd.spec.scope ?? 'Namespaced',
    names: { ...xrd.spec.names, listKind: `${xrd.spec.names.kind}List`, singular: xrd.spec.names.kind.toLowerCase() },
    versions: xrd.spec.versions.map((v, i) => ({ name: v.name, served: v.served, storage: i === 0, schema: v.schema })),
  },
});

/** A namespace of this test for one an example names. */
async function namespaceFor(name: string): Promise<string> {
  if (!namespaces.has(name)) namespaces.set(name, await createNamespace(control, 'docs'));
  return namespaces.get(name)!;
}

/** A server-side dry run of the object, in a namespace of this test; the server's answer if it refuses. */
async function admitted(doc: Manifest): Promise<string> {
  const type = typeOfManifest(
    doc,
    [typeFor(doc)].filter((t) => t.apiVersion === doc.apiVersion && t.kind === doc.kind),
  );
  const metadata = doc.metadata.namespace ? { ...doc.metadata, namespace: await namespaceFor(doc.metadata.namespace) } : doc.metadata;
  return control.apply(type, { ...doc, metadata }, undefined, { dryRun: true }).then(
    () => 'admitted',
    (err: Error) => err.message,
  );
}

const safeTypeFor = (doc: Manifest) => {
  try {
    return typeFor(doc);
  } catch {
    return undefined;
  }
};

beforeAll(async () => {
  control = adminClient(testCluster('control'));
  await installCrds(control, ourCrds());
  for (const crd of [
    openCrd('apiextensions.crossplane.io', 'CompositeResourceDefinition', 'compositeresourcedefinitions', ['v2', 'v1']),
    openCrd('apiextensions.crossplane.io', 'Composition', 'compositions', ['v1']),
    ...crossplane.filter((d) => d.kind === 'CompositeResourceDefinition').map((d) => crdOfXrd(d as Xrd)),
  ])
    await control.apply(CustomResourceDefinitions, crd as never);
  await eventually(
    async () => (await control.list(CustomResourceDefinitions)).items.some((c) => c.metadata.name === 'appbuckets.platform.example.org'),
    'the stand-in CRDs',
  );
}, 120_000);

afterAll(async () => {
  for (const ns of namespaces.values()) await control.delete(Namespaces, { name: ns }).catch(() => undefined);
});

describe('the YAML examples in README.md and docs/', () => {
  it('are there to check', () => {
    expect(documented.length).toBeGreaterThan(5);
  });

  it('each parse, and each object in them is admitted as written', async () => {
    const refused: string[] = [];
    for (const ex of documented) {
      let docs: Manifest[];
      try {
        docs = (yaml.loadAll(ex.text) as (Manifest | null)[]).filter((d): d is Manifest => Boolean(d));
      } catch (err) {
        refused.push(`${ex.where}: does not parse: ${(err as Error).message.split('\n')[0]}`);
        continue;
      }
      if (docs.length === 0) refused.push(`${ex.where}: holds no object`);
      for (const doc of docs) {
        if (!doc.apiVersion || !doc.kind || !doc.metadata?.name) {
          refused.push(`${ex.where}: an object without apiVersion, kind or metadata.name`);
          continue;
        }
        const answer = await admitted(doc);
        if (answer !== 'admitted') refused.push(`${ex.where}: ${doc.kind} ${doc.metadata.name}: ${answer}`);
      }
    }
    expect(refused).toEqual([]);
  }, 120_000);
});

/** What function-patch-and-transform makes of a base for a composite: its FromCompositeFieldPath patches applied. */
function composed(base: Manifest, patches: Patch[], xr: Manifest): Manifest {
  const out = structuredClone(base);
  const get = (o: unknown, p: string): unknown =>
    p.split('.').reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined), o);
  const set = (o: Record<string, unknown>, p: string, value: unknown): void => {
    const keys = p.split('.');
    let at = o;
    for (const k of keys.slice(0, -1)) at = (at[k] ??= {}) as Record<string, unknown>;
    at[keys.at(-1)!] = value;
  };
  for (const p of patches) {
    if (p.type !== 'FromCompositeFieldPath') throw new Error(`patch type ${p.type} is not played here`);
    let value = get(xr, p.fromFieldPath);
    if (value === undefined) continue;
    for (const t of p.transforms ?? []) {
      if (t.type === 'map') value = t.map![String(value)];
      else if (t.type === 'string' && t.string?.type === 'Format') value = t.string.fmt!.replace('%s', String(value));
      else throw new Error(`transform ${t.type} is not played here`);
    }
    if (value !== undefined) set(out as Record<string, unknown>, p.toFieldPath, value);
  }
  return out;
}

interface Patch {
  type: string;
  fromFieldPath: string;
  toFieldPath: string;
  transforms?: { type: string; map?: Record<string, unknown>; string?: { type: string; fmt?: string } }[];
}

describe('the Crossplane example (config/crossplane/)', () => {
  it('is admitted: the definition, the composition, and a composite as its definition describes it', async () => {
    for (const doc of crossplane) expect([doc.kind, await admitted(doc)]).toEqual([doc.kind, 'admitted']);
  });

  it("makes, for the example composite, a Bucket claim that provider-rook's CRDs admit, in the composite's namespace", async () => {
    const xr = crossplane.find((d) => d.kind === 'AppBucket')!;
    const composition = crossplane.find((d) => d.kind === 'Composition') as Manifest & {
      spec: { pipeline: { input?: { resources?: { name: string; base: Manifest; patches?: Patch[] }[] } }[] };
    };
    const resources = composition.spec.pipeline.flatMap((s) => s.input?.resources ?? []);
    expect(resources.map((r) => r.base.kind)).toEqual(['Bucket']);
    for (const r of resources) {
      const made = composed(r.base, r.patches ?? [], xr);
      const doc = { ...made, metadata: { name: `${xr.metadata.name}-${r.name}`, namespace: xr.metadata.namespace } } as Manifest;
      expect(safeTypeFor(doc)?.kind).toBe('Bucket');
      expect(made.spec).toMatchObject({
        writeConnectionSecretToRef: { name: 'appbucket-s3' },
        features: { quota: { size: '10Gi' }, versioning: 'Enabled' },
      });
      expect(await admitted(doc)).toBe('admitted');
    }
  });
});
