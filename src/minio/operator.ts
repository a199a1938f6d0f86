// The Rook MinIO operator bundle (config/operator/*.yaml, modernised from rook v1.2.7), with the
// Provider's namespace and image overrides applied.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import * as yaml from 'js-yaml';
import type { KubeObjectLike } from '../runtime/kube/client.ts';
import type { OperatorBundle, OperatorSettings } from '../runtime/native/operator.ts';

const DIR = path.join(import.meta.dirname, '..', '..', 'config', 'operator');
const DEFAULT_NAMESPACE = 'rook-minio-system';
export const DEFAULT_IMAGE = 'rook/minio:v1.2.7';
// Cluster-scoped, and every namespaced object last, so the namespace exists before what lives in it.
const ORDER = ['Namespace', 'CustomResourceDefinition', 'ClusterRole', 'ServiceAccount', 'ClusterRoleBinding', 'Deployment'];

let cached: KubeObjectLike[] | undefined;
function load(): KubeObjectLike[] {
  cached ??= readdirSync(DIR).filter((f) => f.endsWith('.yaml')).sort()
    .flatMap((f) => (yaml.loadAll(readFileSync(path.join(DIR, f), 'utf8')) as KubeObjectLike[]).filter(Boolean))
    .sort((a, b) => ORDER.indexOf(a.kind!) - ORDER.indexOf(b.kind!));
  return cached;
}

type Loose = KubeObjectLike & Record<string, unknown>;

function manifests(settings: OperatorSettings): KubeObjectLike[] {
  const namespace = settings.namespace ?? DEFAULT_NAMESPACE;
  return load().map((doc) => {
    const obj = structuredClone(doc) as Loose;
    if (obj.kind === 'Namespace') obj.metadata.name = namespace;
    if (obj.metadata.namespace === DEFAULT_NAMESPACE) obj.metadata.namespace = namespace;
    if (obj.kind === 'ClusterRoleBinding') for (const s of obj.subjects as { namespace?: string }[]) s.namespace = namespace;
    if (obj.kind === 'Deployment') {
      const containers = (obj.spec as { template: { spec: { containers: { image: string }[] } } }).template.spec.containers;
      for (const c of containers) c.image = settings.image ?? DEFAULT_IMAGE;
    }
    return obj;
  });
}

export const rookMinioOperator: OperatorBundle = {
  description: 'Rook MinIO operator',
  crdName: 'objectstores.minio.rook.io',
  deploymentName: 'rook-minio-operator',
  defaultNamespace: DEFAULT_NAMESPACE,
  manifests,
};
