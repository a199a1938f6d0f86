// A thin execa wrapper over the kind CLI (and the docker and kubectl calls the kind backend needs).
import { execa } from 'execa';

export async function missingTools(): Promise<string | undefined> {
  const checks: [string, string[], string][] = [
    ['docker', ['info', '--format', '{{.ServerVersion}}'], 'Docker with a running engine'],
    ['kind', ['version'], 'kind (https://kind.sigs.k8s.io)'],
    ['kubectl', ['version', '--client'], 'kubectl (for port-forward)'],
  ];
  for (const [cmd, args, what] of checks) {
    const res = await execa(cmd, args, { reject: false, timeout: 20_000 });
    if (res.failed)
      return `make e2e needs ${what}: \`${cmd} ${args.join(' ')}\` failed (${res.shortMessage}). Use make e2e-local on machines without Docker.`;
  }
  return undefined;
}

export const kind = {
  async create(name: string): Promise<void> {
    await execa('kind', ['create', 'cluster', '--name', name, '--wait', '180s'], { stdio: 'inherit' });
  },
  async delete(name: string): Promise<void> {
    await execa('kind', ['delete', 'cluster', '--name', name], { reject: false });
  },
  async exists(name: string): Promise<boolean> {
    const { stdout } = await execa('kind', ['get', 'clusters']);
    return stdout.split('\n').includes(name);
  },
  /** The kubeconfig for reaching the cluster from this machine. */
  async kubeconfig(name: string): Promise<string> {
    return (await execa('kind', ['get', 'kubeconfig', '--name', name])).stdout;
  },
  /** The kubeconfig other kind clusters use: the API server's address on the docker network. */
  async internalKubeconfig(name: string): Promise<string> {
    return (await execa('kind', ['get', 'kubeconfig', '--internal', '--name', name])).stdout;
  },
  async loadImage(image: string, name: string): Promise<void> {
    await execa('kind', ['load', 'docker-image', image, '--name', name], { stdio: 'inherit' });
  },
  /** The node container; stopping it takes the whole cluster down. */
  node: (name: string): string => `${name}-control-plane`,
};

export async function docker(...args: string[]): Promise<void> {
  await execa('docker', args, { stdio: 'inherit' });
}
