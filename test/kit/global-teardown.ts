import { down } from './cluster.ts';
import { TEST_CLUSTERS } from './env.ts';

export default async function globalTeardown(): Promise<void> {
  if (process.env.KEEP_CLUSTERS) return;
  await down(Object.values(TEST_CLUSTERS));
}
