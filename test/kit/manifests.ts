// Applies YAML manifests (ours and the built-in kinds we ship in config/) with server-side apply,
// as `kubectl apply --server-side` would. Used by the demo and the tests.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import * as yaml from 'js-yaml';
import { allKinds } from '../../src/kinds.ts';
import { resourceTypeOf } from '../../src/apis/crd.ts';
import { bundleDirectory } from '../../src/runtime/operators/operator.ts';
import { repoRoot } from './cluster.ts';
import { cond } from './conditions.ts';
import { eventually } from './eventually.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import type { ObjectKey } from '../../src/kit/kube/object-key.ts';
import {
  ClusterRoleBindings,
  ClusterRoles,
  CustomResourceDefinitions,
  Deployments,
  Namespaces,
  Secrets,
  ServiceAccounts,
  Services,
  typeOfManifest,
  type ResourceType,
} from '../../src/kit/kube/resources.ts';

const rbac = (kind: string, plural: string, namespaced: boolean): ResourceType => ({
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind,
  plural,
  namespaced,
});

const TYPES: ResourceType[] = [
  ...allKinds.map(resourceTypeOf),
  Namespaces,
  Secrets,
  ServiceAccounts,
  Services,
  Deployments,
  CustomResourceDefinitions,
  ClusterRoles,
  ClusterRoleBindings,
  rbac('Role', 'roles', true),
  rbac('RoleBinding', 'rolebindings', true),
];

/** Any Kubernetes object as written in a manifest. */
export type Manifest = KubeObjectLike & { [field: string]: unknown };

export function typeFor(obj: KubeObjectLike): ResourceType {
  return typeOfManifest(obj, TYPES);
}

export function loadManifests(file: string): Manifest[] {
  return (yaml.loadAll(readFileSync(file, 'utf8')) as (Manifest | null)[]).filter((d): d is Manifest => Boolean(d));
}

/** Applies one object of `type`, named by `key`, its other fields (spec, data, ...) from `body`. */
export function applyObject(
  client: KubeClient,
  type: ResourceType,
  { namespace, name }: Required<ObjectKey>,
  body: object,
): Promise<KubeObjectLike> {
  return client.apply(type, { apiVersion: type.apiVersion, kind: type.kind, metadata: { name, namespace }, ...body } as KubeObjectLike);
}

/** Applies documents in order (namespaces first), with an optional namespace for namespaced objects that have none. */
export async function applyManifests(client: KubeClient, docs: Manifest[], namespace?: string): Promise<void> {
  const ordered = [...docs].sort((a, b) => Number(b.kind === 'Namespace') - Number(a.kind === 'Namespace'));
  for (const doc of ordered) {
    const type = typeFor(doc);
    const metadata = type.namespaced && !doc.metadata.namespace && namespace ? { ...doc.metadata, namespace } : doc.metadata;
    await client.apply(type, { ...doc, metadata });
  }
}

type Crd = KubeObjectLike & { status?: { conditions?: { type: string; status: string }[] } };

/** Applies the CRDs in these files and waits (polling, up to timeoutMs) until every one is Established. */
export async function installCrds(client: KubeClient, files: string[], timeoutMs = 30_000): Promise<void> {
  const crds = files.flatMap(loadManifests).filter((d) => d.kind === 'CustomResourceDefinition');
  await Promise.all(crds.map((crd) => client.apply(CustomResourceDefinitions, crd)));
  const deadline = Date.now() + timeoutMs;
  for (const crd of crds) {
    await eventually(
      async () => cond(await client.get<Crd>(CustomResourceDefinitions, { name: crd.metadata.name }), 'Established')?.status === 'True',
      `CRD ${crd.metadata.name} to be Established`,
      { timeoutMs: deadline - Date.now(), delayMs: 100, maxDelayMs: 100 },
    );
  }
}

/** Files of a manifest folder, in name order. */
export function manifestFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => path.join(dir, f));
}

/** Installs an operator bundle (config/operators/NAME/, its newest version unless named) as a cluster admin would: no provider-rook marks. */
export async function installOperatorBundle(client: KubeClient, name = 'rook-minio', version?: string): Promise<void> {
  const files = manifestFiles(bundleDirectory(path.join(repoRoot, 'config', 'operators', name), version));
  await installCrds(client, files);
  await applyManifests(
    client,
    files.flatMap(loadManifests).filter((d) => d.kind !== 'CustomResourceDefinition'),
  );
}
