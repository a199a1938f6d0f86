// An object's condition by type, for tests, e2e specs and tools: the kit's getCondition over
// status.conditions, so none of them searches the list in a way of its own.
import { getCondition } from '../../src/kit/conditions.ts';

export const cond = <C extends { type: string }>(o: { status?: { conditions?: readonly C[] } } | undefined, type: string): C | undefined =>
  getCondition(o?.status?.conditions, type);
