// An object's identity within one type: its namespace (none when cluster-scoped) and name. Work
// queues and caches key by its string form, "namespace/name" (or "name").

export interface ObjectKey {
  namespace?: string;
  name: string;
}

export function objectKeyOf(obj: { metadata: ObjectKey }): ObjectKey {
  const { namespace, name } = obj.metadata;
  return namespace ? { namespace, name } : { name };
}

/** "namespace/name", or "name" when cluster-scoped (the same string keyOf in result.ts makes); a string is one already. */
export function formatObjectKey(key: ObjectKey | string): string {
  if (typeof key === 'string') return key;
  return key.namespace ? `${key.namespace}/${key.name}` : key.name;
}

/** The inverse of formatObjectKey: a name holds no "/", so the first one ends the namespace. */
export function parseObjectKey(key: string): ObjectKey {
  const slash = key.indexOf('/');
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
