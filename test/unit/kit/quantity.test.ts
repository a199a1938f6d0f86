// Quantities in bytes (src/kit/quantity.ts): Kubernetes' binary and decimal suffixes, and nothing else.
import { describe, expect, it } from '@jest/globals';
import { quantityBytes } from '../../../src/kit/quantity.ts';

describe('quantityBytes', () => {
  it.each([
    ['1024', 1024],
    ['10Gi', 10 * 2 ** 30],
    ['2G', 2e9],
    ['500M', 5e8],
    ['1.5Ki', 1536],
    ['3Ti', 3 * 2 ** 40],
  ])('%s is %d bytes', (q, bytes) => expect(quantityBytes(q)).toBe(bytes));

  it.each(['', '-1Gi', '10 GB', '1Gb', 'Gi', '1e3'])('%j is not a size', (q) => expect(quantityBytes(q)).toBeUndefined());
});
