// make e2e starts here: without Docker, kind or kubectl it stops at once and says what is missing.
import { missingTools } from './support/kind-cli.ts';

const missing = await missingTools();
if (missing) {
  console.error(missing);
  process.exit(1);
}
