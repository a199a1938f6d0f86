// A cache for unit tests: objects in a Map keyed by "namespace/name", read as an informer's cache is
// (by an ObjectKey or its string form).
import type { Cache, ReadonlyDeep } from '../../src/kit/controller/informer.ts';
import { formatObjectKey } from '../../src/kit/kube/object-key.ts';

export function mapCache<T>(objects: Map<string, T>): Cache<T> {
  return {
    get: (key) => objects.get(formatObjectKey(key)) as ReadonlyDeep<T> | undefined,
    list: () => [...objects.values()] as ReadonlyDeep<T>[],
  };
}
