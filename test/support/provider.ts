// Helpers for tests that run provider-rook in-process against the local control planes.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import * as yaml from 'js-yaml';
import type { KubeConfig } from '@kubernetes/client-node';
import type { LocalCluster } from '../../hack/lib/cluster.ts';
import { repoRoot } from '../../hack/lib/cluster.ts';
import { installCrds } from '../../hack/lib/manifests.ts';
import { startApp, type App, type AppOptions } from '../../src/app.ts';
import type { KubeClient, KubeObjectLike } from '../../src/runtime/kube/client.ts';
import { isAlreadyExists } from '../../src/runtime/kube/errors.ts';
import {
  ClusterRoleBindings, ClusterRoles, Deployments, Events, Namespaces, Secrets, ServiceAccounts, type ResourceType,
} from '../../src/runtime/kube/resources.ts';

const TYPES: Record<string, ResourceType> = { Namespace: Namespaces, ClusterRole: ClusterRoles, ClusterRoleBinding: ClusterRoleBindings, ServiceAccount: ServiceAccounts, Deployment: Deployments };
import { silentLogger, pinoLogger } from '../../src/runtime/logger.ts';
import { kubeConfigOf, uniqueName } from './env.ts';

export { installCrds };

export const ourCrds = (): string[] => readdirSync(path.join(repoRoot, 'crds')).map((f) => path.join(repoRoot, 'crds', f));
export const operatorCrd = (): string => path.join(repoRoot, 'config', 'operator', 'crd.yaml');

/** Installs the operator bundle as a cluster admin would (no provider-rook marks): "pre-installed". */
export async function preinstallOperator(client: KubeClient): Promise<void> {
  const dir = path.join(repoRoot, 'config', 'operator');
  await installCrds(client, [operatorCrd()]);
  const docs = readdirSync(dir).filter((f) => f.endsWith('.yaml')).flatMap((f) => yaml.loadAll(readFileSync(path.join(dir, f), 'utf8')) as KubeObjectLike[])
    .filter((d) => d && d.kind !== 'CustomResourceDefinition')
    .sort((a, b) => Number(b.kind === 'Namespace') - Number(a.kind === 'Namespace'));
  for (const d of docs) await client.apply(TYPES[d.kind!]!, d);
}

export async function createNamespace(client: KubeClient, prefix: string): Promise<string> {
  const name = uniqueName(prefix);
  await client.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }).catch((e) => { if (!isAlreadyExists(e)) throw e; });
  return name;
}

/** The Provider Secret's keys for a local cluster, as a platform team would write them. */
export function providerSecretKeys(target: LocalCluster): Record<string, string> {
  const kc: KubeConfig = kubeConfigOf(target);
  const cluster = kc.getCurrentCluster()!;
  const user = kc.getCurrentUser()!;
  const text = (b64?: string): string => Buffer.from(b64 ?? '', 'base64').toString();
  return { endpoint: cluster.server, clusterCA: text(cluster.caData), clientCert: text(user.certData), clientKey: text(user.keyData) };
}

export async function writeSecret(client: KubeClient, namespace: string, name: string, keys: Record<string, string>): Promise<void> {
  const data = Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
  await client.apply(Secrets, { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, type: 'Opaque', data });
}

export async function startTestApp(control: LocalCluster, opts: Partial<AppOptions> = {}): Promise<App> {
  return startApp({
    control: kubeConfigOf(control),
    log: process.env.TEST_LOG ? pinoLogger('debug') : silentLogger,
    controlPlaneId: uniqueName('cp'),
    pollIntervalMs: 2_000,
    pollJitterMs: 0,
    leakIntervalMs: 3_600_000,
    ...opts,
  });
}

export interface EventView {
  reason: string;
  message: string;
  type: string;
  involvedObject: { name: string };
}

export async function eventsFor(client: KubeClient, namespace: string, name: string): Promise<EventView[]> {
  const { items } = await client.list<KubeObjectLike & EventView>(Events, { namespace });
  return items.filter((e) => e.involvedObject.name === name);
}
