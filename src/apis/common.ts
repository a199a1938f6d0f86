// Schema pieces shared by every kind: conditions, references, connection Secrets, policies.
import { z } from 'zod';
import type { Condition as RuntimeCondition } from '../runtime/conditions.ts';

export const condition = z.object({
  type: z.string().meta({ description: 'Type of condition, e.g. Ready or Synced.' }),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string().meta({ description: 'A CamelCase word saying why the condition has this status.' }),
  message: z.string().optional().meta({ description: 'Human-readable detail.' }),
  lastTransitionTime: z.string().meta({ description: 'When the status last changed (RFC 3339).' }),
  observedGeneration: z.int().optional().meta({ description: 'The metadata.generation this condition was computed from.' }),
});
// The runtime's Condition is the same shape; this fails to compile if the two drift apart.
export type Condition = z.infer<typeof condition> & RuntimeCondition;
const _sameShape: RuntimeCondition = {} as z.infer<typeof condition>;
void _sameShape;

export const conditions = z.array(condition).optional().meta({
  description: 'Observed conditions of this object.',
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
});

export const localRef = z.object({ name: z.string().min(1).meta({ description: 'Name of the referenced object.' }) });

export const providerRef = z.object({
  name: z.string().min(1).meta({ description: 'Name of the Provider (kubernetes.crossplane.io) that says which target cluster to use.' }),
  namespace: z.string().optional().meta({
    description: "Namespace of the Provider. Must equal this object's namespace when set: credentials are never read across namespaces.",
  }),
}).meta({ description: 'The Provider whose credentials reach the target cluster.' });

export const objectRef = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  name: z.string(),
  namespace: z.string().optional(),
  uid: z.string().optional(),
});

export const reclaimPolicy = z.enum(['Delete', 'Retain', 'Orphan']).meta({
  description: 'What happens to the target object when this resource (or its claim) goes away: Delete removes it, Retain and Orphan (a synonym) keep it.',
});

export const writeConnectionSecretToRef = z.object({
  name: z.string().min(1).meta({ description: 'Name of the Secret, in this object\'s namespace, that receives endpoint, username and password.' }),
}).meta({ description: 'Where to write the connection Secret.' });

export const bindingPhase = z.enum(['Unbindable', 'Unbound', 'Bound', 'Released']).optional().meta({
  description: 'Where this resource is in its claim binding lifecycle.',
});

export const readyColumns = [
  { name: 'READY', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].status" },
  { name: 'SYNCED', type: 'string', jsonPath: ".status.conditions[?(@.type=='Synced')].status" },
];
export const ageColumn = { name: 'AGE', type: 'date', jsonPath: '.metadata.creationTimestamp' };

export type { KubeObject, ObjectMeta } from '../runtime/meta.ts';
