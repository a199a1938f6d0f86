// Starts the shared local control planes once per jest run; test files reach them through env.
import { up } from '../../hack/lib/cluster.ts';
import { TEST_CLUSTERS } from './env.ts';

export default async function globalSetup(): Promise<void> {
  const started = Date.now();
  const clusters = await up(Object.values(TEST_CLUSTERS), (line) => console.error(line));
  for (const c of clusters) process.env[`PROVIDER_ROOK_TEST_${c.name.replace(/-/g, '_').toUpperCase()}`] = c.kubeconfig;
  console.error(
    `\nlocal control planes ready in ${((Date.now() - started) / 1000).toFixed(1)} s: ${clusters.map((c) => c.name).join(', ')}`,
  );
}
