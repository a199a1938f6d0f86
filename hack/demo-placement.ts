// make demo-placement: claims spread over three target clusters by the scheduler, live. Brings up
// "placement" (control) and the targets "eu-1", "eu-2" and "us-1" (local control planes, made afresh
// each run), registers each target as a Provider labelled by region, applies
// config/samples/placement/ (one class with a providerSelector, eight Bucket claims) and prints where
// each claim went and why. `make demo-down` removes it all.
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { down, freePort, up } from './lib/cluster.ts';
import { eventually } from './lib/eventually.ts';
import { background, clientOf, file, providerSecret, say, stopProcesses } from './lib/demo.ts';
import { applyManifests, installCrds, installOperatorBundle, loadManifests } from './lib/manifests.ts';
import { PROVIDER_NODE_FLAGS } from './lib/node-flags.ts';
import { Buckets } from '../src/app.ts';
import type { Bucket } from '../src/apis/storage.ts';
import type { KubeObjectLike } from '../src/runtime/kube/client.ts';
import { Providers } from '../src/runtime/native/provider.ts';

const TARGETS = ['eu-1', 'eu-2', 'us-1'] as const;
const NAMESPACE = 'app-project1-dev';
const sample = (f: string) => loadManifests(file('config', 'samples', f));

await stopProcesses(); // a previous demo's processes, if any
say(
  `1/5  Starting fresh local control planes "placement" (control), ${TARGETS.map((t) => `"${t}"`).join(', ')} (real etcd + kube-apiserver)...`,
);
await down(['placement', ...TARGETS]);
const [controlCluster, ...targets] = await up(['placement', ...TARGETS], (l) => say(`     ${l}`));
const control = clientOf(controlCluster!.kubeconfig);

say("2/5  Installing the CRDs; each target's admin installs the Rook MinIO operator (played by its STAND-IN:");
say('     local clusters run no pods; test/support/stand-ins/fake-minio-operator.ts writes what the operator');
say('     writes)...');
await installCrds(
  control,
  readdirSync(file('crds')).map((f) => file('crds', f)),
);
for (const t of targets) {
  await installOperatorBundle(clientOf(t!.kubeconfig), 'rook-minio');
  background(`fake-rook-minio-${t!.name}`, [file('test', 'support', 'stand-ins', 'fake-operators.ts'), t!.kubeconfig, 'rook-minio']);
}

say('3/5  Building provider-rook (tsc) and starting it against control...');
execFileSync(process.execPath, [file('node_modules', 'typescript', 'bin', 'tsc'), '-p', file('tsconfig.build.json')], { stdio: 'inherit' });
const metrics = `127.0.0.1:${await freePort()}`;
const pid = background('provider-rook', [
  ...PROVIDER_NODE_FLAGS,
  file('dist', 'main.js'),
  '--kubeconfig',
  controlCluster!.kubeconfig,
  '--metrics-addr',
  metrics,
  '--poll',
  '10s',
]);
say(`     provider-rook pid ${pid}, log .local/demo/provider-rook.log`);
say(`     metrics http://${metrics}/metrics (crossplane_managed_resource_*, provider_rook_provider_ready), probes /healthz and /readyz`);

async function providersReady(): Promise<void> {
  await eventually(
    async () => {
      const providers = (
        await control.list<KubeObjectLike & { status?: { conditions?: { type: string; status: string }[] } }>(Providers, {
          namespace: 'rook-infra-dev',
        })
      ).items;
      return (
        providers.length === TARGETS.length &&
        providers.every((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
      );
    },
    'the Providers to be Ready',
    { timeoutMs: 60_000, delayMs: 250, maxDelayMs: 250 },
  ).catch((): never => {
    say('The Providers did not become Ready within 60 s; see .local/demo/provider-rook.log');
    process.exit(1);
  });
}

say('4/5  Applying config/samples/placement/:');
await applyManifests(control, sample('00-namespaces.yaml'));
for (const t of targets) await providerSecret(control, 'rook-infra-dev', `${t!.name}-creds`, t!.kubeconfig);
for (const [f, what] of [
  ['01-providers.yaml', 'Providers eu-1, eu-2 (region=eu) and us-1 (region=us, capacity 3), and their Secrets'],
  ['wait', 'until provider-rook has reached each target (only usable Providers are chosen)'],
  ['02-objectstoreclass.yaml', 'ObjectStoreClass rook-minio-anywhere: providerSelector tier=standard, no providerRef'],
  ['03-bucketclass.yaml', 'BucketClass bucket-anywhere'],
  ['04-buckets.yaml', 'six Buckets that do not care where'],
] as const) {
  if (f === 'wait') {
    await providersReady();
    say(`     waited  ${''.padEnd(26)} ${what}`);
    continue;
  }
  await applyManifests(control, sample(`placement/${f}`));
  say(`     applied ${f.padEnd(26)} ${what}`);
}

type Cond = { type: string; status: string; reason: string; message?: string };
const scheduled = (b: Bucket): Cond | undefined => (b.status?.conditions as Cond[] | undefined)?.find((c) => c.type === 'Scheduled');
/** Polls until every listed claim has a Scheduled condition, and returns them. */
async function settled(names: string[]): Promise<Bucket[]> {
  return eventually(
    async () => {
      const items = (await control.list<Bucket>(Buckets, { namespace: NAMESPACE })).items.filter((b) => names.includes(b.metadata.name));
      return (
        items.length === names.length &&
        items.every((b) => scheduled(b) && (scheduled(b)!.status === 'False' || b.status?.bindingPhase === 'Bound')) &&
        items
      );
    },
    'the claims to settle',
    { timeoutMs: 90_000, delayMs: 500 },
  ).catch((): never => {
    say('The claims did not settle within 90 s; see .local/demo/provider-rook.log');
    process.exit(1);
  });
}
const show = (claims: Bucket[]): void => {
  say(`     ${'claim'.padEnd(14)} ${'asks for'.padEnd(10)} ${'provider'.padEnd(9)} ${'phase'.padEnd(8)} scheduled`);
  for (const b of claims.sort((x, y) => x.metadata.name.localeCompare(y.metadata.name))) {
    const s = scheduled(b)!;
    const asks =
      Object.entries(b.spec.providerSelector?.matchLabels ?? {})
        .map(([k, v]) => `${k}=${v}`)
        .join(',') || '-';
    say(
      `     ${b.metadata.name.padEnd(14)} ${asks.padEnd(10)} ${(b.status?.providerRef?.name ?? '-').padEnd(9)} ${(b.status?.bindingPhase ?? '-').padEnd(8)} ` +
        `${s.status === 'True' ? 'yes' : `no: ${s.reason}: ${s.message}`}`,
    );
  }
};

const spread = await settled(['photos', 'videos', 'logs', 'backups', 'reports', 'models']);
say('     the six claims, fewest managed resources first (ties by Provider name):');
show(spread);

say('5/5  Applying 05-bucket-in-us.yaml: two claims that narrow the choice to region=us (us-1 holds at most 3).');
await applyManifests(control, sample('placement/05-bucket-in-us.yaml'));
show(await settled(['us-customers', 'us-archive']));
say('     us-archive waits; it is placed, without being touched, once us-1 has room (a claim there deleted, or');
say('     a larger spec.capacity.maxResources).');
say();
say('Explore (provider-rook and the stand-ins keep running):');
say(`  export KUBECONFIG=${controlCluster!.kubeconfig}`);
say('  kubectl get providers -n rook-infra-dev --show-labels        # CAPACITY, USERS');
say(`  kubectl get buckets -n ${NAMESPACE}                            # PROVIDER column`);
say('  kubectl get objectstores.minio.rook.crossplane.io -n rook-infra-dev');
say(`  kubectl describe bucket -n ${NAMESPACE} us-archive            # Scheduled=False CapacityExhausted, and its Events`);
say('  kubectl patch provider -n rook-infra-dev us-1 --type merge -p \'{"spec":{"capacity":{"maxResources":4}}}\'');
say('Remove everything: make demo-down');
process.exit(0);
