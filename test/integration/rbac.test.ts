// The roles in config/rbac/ grant what their comments promise and no more, as the API server's own
// authorizer answers (SubjectAccessReview) after the roles are applied.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { repoRoot } from '../kit/cluster.ts';
import { applyManifests, loadManifests } from '../kit/manifests.ts';
import type { KubeClient } from '../../src/kit/kube/client.ts';
import type { ResourceType } from '../../src/kit/kube/resources.ts';
import { adminClient, testCluster, uniqueName } from '../kit/env.ts';
import { createNamespace } from '../kit/provider.ts';
import { eventually } from '../kit/eventually.ts';

const SubjectAccessReviews: ResourceType = {
  apiVersion: 'authorization.k8s.io/v1',
  kind: 'SubjectAccessReview',
  plural: 'subjectaccessreviews',
  namespaced: false,
};

let control: KubeClient;
let appNs: string;
let otherNs: string;
const appUser = uniqueName('alice');
const platformUser = uniqueName('bob');

async function can(
  user: string,
  verb: string,
  { group, resource, subresource }: { group: string; resource: string; subresource?: string },
  namespace?: string,
): Promise<boolean> {
  const review = await control.create<{
    apiVersion: string;
    kind: string;
    metadata: { name: string };
    spec: unknown;
    status?: { allowed: boolean };
  }>(SubjectAccessReviews, {
    apiVersion: SubjectAccessReviews.apiVersion,
    kind: 'SubjectAccessReview',
    metadata: { name: '' },
    spec: { user, resourceAttributes: { verb, group, resource, namespace, subresource } },
  });
  return review.status?.allowed ?? false;
}

beforeAll(async () => {
  control = adminClient(testCluster('control'));
  const dir = path.join(repoRoot, 'config', 'rbac');
  for (const f of readdirSync(dir)) await applyManifests(control, loadManifests(path.join(dir, f)));
  appNs = await createNamespace(control, 'rbac-app');
  otherNs = await createNamespace(control, 'rbac-other');
  const rbac = 'rbac.authorization.k8s.io/v1';
  await applyManifests(control, [
    {
      apiVersion: rbac,
      kind: 'RoleBinding',
      metadata: { name: 'app-team', namespace: appNs },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'provider-rook:app-team' },
      subjects: [{ kind: 'User', name: appUser }],
    },
    {
      apiVersion: rbac,
      kind: 'ClusterRoleBinding',
      metadata: { name: platformUser },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'provider-rook:platform-team' },
      subjects: [{ kind: 'User', name: platformUser }],
    },
  ]);
  // The authorizer sees new bindings through its own watch, a moment later.
  await eventually(
    async () =>
      (await can(appUser, 'create', { group: 'storage.crossplane.io', resource: 'buckets' }, appNs)) &&
      (await can(platformUser, 'list', { group: 'storage.crossplane.io', resource: 'buckets' }, appNs)),
    'the bindings to take effect',
  );
});

describe('RBAC roles in config/rbac', () => {
  it('lets an app team claim buckets in its own namespace, and nothing else', async () => {
    expect(await can(appUser, 'create', { group: 'storage.crossplane.io', resource: 'buckets' }, appNs)).toBe(true);
    expect(await can(appUser, 'delete', { group: 'storage.crossplane.io', resource: 'buckets' }, appNs)).toBe(true);
    expect(await can(appUser, 'list', { group: 'storage.crossplane.io', resource: 'bucketclasses' }, appNs)).toBe(true);
    expect(await can(appUser, 'create', { group: 'storage.crossplane.io', resource: 'buckets' }, otherNs)).toBe(false);
    expect(await can(appUser, 'create', { group: 'storage.crossplane.io', resource: 'bucketclasses' }, appNs)).toBe(false);
    expect(await can(appUser, 'update', { group: 'storage.crossplane.io', resource: 'buckets', subresource: 'status' }, appNs)).toBe(false);
    expect(await can(appUser, 'create', { group: 'minio.rook.crossplane.io', resource: 'objectstoreclasses' }, appNs)).toBe(false);
    expect(await can(appUser, 'get', { group: 'minio.rook.crossplane.io', resource: 'objectstores' }, appNs)).toBe(false);
    expect(await can(appUser, 'create', { group: 'kubernetes.crossplane.io', resource: 'providers' }, appNs)).toBe(false);
  });

  it('lets a platform team manage classes, policies and managed resources everywhere, but not read Secrets or write Providers', async () => {
    for (const [group, resource] of [
      ['minio.rook.crossplane.io', 'objectstoreclasses'],
      ['minio.rook.crossplane.io', 'objectstores'],
      ['storage.crossplane.io', 'bucketclasses'],
      ['storage.crossplane.io', 'bucketpolicies'],
    ] as const) {
      expect(await can(platformUser, 'create', { group: group, resource: resource }, otherNs)).toBe(true);
    }
    expect(await can(platformUser, 'list', { group: 'storage.crossplane.io', resource: 'buckets' }, appNs)).toBe(true);
    expect(await can(platformUser, 'list', { group: 'kubernetes.crossplane.io', resource: 'providers' }, appNs)).toBe(true);
    expect(await can(platformUser, 'create', { group: 'storage.crossplane.io', resource: 'buckets' }, appNs)).toBe(false);
    expect(await can(platformUser, 'get', { group: '', resource: 'secrets' }, appNs)).toBe(false);
    // A Provider can make provider-rook read any Secret of its namespace: writing them is provider-admin's, bound per namespace.
    expect(await can(platformUser, 'create', { group: 'kubernetes.crossplane.io', resource: 'providers' }, appNs)).toBe(false);
    await applyManifests(control, [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'platform-providers', namespace: otherNs },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'provider-rook:provider-admin' },
        subjects: [{ kind: 'User', name: platformUser }],
      },
    ]);
    // The API server's authorizer sees a new RoleBinding through its own watch, a moment later.
    await eventually(
      () => can(platformUser, 'create', { group: 'kubernetes.crossplane.io', resource: 'providers' }, otherNs),
      'the new RoleBinding to take effect',
    );
    expect(await can(platformUser, 'create', { group: '', resource: 'secrets' }, otherNs)).toBe(true);
    expect(await can(platformUser, 'create', { group: 'kubernetes.crossplane.io', resource: 'providers' }, appNs)).toBe(false);
  });

  it('gives provider-rook itself what it reconciles with, and no power to define classes', async () => {
    const sa = `system:serviceaccount:provider-rook-system:provider-rook`;
    await applyManifests(
      control,
      ['provider-rook', 'provider-rook:secrets'].map((role) => ({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: `${role.replace(':', '-')}-rbac-test` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
        subjects: [{ kind: 'ServiceAccount', name: 'provider-rook', namespace: 'provider-rook-system' }],
      })),
    );
    // Both bindings, each seen by the authorizer on its own time: one answer of each role's.
    await eventually(
      async () =>
        (await can(sa, 'update', { group: 'storage.crossplane.io', resource: 'buckets', subresource: 'status' }, appNs)) &&
        (await can(sa, 'create', { group: '', resource: 'secrets' }, appNs)),
      'the new bindings to take effect',
    );
    expect(await can(sa, 'create', { group: 'minio.rook.crossplane.io', resource: 'objectstores' }, otherNs)).toBe(true);
    expect(await can(sa, 'watch', { group: 'minio.rook.crossplane.io', resource: 'objectstoreclasses' }, otherNs)).toBe(true);
    expect(await can(sa, 'create', { group: 'minio.rook.crossplane.io', resource: 'objectstoreclasses' }, otherNs)).toBe(false);
    expect(await can(sa, 'create', { group: 'storage.crossplane.io', resource: 'buckets' }, appNs)).toBe(false);
    expect(await can(sa, 'delete', { group: '', resource: 'namespaces' })).toBe(false);
    // Secrets: what the code does with them, and no more (it patches, never updates).
    for (const verb of ['get', 'list', 'watch', 'create', 'patch', 'delete'])
      expect(await can(sa, verb, { group: '', resource: 'secrets' }, appNs)).toBe(true);
    expect(await can(sa, 'update', { group: '', resource: 'secrets' }, appNs)).toBe(false);
    expect(await can(sa, 'deletecollection', { group: '', resource: 'secrets' }, appNs)).toBe(false);
  });

  it("aggregates into Kubernetes' view and edit, so a namespace's own users read and claim buckets, and into Crossplane's role", async () => {
    const viewer = uniqueName('carol');
    const editor = uniqueName('dave');
    const crossplane = uniqueName('crossplane');
    const rbac = 'rbac.authorization.k8s.io/v1';
    const binding = (user: string, role: string) => ({
      apiVersion: rbac,
      kind: 'RoleBinding',
      metadata: { name: user, namespace: appNs },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ kind: 'User', name: user }],
    });
    await applyManifests(control, [
      binding(viewer, 'view'),
      binding(editor, 'edit'),
      // Crossplane's own ClusterRole, as its chart makes it: its rules are whatever is labelled to aggregate into it.
      {
        apiVersion: rbac,
        kind: 'ClusterRole',
        metadata: { name: crossplane },
        aggregationRule: { clusterRoleSelectors: [{ matchLabels: { 'rbac.crossplane.io/aggregate-to-crossplane': 'true' } }] },
        rules: [],
      },
      {
        apiVersion: rbac,
        kind: 'ClusterRoleBinding',
        metadata: { name: crossplane },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: crossplane },
        subjects: [{ kind: 'User', name: crossplane }],
      },
    ]);
    const buckets = { group: 'storage.crossplane.io', resource: 'buckets' };
    // The controller-manager aggregates the rules, then the authorizer sees them.
    await eventually(
      async () =>
        (await can(editor, 'create', buckets, appNs)) &&
        (await can(viewer, 'list', buckets, appNs)) &&
        (await can(crossplane, 'create', { group: 'seaweedfs.crossplane.io', resource: 'seaweedbuckets' }, otherNs)),
      'the aggregated rules to take effect',
      30_000,
    );
    expect(await can(editor, 'create', { group: 'storage.crossplane.io', resource: 'bucketaccesses' }, appNs)).toBe(true);
    expect(await can(editor, 'create', { group: 'storage.crossplane.io', resource: 'bucketclasses' }, appNs)).toBe(false);
    expect(await can(editor, 'create', buckets, otherNs)).toBe(false);
    expect(await can(viewer, 'create', buckets, appNs)).toBe(false);
    expect(await can(viewer, 'get', { group: 'storage.crossplane.io', resource: 'bucketpolicies' }, appNs)).toBe(true);
    expect(await can(crossplane, 'create', buckets, appNs)).toBe(true);
    expect(await can(crossplane, 'create', { group: 'storage.crossplane.io', resource: 'bucketclasses' }, appNs)).toBe(true);
    expect(await can(crossplane, 'create', { group: 'kubernetes.crossplane.io', resource: 'providers' }, appNs)).toBe(false);
    expect(await can(crossplane, 'get', { group: '', resource: 'secrets' }, appNs)).toBe(false);
  });

  it('lets provider-rook hold its leader-election Lease in its own namespace only (config/provider)', async () => {
    const sa = `system:serviceaccount:provider-rook-system:provider-rook`;
    const deployment = loadManifests(path.join(repoRoot, 'config', 'provider', 'provider-rook.yaml'));
    await applyManifests(
      control,
      deployment.filter((m) => ['Namespace', 'Role', 'RoleBinding'].includes(m.kind ?? '')),
    );
    await eventually(
      () => can(sa, 'get', { group: 'coordination.k8s.io', resource: 'leases' }, 'provider-rook-system'),
      'the new Role and RoleBinding to take effect',
    );
    for (const verb of ['get', 'create', 'update'])
      expect(await can(sa, verb, { group: 'coordination.k8s.io', resource: 'leases' }, 'provider-rook-system')).toBe(true);
    expect(await can(sa, 'update', { group: 'coordination.k8s.io', resource: 'leases' }, otherNs)).toBe(false);
    expect(await can(sa, 'delete', { group: 'coordination.k8s.io', resource: 'leases' }, 'provider-rook-system')).toBe(false);
  });
});
