// Starts the shared local control planes once per jest run; test files reach them through env. It
// also finds (or, on a fresh machine, builds) weed, the S3 server some tests start, so no test
// waits minutes for a build within its own timeout.
import { ensureWeed } from './binaries.ts';
import { up } from './cluster.ts';
import { TEST_CLUSTERS } from './env.ts';

export default async function globalSetup(): Promise<void> {
  const started = Date.now();
  const log = (line: string): void => console.error(line);
  const [clusters] = await Promise.all([up(Object.values(TEST_CLUSTERS), log), ensureWeed(log)]);
  for (const c of clusters) process.env[`PROVIDER_ROOK_TEST_${c.name.replace(/-/g, '_').toUpperCase()}`] = c.kubeconfig;
  console.error(
    `\nlocal control planes ready in ${((Date.now() - started) / 1000).toFixed(1)} s: ${clusters.map((c) => c.name).join(', ')}`,
  );
}
