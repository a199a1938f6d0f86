// Random credentials from an alphabet every S3 server and shell accepts (no symbols to escape).
import { randomBytes } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export function randomKey(length: number): string {
  let out = '';
  // Rejection sampling keeps every character equally likely (248 = 4 x 62).
  while (out.length < length) for (const b of randomBytes(length * 2)) if (b < 248 && out.length < length) out += ALPHABET[b % 62];
  return out;
}
