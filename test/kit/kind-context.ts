// A KindContext for unit tests: credentials derived the way provider-rook derives them, from a fixed test key.
import { kindContext } from '../../src/runtime/native/pass.ts';
import { OwnershipKey } from '../../src/runtime/ownership/key.ts';
import { OwnershipMarks } from '../../src/runtime/ownership/marks.ts';

export const testContext = kindContext(new OwnershipMarks('test-control-plane', new OwnershipKey(Buffer.alloc(32, 7))));
