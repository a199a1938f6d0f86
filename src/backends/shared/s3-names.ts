// A claim's bucket name: readable (its namespace and name), valid in S3 whatever those are, and
// unique across namespaces and across claims that reuse a name (a digest of the claim's uid).
import { createHash } from 'node:crypto';

/** Starts S3 refuses for bucket names (IDN punycode, and names AWS keeps for itself). */
const RESERVED_START = /^(xn--|sthree-|amzn-s3-demo-)/;

export function bucketNameFor(claim: { metadata: { namespace?: string; name: string; uid?: string } }): string {
  const { namespace = '', name, uid = '' } = claim.metadata;
  const digest = createHash('sha256').update(`${namespace}/${name}/${uid}`).digest('hex').slice(0, 8);
  // Dots would break TLS for virtual-hosted requests (bucket.host): namespaces have none, names may.
  // A namespace may start as S3 forbids (xn--app): such a name starts with "b-". The digest at the end
  // keeps it clear of the ends S3 refuses (-s3alias, --ol-s3).
  const joined = `${namespace}-${name}`.replace(/\./g, '-');
  const readable = (RESERVED_START.test(joined) ? `b-${joined}` : joined).slice(0, 63 - digest.length - 1).replace(/-+$/, '');
  return `${readable}-${digest}`;
}
