// What both demos share: background processes remembered in .local/demo/pids (so `make demo-down`
// stops them), a client per local cluster, and a Provider Secret built from a kubeconfig.
import type { ObjectKey } from '../../src/kit/kube/object-key.ts';
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { KubeClient, type KubeObjectLike } from '../../src/kit/kube/client.ts';
import { kubeconfigFileAccess } from '../../src/kit/kube/config.ts';
import { Secrets } from '../../src/kit/kube/resources.ts';
import { freePort, repoRoot } from '../../test/kit/cluster.ts';
import { PROVIDER_NODE_FLAGS } from './node-flags.ts';

export const say = (line = ''): void => console.log(line);
export const file = (...p: string[]): string => path.join(repoRoot, ...p);
export const demoDir = file('.local', 'demo');
const pidFile = path.join(demoDir, 'pids');

/**
 * Stops the processes background() started, and waits until they are gone. Each leads a process
 * group of its own (spawned detached), so the group is signalled: what a process started goes with
 * it, such as the S3 servers (weed) of the operator stand-ins. SIGTERM first, SIGKILL after 10 s.
 */
export async function stopProcesses(): Promise<void> {
  if (!existsSync(pidFile)) return;
  const pids = readFileSync(pidFile, 'utf8').split(/\s+/).filter(Boolean).map(Number);
  const signal = (pid: number, sig: NodeJS.Signals | 0): boolean => {
    for (const id of [-pid, pid]) {
      try {
        process.kill(id, sig);
        return true;
      } catch {
        /* no such group, or gone */
      }
    }
    return false;
  };
  pids.forEach((pid) => signal(pid, 'SIGTERM'));
  for (const deadline = Date.now() + 10_000; Date.now() < deadline && pids.some((pid) => signal(pid, 0));)
    await new Promise((r) => setTimeout(r, 100));
  pids.forEach((pid) => signal(pid, 'SIGKILL'));
  rmSync(pidFile);
}

/** Starts `node args...` detached, its output in .local/demo/<name>.log. */
export function background(name: string, args: string[]): number {
  mkdirSync(demoDir, { recursive: true });
  const log = openSync(path.join(demoDir, `${name}.log`), 'a');
  const child = spawn(process.execPath, args, { cwd: repoRoot, detached: true, stdio: ['ignore', log, log] });
  closeSync(log);
  child.unref();
  writeFileSync(pidFile, `${existsSync(pidFile) ? readFileSync(pidFile, 'utf8') : ''}${child.pid}\n`);
  return child.pid!;
}

/** Builds provider-rook and starts it against the control cluster as the image runs it, polling every 10 s; says where its log is. */
export async function startProvider(controlKubeconfig: string): Promise<{ pid: number; metrics: string }> {
  execFileSync(process.execPath, [file('node_modules', 'typescript', 'bin', 'tsc'), '-p', file('tsconfig.build.json')], {
    stdio: 'inherit',
  });
  const metrics = `127.0.0.1:${await freePort()}`;
  const args = ['--kubeconfig', controlKubeconfig, '--metrics-addr', metrics, '--poll', '10s'];
  const pid = background('provider-rook', [...PROVIDER_NODE_FLAGS, file('dist', 'main.js'), ...args]);
  say(`     provider-rook pid ${pid}, log .local/demo/provider-rook.log`);
  return { pid, metrics };
}

export const clientOf = (kubeconfig: string): KubeClient =>
  new KubeClient(kubeconfigFileAccess(kubeconfig), { fieldManager: 'provider-rook-demo' });

/** A Provider's Secret with one `kubeconfig` key, as a platform team makes it with kubectl. */
export async function providerSecret(control: KubeClient, { namespace, name }: Required<ObjectKey>, kubeconfig: string): Promise<void> {
  await control.apply(Secrets, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    type: 'Opaque',
    data: { kubeconfig: readFileSync(kubeconfig).toString('base64') },
  } as KubeObjectLike);
}

/** Every cluster either demo makes; `make demo-down` removes them all. */
export const DEMO_CLUSTERS = ['control', 'target', 'target-b', 'apps', 'placement', 'eu-1', 'eu-2', 'us-1'];
