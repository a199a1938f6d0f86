// An object read live for a decision that deletes or lets go of something because it is gone. A GET
// answers 404 both for an object that is not there and for a type the server does not serve (a CRD
// being replaced, a version no longer served, an API group not registered yet): only the first proves
// anything of the object. A list of a type the server does not serve fails instead; a list of one it
// serves, by the object's name, is the answer.
import { InvalidRequestError } from './errors.ts';
import type { ObjectKey } from './object-key.ts';
import type { ResourceType } from './resources.ts';
import type { Client, KubeObjectLike } from './types.ts';

/** An object name (RFC 1123 subdomain): what a field selector may be given without changing its meaning. */
const OBJECT_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** The object, or undefined only when the server serves its type and holds no object of that name. */
export async function readLive<T extends KubeObjectLike>(
  client: Pick<Client, 'list'>,
  type: ResourceType,
  { namespace, name }: ObjectKey,
  signal?: AbortSignal,
): Promise<T | undefined> {
  if (!OBJECT_NAME.test(name)) throw new InvalidRequestError(`'${name}' is not an object name`);
  const { items } = await client.list<T>(type, { namespace, fieldSelector: `metadata.name=${name}`, signal });
  return items.find((o) => o.metadata.name === name);
}
