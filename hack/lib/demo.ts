// What both demos share: background processes remembered in .local/demo/pids (so `make demo-down`
// stops them), a client per local cluster, and a Provider Secret built from a kubeconfig.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { KubeClient, type KubeObjectLike } from '../../src/runtime/kube/client.ts';
import { kubeconfigFileAccess } from '../../src/runtime/kube/config.ts';
import { Secrets } from '../../src/runtime/kube/resources.ts';
import { repoRoot } from './cluster.ts';

export const say = (line = ''): void => console.log(line);
export const file = (...p: string[]): string => path.join(repoRoot, ...p);
export const demoDir = file('.local', 'demo');
const pidFile = path.join(demoDir, 'pids');

export function stopProcesses(): void {
  if (!existsSync(pidFile)) return;
  for (const pid of readFileSync(pidFile, 'utf8').split(/\s+/).filter(Boolean).map(Number)) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      /* already gone */
    }
  }
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

export const clientOf = (kubeconfig: string): KubeClient =>
  new KubeClient(kubeconfigFileAccess(kubeconfig), { fieldManager: 'provider-rook-demo' });

/** A Provider's Secret with one `kubeconfig` key, as a platform team makes it with kubectl. */
export async function providerSecret(control: KubeClient, namespace: string, name: string, kubeconfig: string): Promise<void> {
  await control.apply(Secrets, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    type: 'Opaque',
    data: { kubeconfig: readFileSync(kubeconfig).toString('base64') },
  } as KubeObjectLike);
}

/** Every cluster either demo makes; `make demo-down` removes them all. */
export const DEMO_CLUSTERS = ['control', 'target', 'target-b', 'placement', 'eu-1', 'eu-2', 'us-1'];
