// make image-run: runs the image `make image` built as the chart's Deployment runs it (user, read-only
// root, no capabilities, the chart's arguments), against local control planes "image-control" and
// "image-target", and shows it ready, a claim Bound, its metrics, and a clean stop on SIGTERM.
import { imageScenario } from './lib/image-scenario.ts';

const say = (line: string): void => console.log(`image-run: ${line}`);
try {
  const r = await imageScenario(['image-control', 'image-target'], say);
  if (r.stop.code !== 0 || r.stop.killed) throw new Error(`it did not exit cleanly on SIGTERM (${r.stop.code ?? r.stop.signal})`);
  say(`a kubeconfig that is not there: exit ${r.badKubeconfig.code}, "${r.badKubeconfig.output.trim()}"`);
  say(
    `image ${r.digest}: ready in ${(r.readyMs / 1000).toFixed(1)} s, claim Bound in ${(r.boundMs / 1000).toFixed(1)} s, stopped in ${(r.stop.ms / 1000).toFixed(1)} s`,
  );
} catch (err) {
  console.error(`make image-run: ${(err as Error).message}`);
  process.exit(1);
}
