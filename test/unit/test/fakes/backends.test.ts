// The tests' view of the backends covers exactly src/backends/index.ts: each managed kind has an
// entry, each operator a stand-in, and nothing names a backend that is gone.
import { describe, expect, it } from '@jest/globals';
import { backends } from '../../../../src/backends/index.ts';
import { backendsUnderTest, operatorStandIns, operatorsUnderTest, ownStoreBackends } from '../../../fakes/backends.ts';

describe('test/fakes/backends.ts', () => {
  it('has an entry for each backend, and none for a backend that is not there', () => {
    expect(Object.keys(backendsUnderTest).sort()).toEqual(backends.map((b) => b.managed.kind).sort());
  });

  it('has a stand-in for each operator the backends act through, and none besides', () => {
    const operators = backends.flatMap((b) => (b.native.operator ? [b.native.operator.name] : []));
    expect(Object.keys(operatorStandIns).sort()).toEqual([...new Set(operators)].sort());
    expect([...operatorsUnderTest].sort()).toEqual(Object.keys(operatorStandIns).sort());
  });

  it("derives the backends that make a claim's own store, with the kinds the backend list gives them", () => {
    for (const b of ownStoreBackends) {
      const source = backends.find((x) => x.managed.kind === b.managed.kind)!;
      expect([b.name, b.class, b.target]).toEqual([source.native.operator!.name, source.class, source.native.target]);
    }
    expect(ownStoreBackends.map((b) => b.managed.kind)).toEqual(
      backends.filter((b) => !('inStore' in backendsUnderTest[b.managed.kind]!)).map((b) => b.managed.kind),
    );
  });
});
