// Where one Provider stands in an OperatorUpgrade's wave (stepOf): only its own controller's answer
// for the version says it is done, failed or held.
import { describe, expect, it } from '@jest/globals';
import { stepOf, unanswered } from '../../../../src/runtime/operators/waves.ts';
import type { OperatorStatus, ProviderObject } from '../../../../src/runtime/providers/provider.ts';

/** A Provider at generation 2 (its entry changed to v2), whose controller answered `answered` (2: the spec as it is now). */
const provider = (status?: OperatorStatus, answered = 2, ready = 'True'): ProviderObject =>
  ({
    apiVersion: 'kubernetes.crossplane.io/v1alpha2',
    kind: 'Provider',
    metadata: { name: 'p1', namespace: 'infra', generation: 2 },
    spec: { credentialsSecretRef: { name: 's' }, operators: [{ name: 'seaweedfs', version: 'v2' }] },
    status: {
      conditions: [{ type: 'Ready', status: ready, reason: ready === 'True' ? 'Reachable' : 'Unreachable', observedGeneration: answered }],
      ...(status ? { operators: [status] } : {}),
    },
  }) as unknown as ProviderObject;

describe('stepOf', () => {
  it('an operator installed but showing no version (its image pinned to a digest) is under way until its controller answers', () => {
    expect(stepOf(provider({ name: 'seaweedfs', present: true, installedBy: 'provider-rook' }), 'seaweedfs', 'v2')).toBe('upgrading');
  });

  it('one with no Deployment there has nothing to upgrade', () => {
    const missing = {
      name: 'seaweedfs',
      present: false,
      missing: ['Deployment seaweedfs-operator-system/seaweedfs-operator-controller-manager'],
    };
    expect(stepOf(provider(missing), 'seaweedfs', 'v2')).toBe('done');
  });

  it('is done, or stopped, by its controller’s answer for this version', () => {
    const at = (phase: string) => ({ name: 'seaweedfs', present: true, version: 'v1', upgrade: { to: 'v2', phase, message: 'm' } });
    expect(stepOf(provider(at('Complete') as OperatorStatus), 'seaweedfs', 'v2')).toBe('done');
    expect(stepOf(provider(at('Failed') as OperatorStatus), 'seaweedfs', 'v2')).toEqual({ stopped: 'Failed: m' });
    expect(stepOf(provider(at('Progressing') as OperatorStatus), 'seaweedfs', 'v2')).toBe('upgrading');
  });

  it('reads nothing of a status its controller wrote before the change, or while it cannot reach the target', () => {
    // A wave to v2 that went back to v1 before: its answer for v2 is still there.
    const earlier = { name: 'seaweedfs', present: true, version: 'v2', upgrade: { to: 'v2', phase: 'Complete' } } as OperatorStatus;
    expect(stepOf(provider(earlier, 1), 'seaweedfs', 'v2')).toBe('upgrading');
    expect(stepOf(provider(earlier, 2, 'False'), 'seaweedfs', 'v2')).toBe('upgrading');
    expect(unanswered(provider(earlier, 2, 'False'))).toEqual({ notReady: 'the Provider is not Ready (Unreachable)' });
    expect(stepOf(provider(earlier), 'seaweedfs', 'v2')).toBe('done');
    // Counted done by the wave before, unreachable since: it keeps its place, and takes no other Provider's turn.
    expect(stepOf(provider(earlier, 2, 'False'), 'seaweedfs', 'v2', true)).toBe('done');
    // But not one whose controller has not answered its spec as it is now (its version set again).
    expect(stepOf(provider(earlier, 1, 'False'), 'seaweedfs', 'v2', true)).toBe('upgrading');
  });
});
