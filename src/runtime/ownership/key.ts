// The key that signs ownership marks lives in one Secret of the control cluster, beside
// provider-rook: made on first start (32 random bytes), read on every start after. Nobody in a
// target can read it, so nobody there can sign. Back it up with the control cluster: restored
// managed resources then prove their objects again (see docs/operations/ownership.md).
import { randomBytes } from 'node:crypto';
import type { Client, KubeObjectLike } from '../../kit/kube/client.ts';
import { isAlreadyExists } from '../../kit/kube/errors.ts';
import { Secrets } from '../../kit/kube/resources.ts';
import { OwnershipKey } from './marks.ts';

export const OWNERSHIP_KEY_FIELD = 'key';

export interface SecretRef {
  namespace: string;
  name: string;
}

type SecretObject = KubeObjectLike & { data?: Record<string, string> };

/** Reads the key from its Secret, making the Secret when there is none (two starting at once agree). */
export async function loadOwnershipKey(client: Client, ref: SecretRef, signal?: AbortSignal): Promise<OwnershipKey> {
  for (let attempt = 0; ; attempt++) {
    const secret = await client.get<SecretObject>(Secrets, { namespace: ref.namespace, name: ref.name }, signal);
    if (secret) return keyFrom(secret, ref);
    try {
      const made = await client.create<SecretObject>(
        Secrets,
        {
          apiVersion: 'v1',
          kind: 'Secret',
          type: 'Opaque',
          metadata: {
            name: ref.name,
            namespace: ref.namespace,
            labels: { 'app.kubernetes.io/name': 'provider-rook', 'app.kubernetes.io/component': 'ownership-key' },
          },
          data: { [OWNERSHIP_KEY_FIELD]: randomBytes(32).toString('base64') },
        } as SecretObject,
        signal,
      );
      return keyFrom(made, ref);
    } catch (err) {
      // Another replica made it first: read theirs.
      if (!isAlreadyExists(err) || attempt > 0) throw err;
    }
  }
}

function keyFrom(secret: SecretObject, ref: SecretRef): OwnershipKey {
  const raw = Buffer.from(secret.data?.[OWNERSHIP_KEY_FIELD] ?? '', 'base64');
  if (raw.length < 32) {
    throw new Error(
      `Secret ${ref.namespace}/${ref.name} must hold at least 32 bytes in key '${OWNERSHIP_KEY_FIELD}' (it signs ownership marks); ` +
        'delete it to have a new key made, which leaves objects signed with the old one unproven',
    );
  }
  return new OwnershipKey(raw);
}
