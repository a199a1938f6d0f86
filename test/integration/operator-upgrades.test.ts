// Operator versions and upgrades in waves, against real API servers. Four Providers reach one target
// of this file's own, each with the MinIO Operator in a namespace of its own: provider-rook installs
// v7.0.1 for a, b and c; someone else installed it for d. A Deployment stand-in plays the Deployment
// controller (local control planes run no pods).
import { beforeAll, describe, expect, it } from '@jest/globals';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { ClusterRoles, CustomResourceDefinitions, Deployments } from '../../src/kit/kube/resources.ts';
import { OperatorUpgrades } from '../../src/runtime/operators/waves.ts';
import { Providers, type ProviderObject } from '../../src/runtime/providers/provider.ts';
import { installOperatorBundle } from '../kit/manifests.ts';
import { providerSecretKeys, writeSecret } from '../kit/provider.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { SMALL_POOL } from '../fakes/fake-tenant-operator.ts';
import { DeploymentRollout } from '../fakes/deployment-rollout.ts';
import { eventually } from '../kit/eventually.ts';
import { cond } from '../kit/conditions.ts';

const TARGET = `it-upgrades-${process.pid}`;
const OLD = 'v7.0.1';
const NEW = 'v7.1.1';
type Wave = KubeObjectLike & {
  status?: {
    phase?: string;
    upgraded?: string[];
    upgrading?: string[];
    stoppedAt?: { provider: string; message: string };
    conditions?: { type: string; status: string; reason: string; message?: string }[];
  };
};
type Deployment = KubeObjectLike & { spec: { template: { spec: { containers: { image: string }[] } } } };

let control: KubeClient;
let target: KubeClient;
let ns: string;
let rollout: DeploymentRollout;
let targetCluster: Parameters<typeof providerSecretKeys>[0];
const ours = ['a', 'b', 'c'];

const operatorNamespace = (p: string) => (p === 'd' ? 'minio-operator' : `op-${p}`);
const imageIn = async (p: string) =>
  (await target.get<Deployment>(Deployments, { namespace: operatorNamespace(p), name: 'minio-operator' }))?.spec.template.spec.containers[0]
    ?.image;
const operatorOf = async (p: string) =>
  (await control.get<ProviderObject>(Providers, { namespace: ns, name: p }))?.status?.operators?.find((o) => o.name === 'minio-operator');

async function wave(
  name: string,
  version: string,
  selector: Record<string, string>,
  maxConcurrent = 1,
  operator = 'minio-operator',
): Promise<void> {
  await control.apply(OperatorUpgrades, {
    apiVersion: OperatorUpgrades.apiVersion,
    kind: OperatorUpgrades.kind,
    metadata: { name, namespace: ns },
    spec: {
      operator,
      version,
      providerSelector: { matchLabels: selector },
      maxConcurrent,
    },
  } as KubeObjectLike);
}

/** The wave's status once `done` says so, checking at every read that it never runs more than `max` at once. */
async function watchWave(name: string, done: (w: Wave) => boolean, max = 1): Promise<Wave> {
  return eventually(
    async () => {
      const w = await control.get<Wave>(OperatorUpgrades, { namespace: ns, name });
      expect(w?.status?.upgrading?.length ?? 0).toBeLessThanOrEqual(max);
      return w && done(w) ? w : undefined;
    },
    `OperatorUpgrade ${name}`,
    {
      timeoutMs: 60_000,
      explain: async () =>
        JSON.stringify([
          (await control.get<Wave>(OperatorUpgrades, { namespace: ns, name }))?.status,
          ...(await Promise.all(ours.map(operatorOf))),
          (
            await target.get<Deployment & { status?: unknown; metadata: { generation?: number } }>(Deployments, {
              namespace: 'op-a',
              name: 'minio-operator',
            })
          )?.status,
          (await target.get<Deployment & { metadata: { generation?: number } }>(Deployments, { namespace: 'op-a', name: 'minio-operator' }))
            ?.metadata.generation,
        ]),
    },
  );
}

withProviderRook({
  cluster: TARGET,
  namespaces: { ns: 'upgrades' },
  // d's operator: a cluster admin's install at the old version, no marks of ours.
  operators: [],
  standIns: (t) => [(rollout = new DeploymentRollout(t, (d) => d.metadata.name === 'minio-operator'))],
  before: async (f) => {
    ({ control, target, cluster: targetCluster } = f);
    ns = f.ns.ns;
    await installOperatorBundle(target, 'minio-operator', OLD);
    for (const p of [...ours, 'd']) {
      await writeSecret(control, { namespace: ns, name: `${p}-creds` }, providerSecretKeys(f.cluster));
      await control.apply(Providers, {
        apiVersion: Providers.apiVersion,
        kind: 'Provider',
        metadata: { name: p, namespace: ns, labels: { wave: p === 'd' ? 'theirs' : 'ours' } },
        spec: {
          credentialsSecretRef: { name: `${p}-creds` },
          // Each of ours installs one of its own beside the admin's CRD, as its platform team says.
          operators: [
            { name: 'minio-operator', install: true, installBesideOthers: p !== 'd', version: OLD, namespace: operatorNamespace(p) },
          ],
          ...(p === 'd' ? {} : { allowedNamespaces: [`tenant-${p}`, operatorNamespace(p)] }),
        },
      } as KubeObjectLike);
    }
  },
  timeoutMs: 180_000,
});

// A Tenant on each of ours makes provider-rook install the operator there, at the version asked.
beforeAll(async () => {
  for (const p of ours) {
    await control.apply(kinds.Tenant, {
      apiVersion: kinds.Tenant.apiVersion,
      kind: kinds.Tenant.kind,
      metadata: { name: `t-${p}`, namespace: ns },
      spec: {
        forProvider: { pools: [SMALL_POOL] },
        targetNamespace: `tenant-${p}`,
        providerRef: { name: p },
      },
    } as KubeObjectLike);
  }
});

describe('operator versions', () => {
  it('each Provider says which version its target runs, and who installed it', async () => {
    for (const p of [...ours, 'd']) {
      const seen = await eventually(
        async () => {
          const o = await operatorOf(p);
          return o?.version ? o : undefined;
        },
        `Provider ${p} to report its operator's version`,
        {
          explain: async () =>
            JSON.stringify([(await control.get<Wave>(kinds.Tenant, { namespace: ns, name: `t-${p}` }))?.status, await operatorOf(p)]),
        },
      );
      expect(seen).toMatchObject({ version: OLD, installedBy: p === 'd' ? 'other' : 'provider-rook', present: true });
      expect(await imageIn(p)).toBe(`minio/operator:${OLD}`);
    }
  }, 60_000);

  it('a version provider-rook does not ship is refused on the Provider, naming the field and the versions it ships', async () => {
    await control.apply(Providers, {
      apiVersion: Providers.apiVersion,
      kind: 'Provider',
      metadata: { name: 'odd', namespace: ns },
      spec: { credentialsSecretRef: { name: 'a-creds' }, operators: [{ name: 'minio-operator', version: 'v9.9.9' }] },
    } as KubeObjectLike);
    const synced = await eventually(async () => {
      const c = cond(await control.get<ProviderObject>(Providers, { namespace: ns, name: 'odd' }), 'Synced');
      return c?.status === 'False' ? c : undefined;
    }, 'the Provider to refuse the version');
    expect(synced).toMatchObject({
      reason: 'OperatorVersionUnknown',
      message: `spec.operators[0].version is v9.9.9, a version of the MinIO Operator provider-rook does not ship: use one of ${OLD}, ${NEW}`,
    });
    await control.delete(Providers, { namespace: ns, name: 'odd' });
  });
});

describe('upgrade waves', () => {
  it('upgrades the selected Providers one at a time, each rolled out before the next begins', async () => {
    // The admin's CRD and ClusterRole, which ours' installs use beside their own: no wave of ours changes them.
    const admins = () =>
      Promise.all([
        target.get(CustomResourceDefinitions, { name: 'tenants.minio.min.io' }),
        target.get(ClusterRoles, { name: 'minio-operator-role' }),
      ]).then((objs) => objs.map((o) => o?.metadata.resourceVersion));
    const before = await admins();
    await wave('to-new', NEW, { wave: 'ours' });
    const w = await watchWave('to-new', (x) => x.status?.phase === 'Complete');
    expect(w.status?.upgraded).toEqual(ours);
    for (const p of ours) {
      expect(await imageIn(p)).toBe(`minio/operator:${NEW}`);
      expect(await operatorOf(p)).toMatchObject({ version: NEW, upgrade: { to: NEW, phase: 'Complete' } });
    }
    expect(await imageIn('d')).toBe(`minio/operator:${OLD}`);
    expect(await admins()).toEqual(before);
  }, 90_000);

  it('stops at the first failure and says where; once the cause goes, it goes on. Going back is the same operation', async () => {
    rollout.broken.add(`minio/operator:${OLD}`);
    await wave('back', OLD, { wave: 'ours' }, 2);
    const stopped = await watchWave('back', (x) => x.status?.phase === 'Failed', 2);
    // a and b began together (two at a time); the wave stops at whichever failed first.
    expect(['a', 'b']).toContain(stopped.status?.stoppedAt?.provider);
    expect(stopped.status?.stoppedAt?.message).toContain('ProgressDeadlineExceeded');
    // The Provider says why in a word: a stalled rollout, looked at again soon, as it may recover by itself.
    expect(await operatorOf(stopped.status!.stoppedAt!.provider)).toMatchObject({
      upgrade: { to: OLD, phase: 'Failed', reason: 'ProgressDeadlineExceeded' },
    });
    expect(cond(stopped, 'Ready')).toMatchObject({ status: 'False', reason: 'UpgradeStopped' });
    // c was never started: at most two at once, and none after the failure.
    const c = await control.get<ProviderObject>(Providers, { namespace: ns, name: 'c' });
    expect(c?.spec.operators?.[0]?.version).toBe(NEW);
    expect(await imageIn('c')).toBe(`minio/operator:${NEW}`);

    rollout.broken.clear();
    await rollout.resync();
    const back = await watchWave('back', (x) => x.status?.phase === 'Complete', 2);
    expect(back.status?.upgraded).toEqual(ours);
    for (const p of ours) expect(await imageIn(p)).toBe(`minio/operator:${OLD}`);
  }, 90_000);

  it("never upgrades someone else's operator, unless the Provider says to adopt it", async () => {
    await wave('theirs', NEW, { wave: 'theirs' });
    const held = await watchWave('theirs', (x) => x.status?.phase === 'Failed');
    expect(held.status?.stoppedAt).toMatchObject({ provider: 'd' });
    expect(held.status?.stoppedAt?.message).toContain('Held: someone else installed the MinIO Operator');
    expect(await imageIn('d')).toBe(`minio/operator:${OLD}`);

    const d = (await control.get<ProviderObject>(Providers, { namespace: ns, name: 'd' }))!;
    await control.update(Providers, { ...d, spec: { ...d.spec, operators: [{ ...d.spec.operators![0]!, adopt: true }] } });
    await watchWave('theirs', (x) => x.status?.phase === 'Complete');
    expect(await imageIn('d')).toBe(`minio/operator:${NEW}`);
    expect(await operatorOf('d')).toMatchObject({ installedBy: 'other', version: NEW });
  }, 90_000);

  it("a Provider of the same target and namespace cannot change the version of another Provider's install, unless it adopts it", async () => {
    const before = await imageIn('a');
    // As installed: a's waves above left their mark of who sets the version; an install leaves none.
    await target.mergePatch(
      Deployments,
      { namespace: 'op-a', name: 'minio-operator' },
      { metadata: { annotations: { 'rook.crossplane.io/operator-version-set-by': null } } },
    );
    await writeSecret(control, { namespace: ns, name: 'e-creds' }, providerSecretKeys(targetCluster));
    await control.apply(Providers, {
      apiVersion: Providers.apiVersion,
      kind: 'Provider',
      metadata: { name: 'e', namespace: ns },
      spec: {
        credentialsSecretRef: { name: 'e-creds' },
        operators: [{ name: 'minio-operator', version: before === `minio/operator:${NEW}` ? OLD : NEW, namespace: 'op-a' }],
        allowedNamespaces: ['op-a'],
      },
    } as KubeObjectLike);
    const held = await eventually(async () => {
      const o = await operatorOf('e');
      return o?.upgrade?.phase === 'Held' ? o : undefined;
    }, "Provider e's upgrade to be Held");
    expect(held.upgrade?.message).toContain(`Provider ${ns}/a installed this MinIO Operator`);
    expect(await imageIn('a')).toBe(before);

    const e = (await control.get<ProviderObject>(Providers, { namespace: ns, name: 'e' }))!;
    const wanted = e.spec.operators![0]!.version!;
    await control.update(Providers, { ...e, spec: { ...e.spec, operators: [{ ...e.spec.operators![0]!, adopt: true }] } });
    await eventually(async () => (await imageIn('a')) === `minio/operator:${wanted}`, 'the version Provider e asks, once it adopts');
    await control.delete(Providers, { namespace: ns, name: 'e' });
  }, 90_000);

  it('an operator provider-rook ships no bundle for is refused at admission, naming the field, in a wave and on a Provider', async () => {
    const refused = await wave('unknown', NEW, { wave: 'ours' }, 1, 'no-such-operator').then(
      () => undefined,
      (e: Error) => e,
    );
    expect(refused?.message).toMatch(/spec\.operator: Unsupported value: "no-such-operator"/);
    const p = (await control.get<ProviderObject>(Providers, { namespace: ns, name: 'a' }))!;
    const onProvider = await control
      .update(Providers, { ...p, spec: { ...p.spec, operators: [...p.spec.operators!, { name: 'no-such-operator' }] } } as ProviderObject)
      .then(
        () => undefined,
        (e: Error) => e,
      );
    expect(onProvider?.message).toMatch(/spec\.operators\[1\]\.name: Unsupported value: "no-such-operator"/);
  });

  it('a selector that matches nothing says so, and changes nothing', async () => {
    await wave('nobody', NEW, { wave: 'no-such' });
    const w = await watchWave('nobody', (x) => x.status?.phase === 'Failed');
    expect(cond(w, 'Ready')).toMatchObject({ status: 'False', reason: 'NoProvidersMatch' });
  });
});
