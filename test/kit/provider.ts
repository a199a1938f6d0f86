// Helpers for tests that run provider-rook in-process against the local control planes.
import type { ObjectKey } from '../../src/kit/kube/object-key.ts';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import type { LocalCluster } from './cluster.ts';
import { repoRoot } from './cluster.ts';
import { installCrds, installOperatorBundle } from './manifests.ts';
import { startApp, type App, type AppOptions } from '../../src/app.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { isAlreadyExists } from '../../src/kit/kube/errors.ts';
import { Events, Namespaces, RoleBindings, Roles, Secrets, ServiceAccounts, resourcePath } from '../../src/kit/kube/resources.ts';
import { KubeClient as Client } from '../../src/kit/kube/client.ts';
import { applyManifests, loadManifests } from './manifests.ts';
import { silentLogger, pinoLogger } from '../../src/kit/logger.ts';
import { Providers } from '../../src/runtime/providers/provider.ts';
import { kubeConfigOf, uniqueName } from './env.ts';
import { eventually } from './eventually.ts';

export { installCrds };

/** The roles of config/rbac/ (provider-rook's own, the platform team's, the app team's), as a platform applies them. */
export async function installRoles(client: KubeClient): Promise<void> {
  const dir = path.join(repoRoot, 'config', 'rbac');
  for (const f of readdirSync(dir)) await applyManifests(client, loadManifests(path.join(dir, f)));
}

export const ourCrds = (): string[] => readdirSync(path.join(repoRoot, 'crds')).map((f) => path.join(repoRoot, 'crds', f));

/** The operator "pre-installed" by the target's admin. */
export const preinstallOperator = installOperatorBundle;

export async function createNamespace(client: KubeClient, prefix: string): Promise<string> {
  const name = uniqueName(prefix);
  await client.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }).catch((e) => {
    if (!isAlreadyExists(e)) throw e;
  });
  return name;
}

/** The Provider Secret's keys for a local cluster, as a platform team would write them. */
export function providerSecretKeys(target: LocalCluster): Record<string, string> {
  const access = kubeConfigOf(target);
  const text = (b64?: string): string => Buffer.from(b64 ?? '', 'base64').toString();
  return { endpoint: access.server, clusterCA: text(access.caData), clientCert: text(access.certData), clientKey: text(access.keyData) };
}

export async function writeSecret(
  client: KubeClient,
  { namespace, name }: Required<ObjectKey>,
  keys: Record<string, string>,
): Promise<void> {
  const data = Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
  await client.apply(Secrets, { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, type: 'Opaque', data });
}

/** A platform team's registration of a target: the Secret with its credentials, and a Provider naming it. */
export async function registerProvider(control: KubeClient, { namespace, name }: Required<ObjectKey>, target: LocalCluster): Promise<void> {
  await writeSecret(control, { namespace, name: `${name}-creds` }, providerSecretKeys(target));
  await control.apply(Providers, {
    apiVersion: Providers.apiVersion,
    kind: 'Provider',
    metadata: { name, namespace },
    spec: { credentialsSecretRef: { name: `${name}-creds` } },
  } as KubeObjectLike);
}

export async function startTestApp(control: LocalCluster, opts: Partial<AppOptions> = {}): Promise<App> {
  return startApp({
    control: kubeConfigOf(control),
    log: process.env.TEST_LOG ? pinoLogger('debug') : silentLogger,
    controlPlaneId: uniqueName('cp'),
    // The poll users run (10m): what a test waits for must come from a watch, never from a poll.
    pollJitterMs: 0,
    leakIntervalMs: 3_600_000,
    // Leaks are judged at once in tests; the grace period has its own test.
    leakGraceMs: 0,
    ...opts,
  });
}

export interface EventView {
  reason: string;
  message: string;
  type: string;
  involvedObject: { name: string };
}

export async function eventsFor(client: KubeClient, { namespace, name }: Required<ObjectKey>): Promise<EventView[]> {
  const { items } = await client.list<KubeObjectLike & EventView>(Events, { namespace });
  return items.filter((e) => e.involvedObject.name === name);
}

/**
 * A client acting as ServiceAccount `name` of `namespace`, with `role` (a config/rbac ClusterRole)
 * bound in that namespace and `clusterWideRole`, if given, bound cluster-wide: a real identity,
 * authorized by the API server, never an admin.
 */
export async function identityClient(
  cluster: LocalCluster,
  admin: KubeClient,
  { namespace, name }: { namespace: string; name: string },
  { role, clusterWide: clusterWideRole }: { role: string; clusterWide?: string },
): Promise<KubeClient> {
  const roleRef = (r: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: r });
  const subjects = [{ kind: 'ServiceAccount', name, namespace }];
  await applyManifests(admin, [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name, namespace }, roleRef: roleRef(role), subjects },
    ...(clusterWideRole
      ? [
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRoleBinding',
            metadata: { name: `${namespace}-${name}` },
            roleRef: roleRef(clusterWideRole),
            subjects,
          },
        ]
      : []),
  ]);
  const review = await admin.request<{ status: { token: string } }>('POST', resourcePath(ServiceAccounts, namespace, name, 'token'), {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  });
  return new Client({ server: cluster.server, caData: kubeConfigOf(cluster).caData, token: review.status.token }, { fieldManager: name });
}

/**
 * A ServiceAccount of `cluster` with exactly `rules` in `namespace`: a tenant of a target, acting with
 * its own token. `ready` is a request it may make, tried until the authorizer knows the binding.
 */
export async function tenantClient(
  cluster: LocalCluster,
  admin: KubeClient,
  namespace: string,
  rules: Record<string, unknown>[],
  ready: (c: KubeClient) => Promise<unknown>,
): Promise<KubeClient> {
  const name = uniqueName('intruder');
  await admin.create(ServiceAccounts, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } });
  await admin.create(Roles, { apiVersion: Roles.apiVersion, kind: 'Role', metadata: { name, namespace }, rules } as KubeObjectLike);
  await admin.create(RoleBindings, {
    apiVersion: RoleBindings.apiVersion,
    kind: 'RoleBinding',
    metadata: { name, namespace },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ kind: 'ServiceAccount', name, namespace }],
  } as KubeObjectLike);
  const review = await admin.request<{ status: { token: string } }>('POST', resourcePath(ServiceAccounts, namespace, name, 'token'), {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  });
  const client = new Client(
    { server: cluster.server, caData: kubeConfigOf(cluster).caData, token: review.status.token },
    { fieldManager: 'intruder' },
  );
  await eventually(async () => {
    await ready(client);
    return true;
  }, "the intruder's role to reach the authorizer");
  return client;
}
