// crossplane-runtime's management policies (reference B3), as policyOf reads them.
import { describe, expect, it } from '@jest/globals';
import { SUPPORTED_POLICIES, policyOf, supportedPoliciesRule } from '../../../../src/runtime/managed/policies.ts';

describe('management policies', () => {
  it.each([
    [
      'unset: everything',
      undefined,
      { valid: true, paused: false, onlyObserve: false, create: true, update: true, delete: true, lateInitialize: true },
    ],
    ['["*"]', ['*'], { valid: true, paused: false, onlyObserve: false, create: true, update: true, delete: true, lateInitialize: true }],
    [
      '["Observe"]: read-only',
      ['Observe'],
      { valid: true, paused: false, onlyObserve: true, create: false, update: false, delete: false, lateInitialize: false },
    ],
    [
      '[]: paused',
      [],
      { valid: true, paused: true, onlyObserve: false, create: false, update: false, delete: false, lateInitialize: false },
    ],
    [
      'no Delete: orphans on deletion',
      ['LateInitialize', 'Update', 'Create', 'Observe'],
      { valid: true, paused: false, onlyObserve: false, create: true, update: true, delete: false, lateInitialize: true },
    ],
    ['Create without Observe: not supported', ['Create'], { valid: false }],
    ['Update and Delete without Observe: not supported', ['Update', 'Delete'], { valid: false }],
    ['Observe with Delete and Update but not Create: not supported', ['Observe', 'Update', 'Delete'], { valid: false }],
  ] as [string, string[] | undefined, Record<string, unknown>][])('%s', (_name, set, want) => {
    expect(policyOf({ managementPolicies: set })).toMatchObject(want);
  });

  it('the CRD rule names exactly the supported combinations', () => {
    const rule = supportedPoliciesRule();
    expect(rule.split(' || ')).toHaveLength(SUPPORTED_POLICIES.length);
    expect(rule).toContain("(size(self) == 1 && 'Observe' in self)");
    expect(rule).toContain('size(self) == 0');
  });
});
