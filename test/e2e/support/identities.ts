// Least-privilege identities for e2e: a ServiceAccount bound to one of the roles in config/rbac/,
// and a short-lived token for it from the TokenRequest API (never an admin credential).
import path from 'node:path';
import { repoRoot } from '../../kit/cluster.ts';
import { applyManifests, loadManifests } from '../../kit/manifests.ts';
import type { KubeClient } from '../../../src/kit/kube/client.ts';
import { resourcePath, ServiceAccounts } from '../../../src/kit/kube/resources.ts';

export const rbacFile = (name: string): string => path.join(repoRoot, 'config', 'rbac', name);

/** Creates namespace/ServiceAccount bound cluster-wide to each ClusterRole; returns a token for it. */
export async function serviceAccountToken(
  admin: KubeClient,
  namespace: string,
  name: string,
  clusterRoles: string[],
  ttlSeconds = 24 * 3600,
): Promise<string> {
  await applyManifests(admin, [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } },
    ...clusterRoles.map((role) => ({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `${name}:${role.replaceAll(':', '-')}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    })),
  ]);
  const review = await admin.request<{ status: { token: string } }>('POST', resourcePath(ServiceAccounts, namespace, name, 'token'), {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: ttlSeconds } },
  });
  return review.status.token;
}

export async function applyFile(admin: KubeClient, file: string): Promise<void> {
  await applyManifests(admin, loadManifests(file));
}
