// One source of truth for our APIs: each kind is a zod schema (which also gives the TypeScript type)
// plus the CRD facts zod cannot say. hack/gen.ts renders crds/*.yaml from these.
import { z } from 'zod';
import type { ResourceType } from '../kit/kube/resources.ts';

export interface KindDefinition {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular?: string;
  shortNames?: string[];
  categories?: string[];
  scope: 'Namespaced' | 'Cluster';
  description: string;
  /** The object's spec/status (and any other top-level fields). metadata, apiVersion and kind are added. */
  schema: z.ZodObject;
  printerColumns?: { name: string; type: string; jsonPath: string; description?: string; priority?: number }[];
  statusSubresource?: boolean;
}

// zod's JSON Schema output is close to a structural schema; these are the differences.
function structural(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(structural);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    // zod's own keywords; a property of that name (a lifecycle rule's id) is kept.
    if (key === '$schema' || key === 'id') continue;
    out[key] =
      key === 'properties' && value && typeof value === 'object'
        ? Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, structural(schema)]))
        : structural(value);
  }
  // JS safe-integer bounds are noise, not API.
  if (out.maximum === Number.MAX_SAFE_INTEGER) delete out.maximum;
  if (out.minimum === Number.MIN_SAFE_INTEGER) delete out.minimum;
  // "additionalProperties: {}" (any value) or false is not allowed in a structural schema.
  if (
    out.additionalProperties === false ||
    (typeof out.additionalProperties === 'object' &&
      out.additionalProperties !== null &&
      Object.keys(out.additionalProperties).length === 0)
  ) {
    delete out.additionalProperties;
    if (out.properties === undefined && out['x-kubernetes-preserve-unknown-fields'] === undefined)
      out['x-kubernetes-preserve-unknown-fields'] = true;
  }
  return out;
}

export function openApiSchema(schema: z.ZodType): Record<string, unknown> {
  return structural(z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'input', unrepresentable: 'any' })) as Record<string, unknown>;
}

export function crdOf(def: KindDefinition): Record<string, unknown> {
  const body = openApiSchema(def.schema);
  const properties = {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    metadata: { type: 'object' },
    ...(body.properties as object),
  };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${def.plural}.${def.group}` },
    spec: {
      group: def.group,
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular ?? def.kind.toLowerCase(),
        ...(def.shortNames ? { shortNames: def.shortNames } : {}),
        ...(def.categories ? { categories: def.categories } : {}),
      },
      scope: def.scope,
      versions: [
        {
          name: def.version,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { ...body, description: def.description, properties } },
          ...(def.statusSubresource !== false ? { subresources: { status: {} } } : {}),
          ...(def.printerColumns ? { additionalPrinterColumns: def.printerColumns } : {}),
        },
      ],
    },
  };
}

/** How the runtime addresses objects of a kind. */
export function resourceTypeOf(def: KindDefinition): ResourceType {
  return { apiVersion: `${def.group}/${def.version}`, kind: def.kind, plural: def.plural, namespaced: def.scope === 'Namespaced' };
}
