// The circuit breaker of a target client: a server that does not answer is not asked again until it does.
import { describe, expect, it, jest } from '@jest/globals';
import { Breaker } from '../../../../src/kit/kube/breaker.ts';
import { KubeError, UnreachableError } from '../../../../src/kit/kube/errors.ts';

describe('Breaker', () => {
  it("after an unreachable failure, fails at once with that failure's message until the cool-down ends or the server answers", () => {
    const b = new Breaker('the target cluster', { coolDownMs: 60_000 });
    b.failed(b.enter(), new UnreachableError('cannot reach the target cluster (ECONNREFUSED)'));
    expect(() => b.enter()).toThrow('cannot reach the target cluster (ECONNREFUSED)');
    expect(() => b.enter(performance.now() + 61_000)).not.toThrow();
    b.answered();
    expect(() => b.enter()).not.toThrow();
  });

  it('closes when its cool-down has passed, whatever the wall clock did meanwhile (stepped back an hour)', async () => {
    const b = new Breaker('the target cluster', { coolDownMs: 10 });
    b.failed(b.enter(), new UnreachableError('cannot reach the target cluster (ECONNREFUSED)'));
    const wall = jest.spyOn(Date, 'now').mockReturnValue(Date.now() - 3_600_000);
    try {
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(() => b.enter()).not.toThrow();
    } finally {
      wall.mockRestore();
    }
  });

  it('gives a server that never answered a short time to start answering, from the first moment of the process', () => {
    const b = new Breaker('the target cluster', { patienceMs: 5_000 });
    expect(b.patience(1_000)).toBe(5_000); // a second into the process's life
    b.answered(b.enter(2_000));
    expect(b.patience(performance.now() + 1_000)).toBe(Infinity);
  });

  it('does not open for an HTTP error or a TLS failure (the server answered, or the CA is wrong)', () => {
    const b = new Breaker('x', { coolDownMs: 60_000 });
    b.failed(b.enter(), new KubeError(500, 'InternalError', 'boom'));
    b.failed(b.enter(), new UnreachableError('TLS handshake failed', true));
    expect(() => b.enter()).not.toThrow();
  });

  it('fails new requests at once while earlier ones wait and the server has answered nothing since', () => {
    const b = new Breaker('the target cluster', { stallMs: 5_000 });
    const start = performance.now() + 1_000;
    const waiting = b.enter(start);
    expect(() => b.enter(start + 4_000)).not.toThrow(); // not stalled yet
    expect(() => b.enter(start + 6_000)).toThrow('request to the target cluster timed out');
    b.answered(waiting);
    expect(() => b.enter(start + 7_000)).not.toThrow();
  });
});
