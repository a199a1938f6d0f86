// Orderings without locale data: code-unit order for names, numbers by value for versions.
import { describe, expect, it } from '@jest/globals';
import { byText, byVersion } from '../../../src/kit/order.ts';

describe('byText', () => {
  it('orders Kubernetes names as a locale-aware sort would, and ties only equal names', () => {
    const names = ['b', 'a-b', 'a.b', 'ab', 'a', 'a1', 'a-1', 'z9', 'z10'];
    expect([...names].sort(byText)).toEqual([...names].sort((a, b) => a.localeCompare(b)));
    expect(byText('same', 'same')).toBe(0);
  });
});

describe('byVersion', () => {
  it('orders versions by the value of their numbers, and a shorter one first when the rest is equal', () => {
    const versions = ['v7.1.10', 'v7.1.9', 'v7.0.1', 'v10.0.0', 'v7.1', 'v7.1.9-rc1', 'v7.1.1'];
    expect([...versions].sort(byVersion)).toEqual(['v7.0.1', 'v7.1', 'v7.1.1', 'v7.1.9', 'v7.1.9-rc1', 'v7.1.10', 'v10.0.0']);
    expect(byVersion('v1.02', 'v1.2')).not.toBe(0);
    expect(byVersion('v1.2', 'v1.2')).toBe(0);
  });
});
