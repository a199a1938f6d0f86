// make demo-placement: claims spread over three target clusters by the scheduler, live. Brings up
// "placement" (control) and the targets "eu-1", "eu-2" and "us-1" (local control planes, made afresh
// each run), registers each target as a Provider labelled by region, applies
// config/samples/placement/ (one class with a providerSelector, eight Bucket claims) and prints where
// each claim went and why; then upgrades the MinIO Operator on the three targets in a wave, live. `make demo-down` removes it all.
import { readdirSync } from 'node:fs';
import { down, up } from '../test/kit/cluster.ts';
import { eventually } from '../test/kit/eventually.ts';
import { background, clientOf, file, providerSecret, say, stopProcesses, startProvider } from './lib/demo.ts';
import { applyManifests, installCrds, installOperatorBundle, loadManifests } from '../test/kit/manifests.ts';
import { Buckets } from '../src/app.ts';
import type { Bucket } from '../src/apis/storage.ts';
import type { KubeObjectLike } from '../src/kit/kube/client.ts';
import { OperatorUpgrades } from '../src/runtime/operators/waves.ts';
import { Providers, type ProviderObject } from '../src/runtime/providers/provider.ts';
import { cond } from '../test/kit/conditions.ts';

const TARGETS = ['eu-1', 'eu-2', 'us-1'] as const;
const NAMESPACE = 'app-project1-dev';
const sample = (f: string) => loadManifests(file('config', 'samples', f));

await stopProcesses(); // a previous demo's processes, if any
say(
  `1/6  Starting fresh local control planes "placement" (control), ${TARGETS.map((t) => `"${t}"`).join(', ')} (real etcd + kube-apiserver)...`,
);
await down(['placement', ...TARGETS]);
const [controlCluster, ...targets] = await up(['placement', ...TARGETS], (l) => say(`     ${l}`));
const control = clientOf(controlCluster!.kubeconfig);

say("2/6  Installing the CRDs; each target's admin installs the Rook MinIO operator (played by its STAND-IN:");
say('     local clusters run no pods; test/fakes/fake-minio-operator.ts writes what the operator');
say('     writes)...');
await installCrds(
  control,
  readdirSync(file('crds')).map((f) => file('crds', f)),
);
for (const t of targets) {
  await installOperatorBundle(clientOf(t!.kubeconfig), 'rook-minio');
  // Also the Deployment controller's status writes (deployment-rollout.ts), for act 6's rollouts.
  background(`fake-operators-${t!.name}`, [
    file('test', 'fakes', 'fake-operators.ts'),
    t!.kubeconfig,
    'rook-minio,minio-operator,deployments',
  ]);
}

say('3/6  Building provider-rook (tsc) and starting it against control...');
const { metrics } = await startProvider(controlCluster!.kubeconfig);
say(`     metrics http://${metrics}/metrics (crossplane_managed_resource_*, provider_rook_provider_ready), probes /healthz and /readyz`);

async function providersReady(): Promise<void> {
  await eventually(
    async () => {
      const providers = (
        await control.list<KubeObjectLike & { status?: { conditions?: { type: string; status: string }[] } }>(Providers, {
          namespace: 'rook-infra-dev',
        })
      ).items;
      return providers.length === TARGETS.length && providers.every((p) => cond(p, 'Ready')?.status === 'True');
    },
    'the Providers to be Ready',
    { timeoutMs: 60_000, delayMs: 250, maxDelayMs: 250 },
  ).catch((): never => {
    say('The Providers did not become Ready within 60 s; see .local/demo/provider-rook.log');
    process.exit(1);
  });
}

say('4/6  Applying config/samples/placement/:');
await applyManifests(control, sample('00-namespaces.yaml'));
for (const t of targets) await providerSecret(control, { namespace: 'rook-infra-dev', name: `${t!.name}-creds` }, t!.kubeconfig);
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
const scheduled = (b: Bucket): Cond | undefined => cond(b as { status?: { conditions?: Cond[] } }, 'Scheduled');
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

say('5/6  Applying 05-bucket-in-us.yaml: two claims that narrow the choice to region=us (us-1 holds at most 3).');
await applyManifests(control, sample('placement/05-bucket-in-us.yaml'));
show(await settled(['us-customers', 'us-archive']));
say('     us-archive waits; it is placed, without being touched, once us-1 has room (a claim there deleted, or');
say('     a larger spec.capacity.maxResources).');

say('6/6  An operator upgrade in waves. 06-tenants.yaml: a Tenant on each target, so provider-rook installs');
say('     the MinIO Operator there at the version each Provider names (v7.0.1)...');
await applyManifests(control, sample('placement/06-tenants.yaml'));
type OperatorSeen = { name: string; version?: string; installedBy?: string; upgrade?: { to: string; phase: string; message?: string } };
const minioOperator = async (): Promise<Record<string, OperatorSeen | undefined>> => {
  const items = (await control.list<ProviderObject>(Providers, { namespace: 'rook-infra-dev' })).items;
  return Object.fromEntries(items.map((p) => [p.metadata.name, p.status?.operators?.find((o) => o.name === 'minio-operator')]));
};
await eventually(
  async () => Object.values(await minioOperator()).every((o) => o?.version === 'v7.0.1'),
  'the MinIO Operator on every target',
  { timeoutMs: 60_000, delayMs: 250 },
).catch((): never => {
  say('The MinIO Operator was not installed within 60 s; see .local/demo/provider-rook.log');
  process.exit(1);
});
for (const [name, o] of Object.entries(await minioOperator()))
  say(`     ${name.padEnd(6)} minio-operator ${o!.version} installed by ${o!.installedBy}`);
say('     07-operator-upgrade.yaml: OperatorUpgrade to v7.1.1 of every tier=standard Provider, one at a time;');
say('     live, as each Provider reports it (the rollouts are the Deployment stand-in):');
await applyManifests(control, sample('placement/07-operator-upgrade.yaml'));
const started = Date.now();
let last = '';
await eventually(
  async () => {
    const wave = await control.get<KubeObjectLike & { status?: { phase?: string } }>(OperatorUpgrades, {
      namespace: 'rook-infra-dev',
      name: 'minio-operator-v7.1.1',
    });
    const seen = await minioOperator();
    const line = Object.entries(seen)
      .map(([name, o]) => `${name} ${o?.version ?? '-'}${o?.upgrade && o.upgrade.phase !== 'Complete' ? ` (${o.upgrade.phase})` : ''}`)
      .join('   ');
    const now = `wave ${wave?.status?.phase ?? 'new'}: ${line}`;
    if (now !== last) say(`     ${`${((Date.now() - started) / 1000).toFixed(1)} s`.padStart(6)}  ${(last = now)}`);
    return wave?.status?.phase === 'Complete' || wave?.status?.phase === 'Failed';
  },
  'the wave to end',
  { timeoutMs: 90_000, delayMs: 100, maxDelayMs: 100 },
).catch((): never => {
  say('The wave did not end within 90 s; see .local/demo/provider-rook.log');
  process.exit(1);
});
say('     Going back is the same operation: the same OperatorUpgrade with version v7.0.1.');
say();
say('Explore (provider-rook and the stand-ins keep running):');
say(`  export KUBECONFIG=${controlCluster!.kubeconfig}`);
say('  kubectl get providers -n rook-infra-dev --show-labels        # CAPACITY, USERS');
say(`  kubectl get buckets -n ${NAMESPACE}                            # PROVIDER column`);
say('  kubectl get objectstores.minio.rook.crossplane.io -n rook-infra-dev');
say(`  kubectl describe bucket -n ${NAMESPACE} us-archive            # Scheduled=False CapacityExhausted, and its Events`);
say('  kubectl patch provider -n rook-infra-dev us-1 --type merge -p \'{"spec":{"capacity":{"maxResources":4}}}\'');
say('  kubectl get providers,operatorupgrades -n rook-infra-dev      # OPERATOR-VERSIONS; PHASE, STOPPED-AT');
say('  kubectl patch operatorupgrade -n rook-infra-dev minio-operator-v7.1.1 --type merge -p \'{"spec":{"version":"v7.0.1"}}\'');
say('Remove everything: make demo-down');
process.exit(0);
