// The key that signs ownership marks lives in one Secret of the control cluster, beside
// provider-rook: made on first start (32 random bytes), read on every start after. Nobody in a
// target can read it, so nobody there can sign. Back it up with the control cluster: restored
// managed resources then prove their objects again (see docs/operations/ownership.md).
import { createHmac, randomBytes } from 'node:crypto';
import type { Client, KubeObjectLike } from '../../kit/kube/client.ts';
import { isAlreadyExists } from '../../kit/kube/errors.ts';
import { Secrets } from '../../kit/kube/resources.ts';

/** The key that signs ownership marks: it never leaves the control cluster. */
export class OwnershipKey {
  readonly #secret: Buffer;

  constructor(secret: Buffer) {
    if (secret.length < 32) throw new Error('the ownership key must be at least 32 bytes');
    this.#secret = secret;
  }

  sign(payload: string): Buffer {
    return createHmac('sha256', this.#secret).update(payload).digest();
  }

  /**
   * A credential derived for `purpose` (e.g. a bucket user's secret key): the same on every run, so
   * a crash or a lost Secret never leaves an app with keys nobody holds, and unknowable without the
   * key. Signatures and credentials are kept apart by their own prefix.
   */
  derive(purpose: string, length: number): string {
    let out = '';
    for (let block = 0; out.length < length; block++) {
      const bytes = createHmac('sha256', this.#secret).update(`provider-rook/credential/v1\0${purpose}\0${block}`).digest();
      out += alphanumeric(bytes);
    }
    return out.slice(0, length);
  }
}

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Bytes as letters and digits, each equally likely (bytes of 248 and above are dropped: 248 = 4 x 62). */
function alphanumeric(bytes: Buffer): string {
  let out = '';
  for (const b of bytes) if (b < 248) out += ALPHANUMERIC[b % 62];
  return out;
}

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
