// make demo: provider-rook on local clusters, live. Brings up "control" and the targets, installs
// the CRDs, builds and starts provider-rook (and the operator stand-ins) as background processes,
// applies config/samples/ (SeaweedFS, the default backend, first; then its four steps
// through Rook MinIO, and the other backends), shows each claim's progress until it is Bound, then
// prints what exists. `make demo-down` (node hack/demo.ts down) stops and removes everything.
// The stand-ins run a real S3 server (SeaweedFS) per store, and each act ends with an S3 PUT and GET
// made with the claim's connection Secret alone.
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { down, up } from '../test/kit/cluster.ts';
import { eventually } from '../test/kit/eventually.ts';
import {
  background,
  clientOf,
  DEMO_CLUSTERS,
  demoDir,
  file,
  providerSecret as secretFrom,
  say,
  stopProcesses,
  startProvider,
} from './lib/demo.ts';
import { applyManifests, installCrds, loadManifests } from '../test/kit/manifests.ts';
import { BucketAccesses, Buckets } from '../src/app.ts';
import type { Bucket } from '../src/apis/storage.ts';
import { RookObjectStores } from '../src/backends/rook-minio/objectstore.ts';
import type { KubeClient, KubeObjectLike } from '../src/kit/kube/client.ts';
import { CustomResourceDefinitions, Namespaces, Secrets, typeOfManifest, type ResourceType } from '../src/kit/kube/resources.ts';
import { secretText } from '../src/runtime/providers/credentials.ts';
import { s3Client } from '../test/kit/s3.ts';
import { LoopbackIngress } from '../test/fakes/loopback-ingress.ts';
import { resolveS3Endpoint, shareRoutes } from '../test/fakes/s3-stores.ts';

/** Where the stand-in processes share the routes to their S3 servers (see s3-stores.ts). */
const s3Routes = path.join(demoDir, 's3-routes');

if (process.argv[2] === 'down') {
  await stopProcesses();
  rmSync(s3Routes, { recursive: true, force: true });
  await down(DEMO_CLUSTERS);
  say(`Stopped provider-rook and the operator stand-ins (with their S3 servers); removed the demo clusters (${DEMO_CLUSTERS.join(', ')}).`);
  process.exit(0);
}

await stopProcesses(); // a previous demo's processes, if any
rmSync(s3Routes, { recursive: true, force: true });
shareRoutes(s3Routes);
say('1/10  Starting local control planes "control", "target", "target-b" and "apps" (real etcd + kube-apiserver)...');
const [controlCluster, targetCluster, targetBCluster, appsCluster] = await up(['control', 'target', 'target-b', 'apps'], (l) =>
  say(`     ${l}`),
);
const control = clientOf(controlCluster!.kubeconfig);
const target = clientOf(targetCluster!.kubeconfig);
const targetB = clientOf(targetBCluster!.kubeconfig);
const apps = clientOf(appsCluster!.kubeconfig);

say("2/10  Installing provider-rook's CRDs into control (the targets get their operators from provider-rook itself)...");
await installCrds(
  control,
  readdirSync(file('crds')).map((f) => file('crds', f)),
);

say('3/10  Building provider-rook (tsc) and starting it against control...');
const { metrics } = await startProvider(controlCluster!.kubeconfig);
say(`     metrics http://${metrics}/metrics (crossplane_managed_resource_*, controller_runtime_*), probes /healthz and /readyz`);

say('4/10  Applying config/samples/: the namespaces and the Provider, then SeaweedFS, the default backend (config/samples/seaweedfs/):');
const sample = (f: string) => loadManifests(file('config', 'samples', f));
await applyManifests(control, sample('00-namespaces.yaml'));
// Step 1's Secret, built from the target's kubeconfig.
const providerSecret = (name: string, kubeconfig: string): Promise<void> =>
  secretFrom(control, { namespace: 'rook-infra-dev', name }, kubeconfig);
await providerSecret('demo-provider-rook', targetCluster!.kubeconfig);
await applyManifests(control, sample('01-provider.yaml'));
say(`     applied ${'01-provider.yaml'.padEnd(26)} Provider demo-kubernetes (+ Secret demo-provider-rook from the target kubeconfig)`);
for (const [f, what] of [
  ['01-seaweedstore.yaml', "SeaweedStore rook-infra-dev/team-seaweed (the platform team's SeaweedFS, made for no claim)"],
  ['02-classes.yaml', 'SeaweedBucketClass seaweed-buckets (versioning by default, quotas up to 50Gi), SeaweedStoreClass seaweed-dedicated'],
  ['03-bucketclasses.yaml', 'BucketClasses bucket-seaweed, bucket-seaweed-dedicated; BucketPolicy default (bucket-seaweed)'],
  ['04-buckets.yaml', "Bucket invoices (no class: the namespace's default; a 10Gi quota, lifecycle rules), Bucket ledger (object lock)"],
] as const) {
  await applyManifests(control, sample(`seaweedfs/${f}`));
  say(`     applied seaweedfs/${f.padEnd(23)} ${what}`);
}

const conditions = (
  o: { status?: { conditions?: { type: string; status: string; reason: string; message?: string }[] } } | undefined,
): string => (o?.status?.conditions ?? []).map((c) => `${c.type}=${c.status}(${c.reason}${c.message ? `: ${c.message}` : ''})`).join(' ');

/** The operator stand-ins started so far (one per target and operator). */
const standIns = new Set<string>();

/** Shows a claim's progress until it is Bound; starts the operator stand-in once provider-rook installed the operator's CRD. */
async function watchUntilBound(
  name: string,
  where: { client: KubeClient; kubeconfig: string; label: string; crd: string; operator: string },
  namespace = 'app-project1-dev',
  type: ResourceType = Buckets,
): Promise<Bucket> {
  let last = '';
  const standIn = `${where.kubeconfig} ${where.operator}`;
  return eventually(
    async () => {
      if (!standIns.has(standIn) && (await where.client.get(CustomResourceDefinitions, { name: where.crd }))) {
        const pid = background(`fake-${where.operator}`, [
          file('test', 'fakes', 'fake-operators.ts'),
          where.kubeconfig,
          where.operator,
          `--s3=${s3Routes}`,
        ]);
        say(
          `     [${where.label}] provider-rook installed ${where.operator}; started its operator STAND-IN (pid ${pid}), which runs a real S3 server (SeaweedFS) per store`,
        );
        standIns.add(standIn);
      }
      const claim = await control.get<Bucket>(type, { namespace, name });
      const ref = claim?.spec.resourceRef;
      const mr = ref
        ? await control.get<KubeObjectLike & { status?: { conditions?: [] } }>(
            typeOfManifest({ apiVersion: ref.apiVersion, kind: ref.kind, metadata: { namespace: ref.namespace } }),
            { namespace: ref.namespace, name: ref.name },
          )
        : undefined;
      const line =
        `     ${type.kind} ${name}: ${claim?.status?.bindingPhase ?? '-'} ${conditions(claim)}` +
        (mr ? `\n       └ ${ref!.kind} ${mr.metadata.namespace}/${mr.metadata.name}: ${conditions(mr)}` : '');
      if (line !== last) say(line);
      last = line;
      return claim?.status?.bindingPhase === 'Bound' && claim.status.conditions?.every((c) => c.status === 'True') ? claim : undefined;
    },
    `${type.kind} ${name} to be Bound`,
    { timeoutMs: 90_000, delayMs: 250, maxDelayMs: 250 },
  ).catch((): never => {
    say(`The ${type.kind} was not Bound within 90 s; see .local/demo/provider-rook.log`);
    process.exit(1);
  });
}

say('5/10  Watching the SeaweedFS claims until they are Bound.');
const seaweedWhere = {
  client: target,
  kubeconfig: targetCluster!.kubeconfig,
  label: 'target',
  crd: 'seaweeds.seaweed.seaweedfs.com',
  operator: 'seaweedfs',
};
say('     NOTE: the SeaweedFS operator cannot run here (no pods, and its Go module is not served here): its');
say('     stand-in (test/fakes/fake-seaweed-operator.ts) writes what the operator writes and does its work on a');
say('     real SeaweedFS server per Seaweed.');
await watchUntilBound('invoices', seaweedWhere);
await watchUntilBound('ledger', seaweedWhere);
await s3PutGet('invoices', 'invoices-s3', { client: target, label: 'target', standIn: 'SeaweedFS operator' });
await s3PutGet('ledger', 'ledger-s3', { client: target, label: 'target', standIn: 'SeaweedFS operator' });
say("     per claim, the operator's own kinds: Bucket, S3Identity, S3Credentials (keys provider-rook derived), S3Policy, S3PolicyBinding");
say('     (and a BucketLifecyclePolicy for invoices); no root credential exists for provider-rook to hold');
say();
say("6/10  The four steps of config/samples/, through Rook MinIO (its operator gone since 2019; MinIO's community edition archived):");
for (const [f, what] of [
  ['02-objectstoreclass.yaml', 'ObjectStoreClass rook-infra-dev/rook-minio'],
  ['03-bucketclass.yaml', 'BucketClass app-project1-dev/bucket-standard'],
  ['04-bucket.yaml', 'Bucket app-project1-dev/app-bucket'],
] as const) {
  await applyManifests(control, sample(f));
  say(`     applied ${f.padEnd(26)} ${what}`);
}
say('     NOTE: local clusters run no pods, so the Rook MinIO operator cannot run here. A stand-in');
say('     (test/fakes/fake-minio-operator.ts) does to the API what the operator does: it');
say('     creates the StatefulSet and Service for the store and marks the StatefulSet ready. On a real');
say('     cluster the Rook operator and real MinIO pods do this.');
const claim = await watchUntilBound('app-bucket', {
  client: target,
  kubeconfig: targetCluster!.kubeconfig,
  label: 'target',
  crd: 'objectstores.minio.rook.io',
  operator: 'rook-minio',
});

const ref = claim.spec.resourceRef!;
// The class's stores each get a namespace of their own: rook-minio-<managed resource name>.
const storeNs = `rook-minio-${ref.name}`;
const store = await target.get<KubeObjectLike & { spec: unknown }>(RookObjectStores, { namespace: storeNs, name: ref.name });
const conn = await control.get<KubeObjectLike & { data?: Record<string, string> }>(Secrets, {
  namespace: 'app-project1-dev',
  name: 'bucketsecret',
});
say();
/**
 * What an app in the target does with the claim's connection Secret alone: an S3 PUT of a small
 * object and a GET of it back. The Secret is read from control; its endpoint (a Service's host
 * name in the target) is reached through resolveS3Endpoint, which plays the target's DNS and
 * kube-proxy. A Secret that names no bucket (a whole store's) has its keys make one first.
 */
async function s3PutGet(
  claimName: string,
  secretName: string,
  where: { client: KubeClient; label: string; standIn: string },
  namespace = 'app-project1-dev',
): Promise<void> {
  const secret = await control.get<KubeObjectLike & { data?: Record<string, string> }>(Secrets, { namespace, name: secretName });
  const { endpoint, username, password, bucket } = secretText(secret?.data);
  if (!endpoint || !username || !password || !bucket)
    throw new Error(`Secret ${namespace}/${secretName} lacks endpoint, username, password or bucket`);
  const local = await resolveS3Endpoint(endpoint, where.client);
  say(
    `     S3 with Secret ${namespace}/${secretName} alone (endpoint, bucket, and a user of that bucket alone), as an app in ${where.label} would:`,
  );
  say(`       endpoint ${endpoint} leads to ${local} (the Service's pods, played by the stand-in)`);
  // test/kit/s3-server.ts starts that server on 127.0.0.1 only, always with -master.telemetry=false.
  const seaweed = where.standIn === 'SeaweedFS operator';
  say(
    seaweed
      ? "       answered by: the REAL SeaweedFS S3 server (weed mini, Apache-2.0) that the SeaweedFS operator stand-in runs as this store's Seaweed; " +
          "the bucket's user, keys and policy were made from the operator's own kinds, played through the server's IAM API"
      : `       answered by: the REAL SeaweedFS S3 server (weed mini, Apache-2.0) that the ${where.standIn} stand-in runs as this store's MinIO; ` +
          "the bucket's user and policy were made by provider-rook's Job, played by fake-minio-client.ts through the server's IAM API",
  );
  const s3 = s3Client(local, { accessKey: username, secretKey: password });
  try {
    const Key = 'hello.txt';
    const body = `hello from ${claimName} at ${new Date().toISOString()}`;
    const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key, Body: body }));
    say(`       PUT s3://${bucket}/${Key} (${Buffer.byteLength(body)} bytes) -> HTTP ${put.$metadata.httpStatusCode}, ETag ${put.ETag}`);
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key }));
    const text = await got.Body!.transformToString();
    say(
      `       GET s3://${bucket}/${Key} -> HTTP ${got.$metadata.httpStatusCode}, ${Buffer.byteLength(text)} bytes read: ${JSON.stringify(text)}`,
    );
    if (text !== body) throw new Error(`the GET returned other bytes than the PUT wrote`);
  } finally {
    s3.destroy();
  }
}

/** The same keys on another bucket: the S3 server's answer (AccessDenied is the point). */
async function s3Try(secretName: string, namespace: string, what: 'PUT' | 'GET', bucket: string, client: KubeClient): Promise<string> {
  const { endpoint, username, password } = secretText(
    (await control.get<KubeObjectLike & { data?: Record<string, string> }>(Secrets, { namespace, name: secretName }))?.data,
  );
  const s3 = s3Client(await resolveS3Endpoint(endpoint!, client), { accessKey: username!, secretKey: password! });
  try {
    const sent =
      what === 'PUT'
        ? s3.send(new PutObjectCommand({ Bucket: bucket, Key: 'probe.txt', Body: 'probe' }))
        : s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'hello.txt' }));
    const ok = await sent;
    return `HTTP ${ok.$metadata.httpStatusCode}`;
  } catch (err) {
    return (err as Error).name;
  } finally {
    s3.destroy();
  }
}

say('     Done. What exists now (secret values are not shown):');
say('  control cluster');
say('    Bucket           app-project1-dev/app-bucket        Bound');
say(
  `    Secret           app-project1-dev/bucketsecret      keys: ${Object.keys(conn?.data ?? {})
    .sort()
    .join(', ')}`,
);
say(`    ObjectStore      ${ref.namespace}/${ref.name}   (minio.rook.crossplane.io, the managed resource)`);
say('  target cluster');
say(`    ObjectStore      ${storeNs}/${ref.name}   (minio.rook.io) spec: ${JSON.stringify(store?.spec)}`);
say(`    Secret           ${storeNs}/${ref.name}-access-keys   (generated MinIO keys)`);
say(`    Service          ${storeNs}/${ref.name}-s3   (the claim's endpoint: it reaches only this store's servers)`);
say(`    StatefulSet      ${storeNs}/${ref.name}   (made by the operator stand-in)`);
say('    Rook MinIO operator in rook-minio-system (CRD, RBAC, Deployment; installed by provider-rook)');
say();
await s3PutGet('app-bucket', 'bucketsecret', { client: target, label: 'target', standIn: 'Rook MinIO operator' });
say();
say('7/10  Buckets in one shared MinIO store: config/samples/shared/.');
const targetWhere = {
  client: target,
  kubeconfig: targetCluster!.kubeconfig,
  label: 'target',
  crd: 'objectstores.minio.rook.io',
  operator: 'rook-minio',
};
for (const [f, what] of [
  ['00-namespace.yaml', 'Namespace app-project2-dev (a second app team)'],
  ['01-objectstore.yaml', "ObjectStore rook-infra-dev/team-store (the platform team's store, made for no claim)"],
  ['02-miniobucketclass.yaml', 'MinioBucketClass rook-infra-dev/team-buckets (its claims share team-store)'],
  ['03-bucketclasses.yaml', 'BucketClass bucket-shared in both app namespaces'],
  ['04-buckets.yaml', 'Bucket app-project1-dev/orders (shared read-only with app-project2-dev), Bucket app-project2-dev/reports'],
  ['05-bucketaccess.yaml', 'BucketAccess app-project2-dev/orders-reader (ReadOnly on orders)'],
] as const) {
  await applyManifests(control, sample(`shared/${f}`));
  say(`     applied shared/${f.padEnd(26)} ${what}`);
}
await watchUntilBound('orders', targetWhere);
await watchUntilBound('reports', targetWhere, 'app-project2-dev');
await watchUntilBound('orders-reader', targetWhere, 'app-project2-dev', BucketAccesses);
const bucketOf = async (secret: string, ns: string): Promise<string> =>
  secretText((await control.get<KubeObjectLike & { data?: Record<string, string> }>(Secrets, { namespace: ns, name: secret }))?.data)
    .bucket!;
const ordersBucket = await bucketOf('orders-s3', 'app-project1-dev');
const reportsBucket = await bucketOf('reports-s3', 'app-project2-dev');
say(`     one store (rook-minio-shared/team-store), two buckets: ${ordersBucket} and ${reportsBucket}, each with a user of its own`);
await s3PutGet('orders', 'orders-s3', { client: target, label: 'target', standIn: 'Rook MinIO operator' });
await s3PutGet('reports', 'reports-s3', { client: target, label: 'target', standIn: 'Rook MinIO operator' }, 'app-project2-dev');
say(`     orders' keys on reports' bucket:          PUT -> ${await s3Try('orders-s3', 'app-project1-dev', 'PUT', reportsBucket, target)}`);
say(
  `     orders-reader's keys on orders' bucket:   GET -> ${await s3Try('orders-readonly', 'app-project2-dev', 'GET', ordersBucket, target)}, PUT -> ${await s3Try('orders-readonly', 'app-project2-dev', 'PUT', ordersBucket, target)}`,
);
say('     (the real S3 server judges the policies provider-rook wrote: each user reaches its one bucket, in its mode)');
say();
say('8/10  Second act: the same Bucket through another backend (the MinIO Operator) in a second target.');
await providerSecret('demo-provider-b', targetBCluster!.kubeconfig);
await applyManifests(control, [
  {
    apiVersion: 'kubernetes.crossplane.io/v1alpha2',
    kind: 'Provider',
    metadata: { name: 'demo-target-b', namespace: 'rook-infra-dev' },
    spec: { credentialsSecretRef: { name: 'demo-provider-b' }, operators: [{ name: 'minio-operator', install: true }] },
  },
]);
say('     applied Provider demo-target-b (target-b; may install the MinIO Operator)');
const [tenantClass] = sample('minio-operator/01-tenantclass.yaml');
await applyManifests(control, [
  { ...tenantClass!, spec: { ...(tenantClass!.spec as object), providerRef: { name: 'demo-target-b', namespace: 'rook-infra-dev' } } },
]);
await applyManifests(control, sample('minio-operator/02-bucketclass.yaml'));
say('     applied minio-operator/01-tenantclass.yaml (providerRef demo-target-b) and 02-bucketclass.yaml (bucket-tenant)');
const [designBucket] = sample('04-bucket.yaml');
await applyManifests(control, [
  {
    ...designBucket!,
    metadata: { name: 'app-bucket-tenant', namespace: 'app-project1-dev' },
    spec: {
      ...(designBucket!.spec as object),
      classRef: { name: 'bucket-tenant' },
      writeConnectionSecretToRef: { name: 'bucketsecret-tenant' },
    },
  },
]);
say("     applied config/samples/04-bucket.yaml's Bucket as app-bucket-tenant, with classRef.name bucket-tenant");
say('     NOTE: the MinIO Operator cannot run here either: its stand-in');
say('     (test/fakes/fake-tenant-operator.ts) writes what the operator writes, and answers');
say('     its health check as MinIO would.');
const second = await watchUntilBound('app-bucket-tenant', {
  client: targetB,
  kubeconfig: targetBCluster!.kubeconfig,
  label: 'target-b',
  crd: 'tenants.minio.min.io',
  operator: 'minio-operator',
});
const connB = await control.get<KubeObjectLike & { data?: Record<string, string> }>(Secrets, {
  namespace: 'app-project1-dev',
  name: 'bucketsecret-tenant',
});
const tenantRef = second.spec.resourceRef!;
say();
await s3PutGet('app-bucket-tenant', 'bucketsecret-tenant', { client: targetB, label: 'target-b', standIn: 'MinIO Operator' });
say();
say('9/10  Side by side: one Bucket YAML, two backends, two targets, the same Secret keys.');
say(`     ${'claim'.padEnd(20)} ${'backend'.padEnd(16)} ${'target'.padEnd(9)} ${'managed resource'.padEnd(58)} Secret keys`);
say(
  `     ${'app-bucket'.padEnd(20)} ${'Rook MinIO'.padEnd(16)} ${'target'.padEnd(9)} ${`ObjectStore ${ref.name}`.padEnd(58)} ${Object.keys(
    conn?.data ?? {},
  )
    .sort()
    .join(', ')}`,
);
say(
  `     ${'app-bucket-tenant'.padEnd(20)} ${'MinIO Operator'.padEnd(16)} ${'target-b'.padEnd(9)} ${`Tenant ${tenantRef.name}`.padEnd(58)} ${Object.keys(
    connB?.data ?? {},
  )
    .sort()
    .join(', ')}`,
);
say(`     (the Tenant lives alone in namespace minio-${tenantRef.name} of target-b)`);
say();
say('10/10 Where the app runs: a cluster "apps" that holds no store gets the Secret, with an endpoint that resolves there.');
await providerSecret('demo-provider-apps', appsCluster!.kubeconfig);
await apps.create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } }).catch(() => undefined);
// The platform team's ingress in front of team-store's S3 Service, at the class's exposure.url (this process runs it: a stand-in).
const exposedAt = new URL((sample('consumers/02-miniobucketclass.yaml')[0]!.spec as { exposure: { url: string } }).exposure.url);
const ingress = new LoopbackIngress(`http://team-store-s3.rook-minio-shared.svc.cluster.local:9000`, target, {
  host: exposedAt.hostname,
  port: Number(exposedAt.port),
});
await ingress.listen();
for (const [f, what] of [
  [
    '01-provider.yaml',
    'Provider demo-apps (a cluster that holds no store; claims of app-project1-dev may deliver into its namespace shop)',
  ],
  ['02-miniobucketclass.yaml', `MinioBucketClass team-buckets-exposed (team-store, exposed at ${exposedAt.origin})`],
  ['03-bucketclass.yaml', 'BucketClass app-project1-dev/bucket-exposed'],
  ['04-bucket.yaml', 'Bucket app-project1-dev/shop-bucket, consumers: demo-apps/shop'],
] as const) {
  await applyManifests(control, sample(`consumers/${f}`));
  say(`     applied consumers/${f.padEnd(26)} ${what}`);
}
await watchUntilBound('shop-bucket', targetWhere);
const deliveredSecret = await eventually(
  async () => apps.get<KubeObjectLike & { data?: Record<string, string> }>(Secrets, { namespace: 'shop', name: 'shop-s3' }),
  'the Secret delivered to apps/shop',
  { timeoutMs: 60_000 },
);
const there = secretText(deliveredSecret.data);
const own = secretText(
  (await control.get<KubeObjectLike & { data?: Record<string, string> }>(Secrets, { namespace: 'app-project1-dev', name: 'shop-s3' }))
    ?.data,
);
say(`     Secret shop/shop-s3 in apps: endpoint ${there.endpoint} (the claim's own, in control, says ${own.endpoint})`);
await resolveS3Endpoint(own.endpoint!, apps).then(
  () => say('     (unexpected: the cluster-internal name resolved in apps)'),
  (e: Error) => say(`     the cluster-internal name, from apps: ${e.message}`),
);
const fromApps = s3Client(await resolveS3Endpoint(there.endpoint!, apps), {
  accessKey: there.AWS_ACCESS_KEY_ID!,
  secretKey: there.AWS_SECRET_ACCESS_KEY!,
});
try {
  const body = `hello from the apps cluster at ${new Date().toISOString()}`;
  const put = await fromApps.send(new PutObjectCommand({ Bucket: there.BUCKET_NAME!, Key: 'from-apps.txt', Body: body }));
  say(`     PUT s3://${there.BUCKET_NAME}/from-apps.txt from apps, with the Secret read there -> HTTP ${put.$metadata.httpStatusCode}`);
  const got = await fromApps.send(new GetObjectCommand({ Bucket: there.BUCKET_NAME!, Key: 'from-apps.txt' }));
  const text = await got.Body!.transformToString();
  say(`     GET s3://${there.BUCKET_NAME}/from-apps.txt -> HTTP ${got.$metadata.httpStatusCode}: ${JSON.stringify(text)}`);
  if (text !== body) throw new Error('the GET returned other bytes than the PUT wrote');
} finally {
  fromApps.destroy();
  await ingress.close();
}
say('     (the ingress stand-in ran for this step only; the delivered Secret stays, kept in line by a watch in apps)');
say();
say('Explore (provider-rook and the stand-ins, with their S3 servers, keep running, so drift is repaired live):');
say(`  export KUBECONFIG=${controlCluster!.kubeconfig}`);
say('  kubectl get buckets,bucketclasses -n app-project1-dev');
say('  kubectl get objectstores.minio.rook.crossplane.io,objectstoreclasses,providers -n rook-infra-dev');
say('  kubectl describe bucket -n app-project1-dev app-bucket');
say(`  kubectl --kubeconfig ${targetCluster!.kubeconfig} get objectstores.minio.rook.io,statefulsets,secrets -n ${storeNs}`);
say(`  kubectl --kubeconfig ${targetBCluster!.kubeconfig} get tenants.minio.min.io -A`);
say('  kubectl get buckets,bucketaccesses -n app-project2-dev; kubectl get miniobuckets -n rook-infra-dev');
say(`  kubectl --kubeconfig ${appsCluster!.kubeconfig} get secrets -n shop   # shop-s3, delivered there`);
say('  kubectl delete bucketaccess -n app-project2-dev orders-reader   # its user is revoked at once');
say('  kubectl delete bucket -n app-project1-dev app-bucket      # reclaim Delete: the store goes away in the target too');
say('Remove everything: make demo-down');
process.exit(0);
