// The local control planes are real Kubernetes API servers: isolated, RBAC-enforcing, validating.
import { describe, expect, it } from '@jest/globals';
import { adminClient, testCluster, uniqueName } from '../kit/env.ts';
import { KubeClient } from '../../src/kit/kube/client.ts';
import { KubeError } from '../../src/kit/kube/errors.ts';
import { CustomResourceDefinitions, Secrets, ServiceAccounts, type ResourceType } from '../../src/kit/kube/resources.ts';
import { kubeconfigFileAccess } from '../../src/kit/kube/config.ts';
import { crdOf } from '../../src/apis/crd.ts';
import { ObjectStoreKind } from '../../src/backends/rook-minio/api.ts';
import { eventually } from '../kit/eventually.ts';
import { cond } from '../kit/conditions.ts';

const ConfigMaps: ResourceType = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const Roles: ResourceType = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', plural: 'roles', namespaced: true };
const RoleBindings: ResourceType = {
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'RoleBinding',
  plural: 'rolebindings',
  namespaced: true,
};

function clientWithToken(server: string, ca: string | undefined, token: string): KubeClient {
  return new KubeClient({ server, caData: ca, token }, { fieldManager: 'tests' });
}

describe('local control planes', () => {
  it('keeps two clusters isolated', async () => {
    const a = adminClient(testCluster('control'));
    const b = adminClient(testCluster('target'));
    const name = uniqueName('iso');
    await a.create(ConfigMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data: { k: 'v' } });
    expect((await a.get(ConfigMaps, { namespace: 'default', name }))?.metadata.name).toBe(name);
    expect(await b.get(ConfigMaps, { namespace: 'default', name })).toBeUndefined();
    expect(testCluster('control').server).not.toBe(testCluster('target').server);
  });

  it('enforces RBAC for a ServiceAccount token', async () => {
    const cluster = testCluster('target');
    const admin = adminClient(cluster);
    const sa = uniqueName('sa');
    await admin.create(ServiceAccounts, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa, namespace: 'default' } });
    const review = await admin.request<{ status: { token: string } }>('POST', `/api/v1/namespaces/default/serviceaccounts/${sa}/token`, {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 600 } },
    });
    const asSa = clientWithToken(cluster.server, kubeconfigFileAccess(cluster.kubeconfig).caData, review.status.token);

    const denied = await asSa.list(Secrets, { namespace: 'default' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(denied).toBeInstanceOf(KubeError);
    expect((denied as KubeError).code).toBe(403);

    const role = uniqueName('read-secrets');
    await admin.create(Roles, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: role, namespace: 'default' },
      rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['list'] }],
    });
    await admin.create(RoleBindings, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: role, namespace: 'default' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role },
      subjects: [{ kind: 'ServiceAccount', name: sa, namespace: 'default' }],
    });
    const allowed = await eventually(() => asSa.list(Secrets, { namespace: 'default' }), 'RBAC to allow listing Secrets', 10_000);
    expect(Array.isArray(allowed.items)).toBe(true);
  });

  it('serves a CRD once Established and validates objects against its schema and CEL rules', async () => {
    const client = adminClient(testCluster('target'));
    // Our own generated CRD, under a throwaway group so this test cannot disturb the provider tests.
    const crd = crdOf({ ...ObjectStoreKind, group: `${uniqueName('g')}.example.com` }) as {
      metadata: { name: string };
      spec: { group: string };
    };
    await client.create(CustomResourceDefinitions, crd as never);
    await eventually(async () => {
      const got = await client.get<{ metadata: { name: string }; status?: { conditions?: { type: string; status: string }[] } }>(
        CustomResourceDefinitions,
        { name: crd.metadata.name },
      );
      return cond(got, 'Established')?.status === 'True';
    }, 'the CRD to become Established');
    const type: ResourceType = { apiVersion: `${crd.spec.group}/v1alpha1`, kind: 'ObjectStore', plural: 'objectstores', namespaced: true };
    const store = (nodeCount: number) => ({
      apiVersion: type.apiVersion,
      kind: 'ObjectStore',
      metadata: { name: uniqueName('s'), namespace: 'default' },
      spec: { forProvider: { scope: { nodeCount } }, targetNamespace: 'rook-minio', providerRef: { name: 'p' } },
    });
    const ok = await eventually(
      () => client.create<{ metadata: { name: string; uid?: string } }>(type, store(4)),
      'the new kind to be served',
    );
    expect(ok.metadata.uid).toBeTruthy();
    const rejected = await client.create(type, store(3)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(rejected).toBeInstanceOf(KubeError);
    expect((rejected as KubeError).code).toBe(422);
    expect((rejected as KubeError).message).toContain('scope.nodeCount must be at least 4 and even');
    await client.delete(CustomResourceDefinitions, { name: crd.metadata.name });
  });
});
