// A claim's bucket name: readable (its namespace and name), valid in S3 whatever those are, and
// unique across namespaces and across claims that reuse a name (a digest of the claim's uid).
import { createHash } from 'node:crypto';

export function bucketNameFor(claim: { metadata: { namespace?: string; name: string; uid?: string } }): string {
  const { namespace = '', name, uid = '' } = claim.metadata;
  const digest = createHash('sha256').update(`${namespace}/${name}/${uid}`).digest('hex').slice(0, 8);
  // Dots would break TLS for virtual-hosted requests (bucket.host): namespaces have none, names may.
  const readable = `${namespace}-${name}`
    .replace(/\./g, '-')
    .slice(0, 63 - digest.length - 1)
    .replace(/-+$/, '');
  return `${readable}-${digest}`;
}
