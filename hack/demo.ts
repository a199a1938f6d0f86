// make demo: two local clusters, provider-rook and the MinIO operator stand-in, and a managed
// ObjectStore reconciled into the target, shown live until it is Ready.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import * as yaml from 'js-yaml';
import { KubeConfig } from '@kubernetes/client-node';
import { repoRoot, up } from './lib/cluster.ts';
import { ManagedObjectStores, startApp } from '../src/app.ts';
import type { ObjectStore } from '../src/apis/objectstore.ts';
import { RookObjectStores } from '../src/minio/objectstore.ts';
import { KubeClient, type KubeObjectLike } from '../src/runtime/kube/client.ts';
import { CustomResourceDefinitions, Namespaces, Secrets } from '../src/runtime/kube/resources.ts';
import { pinoLogger } from '../src/runtime/logger.ts';
import { Providers } from '../src/runtime/native/provider-status.ts';
import { FakeMinioOperator } from '../e2e/support/fake-minio-operator.ts';

const say = (line: string): void => console.log(line);
const file = (...p: string[]): string => path.join(repoRoot, ...p);
const docs = (f: string): KubeObjectLike[] => (yaml.loadAll(readFileSync(f, 'utf8')) as KubeObjectLike[]).filter(Boolean);
const clientOf = (kubeconfig: string): KubeClient => {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  return new KubeClient(kc, { fieldManager: 'provider-rook-demo' });
};

say('1/5  Starting local control planes "control" and "target" (real etcd + kube-apiserver)...');
const [controlCluster, targetCluster] = await up(['control', 'target'], (l) => say(`     ${l}`));
const control = clientOf(controlCluster!.kubeconfig);
const target = clientOf(targetCluster!.kubeconfig);

say('2/5  Installing provider-rook\'s CRDs into control (the target gets the MinIO operator from provider-rook itself)...');
for (const f of readdirSync(file('crds'))) for (const d of docs(file('crds', f))) await control.apply(CustomResourceDefinitions, d);
await new Promise((r) => setTimeout(r, 1500)); // CRDs become Established in about a second

say('3/5  Registering the target: Secret demo-provider-rook (from the target kubeconfig) and Provider demo-kubernetes...');
await control.apply(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'rook-infra-dev' } });
const kc = new KubeConfig();
kc.loadFromFile(targetCluster!.kubeconfig);
await control.apply(Secrets, {
  apiVersion: 'v1', kind: 'Secret', metadata: { name: 'demo-provider-rook', namespace: 'rook-infra-dev' }, type: 'Opaque',
  data: { kubeconfig: Buffer.from(kc.exportConfig()).toString('base64') },
});
for (const d of docs(file('config', 'samples', 'provider.yaml'))) await control.apply(Providers, d);

say('4/5  Starting provider-rook and the MinIO operator STAND-IN.');
say('     (Local clusters run no pods, so e2e/support/fake-minio-operator.ts plays the operator: it creates the');
say('      StatefulSet and Service and marks the StatefulSet ready. On a real cluster the Rook operator does this.)');
const operator = new FakeMinioOperator(target);
const controlKc = new KubeConfig();
controlKc.loadFromFile(controlCluster!.kubeconfig);
const app = await startApp({ control: controlKc, log: pinoLogger('warn'), pollIntervalMs: 10_000 });

say('5/5  Applying config/samples/objectstore.yaml and watching it:');
for (const d of docs(file('config', 'samples', 'objectstore.yaml'))) await control.apply(ManagedObjectStores, d);
const deadline = Date.now() + 60_000;
let last = '';
let mr: ObjectStore | undefined;
let operatorStarted = false;
for (;;) {
  // The stand-in can watch stores once provider-rook has installed the operator's CRD.
  if (!operatorStarted && (await target.get(CustomResourceDefinitions, 'objectstores.minio.rook.io'))) {
    await operator.start();
    operatorStarted = true;
  }
  mr = await control.get<ObjectStore>(ManagedObjectStores, 'my-store', 'rook-infra-dev');
  const line = (mr?.status?.conditions ?? []).map((c) => `${c.type}=${c.status}(${c.reason}${c.message ? `: ${c.message}` : ''})`).join('  ');
  if (line && line !== last) say(`     ObjectStore rook-infra-dev/my-store  ${line}`);
  last = line;
  if (mr?.status?.conditions?.every((c) => c.status === 'True') && mr.status.conditions.length === 2) break;
  if (Date.now() > deadline) throw new Error('the store did not become Ready within 60 s');
  await new Promise((r) => setTimeout(r, 300));
}

const store = await target.get<KubeObjectLike & { spec: unknown }>(RookObjectStores, 'my-store', 'rook-minio');
const conn = await control.get<KubeObjectLike & { data: Record<string, string> }>(Secrets, 'my-store-conn', 'rook-infra-dev');
say('');
say('Done. What exists now:');
say(`  control: ObjectStore rook-infra-dev/my-store (managed), Secret rook-infra-dev/my-store-conn with keys: ${Object.keys(conn?.data ?? {}).join(', ')}`);
say(`  target:  ObjectStore rook-minio/my-store (minio.rook.io) with spec ${JSON.stringify(store?.spec)}`);
say('           Secret rook-minio/minio-my-store-access-keys (generated), StatefulSet rook-minio/my-store (by the stand-in)');
say('           the Rook MinIO operator bundle in rook-minio-system (installed by provider-rook: CRD, RBAC, Deployment)');
say('');
say('Explore it:');
say(`  export KUBECONFIG=${controlCluster!.kubeconfig}`);
say('  kubectl get objectstores.minio.rook.crossplane.io,providers -A');
say('  kubectl describe objectstore.minio.rook.crossplane.io -n rook-infra-dev my-store');
say(`  kubectl --kubeconfig ${targetCluster!.kubeconfig} get objectstores.minio.rook.io,statefulsets,secrets -n rook-minio`);
say('Keep provider-rook reconciling (drift repair, deletion) with: npm start   (and the stand-in: npm run fake-operator)');
say('Remove everything with: make demo-down');
await app.stop();
await operator.stop();
