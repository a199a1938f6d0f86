// RFC 6902 JSON patch (test, add, remove, replace) for the fakes of our KubeClient, failing a test
// the way the API server does: 422 Invalid.
import { KubeError } from '../../src/kit/kube/errors.ts';

type Op = { op: 'test' | 'add' | 'remove' | 'replace'; path: string; value?: unknown };

export function applyJsonPatch<T>(doc: T, ops: unknown[]): T {
  const out = structuredClone(doc) as Record<string, unknown>;
  for (const raw of ops as Op[]) {
    const keys = raw.path
      .split('/')
      .slice(1)
      .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = keys.pop()!;
    let parent: unknown = out;
    for (const k of keys) parent = (parent as Record<string, unknown> | undefined)?.[k];
    const container = parent as Record<string, unknown> | unknown[] | undefined;
    const at = Array.isArray(container) ? (last === '-' ? container.length : Number(last)) : last;
    const current = container === undefined ? undefined : (container as Record<string | number, unknown>)[at];
    if (raw.op === 'test') {
      if (JSON.stringify(current ?? null) !== JSON.stringify(raw.value ?? null))
        throw new KubeError(422, 'Invalid', 'the server rejected our request due to an error in our request');
      continue;
    }
    if (container === undefined || (raw.op !== 'add' && current === undefined))
      throw new KubeError(422, 'Invalid', 'the server rejected our request due to an error in our request');
    if (Array.isArray(container)) {
      const i = at as number;
      if (raw.op === 'remove') container.splice(i, 1);
      else container.splice(i, raw.op === 'replace' ? 1 : 0, raw.value);
    } else if (raw.op === 'remove') delete (container as Record<string, unknown>)[at as string];
    else (container as Record<string, unknown>)[at as string] = raw.value;
  }
  return out as T;
}
