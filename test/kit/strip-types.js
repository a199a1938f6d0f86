// The jest transform: Node's own TypeScript type stripping (node:module stripTypeScriptTypes, the
// same that runs src/ and hack/ directly). Types become blanks, so lines and columns stay where they
// were and no source map is needed. It replaced @swc/jest, whose per-platform binaries kept
// package-lock.json from serving `npm ci` on every platform.
import { stripTypeScriptTypes } from 'node:module';

export default {
  process(source) {
    return { code: stripTypeScriptTypes(source, { mode: 'strip' }) };
  },
};
