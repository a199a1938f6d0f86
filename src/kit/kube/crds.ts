// A CustomResourceDefinition as the runtime reads it: only whether its kind is served yet.
import type { KubeObjectLike } from './types.ts';
import { conditionIs } from '../conditions.ts';

export type CustomResourceDefinition = KubeObjectLike & { status?: { conditions?: { type: string; status: string }[] } };

/** Whether the API server serves the CRD's kind (its Established condition is True). */
export function established(
  crd: { readonly status?: { readonly conditions?: readonly { readonly type: string; readonly status: string }[] } } | undefined,
): boolean {
  return conditionIs(crd?.status?.conditions, 'Established');
}
