// The generated CRDs (crds/*.yaml, from src/apis by `npm run gen`) explain themselves: every field
// of every served version has a description, so `kubectl explain` answers for each; and every kind
// can be listed by a short name of its own and through the category `rook` (`kubectl get rook`).
// A field added without a description, or a kind without a short name, fails here, naming it.
import { fileURLToPath } from 'node:url';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import * as yaml from 'js-yaml';
import { describe, expect, it } from '@jest/globals';

interface Schema {
  description?: string;
  properties?: Record<string, Schema>;
  items?: Schema | Schema[];
  additionalProperties?: Schema | boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
}
interface Crd {
  spec: {
    names: { kind: string; shortNames?: string[]; categories?: string[] };
    versions: { name: string; served: boolean; schema: { openAPIV3Schema: Schema } }[];
  };
}

const dir = fileURLToPath(new URL('../../../crds', import.meta.url));
const crds = readdirSync(dir)
  .filter((f) => f.endsWith('.yaml'))
  .sort()
  .map((file) => ({ file, crd: yaml.load(readFileSync(path.join(dir, file), 'utf8')) as Crd }));

/**
 * The path of each field (a property) under `node` without a description. Array items and map values
 * are walked through for the fields they hold; nothing under a node that keeps unknown fields is.
 */
function undescribed(node: Schema, at: string): string[] {
  if (node['x-kubernetes-preserve-unknown-fields'] === true) return [];
  const items = Array.isArray(node.items) ? node.items : node.items ? [node.items] : [];
  return [
    ...Object.entries(node.properties ?? {}).flatMap(([name, s]) => [
      ...(s.description?.trim() ? [] : [`${at}.${name}`]),
      ...undescribed(s, `${at}.${name}`),
    ]),
    ...items.flatMap((s) => undescribed(s, `${at}[]`)),
    ...(typeof node.additionalProperties === 'object' ? undescribed(node.additionalProperties, `${at}{}`) : []),
  ];
}

/** What `kubectl explain` would show no description for, in every served version of a CRD. */
function undescribedFields(crd: Crd): string[] {
  return crd.spec.versions
    .filter((v) => v.served)
    .flatMap((v) => {
      // The root is the kind (the CRD describes it); apiVersion, kind and metadata are Kubernetes' own.
      const own = Object.entries(v.schema.openAPIV3Schema.properties ?? {}).filter(
        ([name]) => !['apiVersion', 'kind', 'metadata'].includes(name),
      );
      return undescribed({ properties: Object.fromEntries(own) }, `${v.name}: `);
    });
}

describe('the generated CRDs', () => {
  it('are there', () => expect(crds.length).toBeGreaterThan(0));

  describe.each(crds)('$file', ({ crd }) => {
    it('describes every field of every served version', () => expect(undescribedFields(crd)).toEqual([]));
    it('has a short name', () => expect(crd.spec.names.shortNames?.length ?? 0).toBeGreaterThan(0));
    it('is in the category rook', () => expect(crd.spec.names.categories ?? []).toContain('rook'));
  });

  it('give each kind short names of its own', () => {
    const owners = new Map<string, string[]>();
    for (const { crd } of crds)
      for (const name of crd.spec.names.shortNames ?? []) owners.set(name, [...(owners.get(name) ?? []), crd.spec.names.kind]);
    const shared = [...owners].filter(([, kinds]) => kinds.length > 1).map(([name, kinds]) => `${name}: ${kinds.join(', ')}`);
    expect(shared).toEqual([]);
  });

  it('finds a field without a description, naming its path', () => {
    const schema: Schema = {
      properties: {
        spec: {
          description: 'described',
          properties: {
            list: { description: 'described', items: { properties: { name: {} } } },
            map: { description: 'described', additionalProperties: { properties: { value: {} } } },
            free: { description: 'described', 'x-kubernetes-preserve-unknown-fields': true, properties: { any: {} } },
          },
        },
        status: { description: '  ' },
      },
    };
    expect(undescribed(schema, 'v1: ')).toEqual(['v1: .spec.list[].name', 'v1: .spec.map{}.value', 'v1: .status']);
  });
});
