// One way to start provider-rook for an integration test, on the shared local control planes: our
// CRDs in the control cluster, the target's operator bundles with the stand-ins that play them,
// namespaces by role, a registered Provider, and provider-rook watching those namespaces. It
// registers its own beforeAll and afterAll; the test reads what it made from the object it returns.
import path from 'node:path';
import { afterAll, beforeAll } from '@jest/globals';
import type { App, AppOptions } from '../../src/app.ts';
import type { KubeClient } from '../../src/kit/kube/client.ts';
import { Buckets } from '../../src/app.ts';
import type { KubeObjectLike } from '../../src/kit/kube/client.ts';
import { KubeError } from '../../src/kit/kube/errors.ts';
import { Namespaces, resourcePath } from '../../src/kit/kube/resources.ts';
import { LABEL_PROTECTED } from '../../src/runtime/labels.ts';
import { installOperators, standInsFor } from '../fakes/backends.ts';
import { eventually } from './eventually.ts';
import { down, repoRoot, up, type LocalCluster } from './cluster.ts';
import { adminClient, testCluster } from './env.ts';
import { applyManifests, loadManifests } from './manifests.ts';
import { createNamespace, installCrds, installRoles, ourCrds, registerProvider, startTestApp } from './provider.ts';

/** A stand-in for a target's operator: started before provider-rook, stopped after it. */
interface StandIn {
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface FixtureOptions<R extends string> {
  /** A target cluster of the test's own, by name: started before and stopped after it. Unset: the shared target. */
  cluster?: string;
  /** A control cluster of the test's own too, by name (for a test that counts what its API server serves). Unset: the shared one. */
  controlCluster?: string;
  /** The namespaces made in the control cluster, by role: each value is the prefix of a unique name. */
  namespaces: Record<R, string>;
  /** Namespaces provider-rook watches besides those above, which the test makes itself (in `before`), e.g. the samples' fixed ones. */
  watch?: string[];
  /** The target's Provider: its name, and the role of the namespace it is registered in. Unset: none. */
  provider?: { name: string; in: NoInfer<R> };
  /** Operator bundles pre-installed in the target, as its admin would ('rook-minio' when unset). */
  operators?: string[];
  /** The stand-ins that play the target's operators (those of the operators above, when unset: test/fakes/backends.ts). */
  standIns?: (target: KubeClient) => StandIn[] | Promise<StandIn[]>;
  /** The default stand-ins run a real S3 server for each store. */
  s3?: boolean;
  /** Also in the control cluster: the admission policies that protect data (config/admission/), the roles of config/rbac/. */
  admission?: boolean;
  roles?: boolean;
  /** provider-rook's options (it watches the namespaces above, and polls at the users' default unless these say otherwise). */
  app?: Partial<AppOptions>;
  /** Runs once the namespaces and the Provider exist, before provider-rook starts. */
  before?: (f: Fixture<R>) => void | Promise<void>;
  /** Runs once provider-rook and the stand-ins have stopped. */
  after?: () => void | Promise<void>;
  timeoutMs?: number;
}

export interface Fixture<R extends string> {
  /** The control cluster, and its admin client. */
  controlCluster: LocalCluster;
  control: KubeClient;
  /** The target cluster, and its admin client. */
  cluster: LocalCluster;
  target: KubeClient;
  /** The namespaces made, by role. */
  ns: Record<R, string>;
  app: App;
  standIns: StandIn[];
  /** Stops provider-rook, as a crash or a rollout would; `restart` brings it back. */
  stop(): Promise<void>;
  /**
   * Starts provider-rook again (stopping it first if it runs): the namespaces, options and
   * control-plane id it had, unless `opts` says otherwise (a new `controlPlaneId` starts another
   * instance, to which what the last one made is foreign).
   */
  restart(opts?: Partial<AppOptions>): Promise<App>;
}

/**
 * Waits until the API server enforces the protection policy just applied (its admission plugin
 * loads policies a moment after they are written): until a dry-run delete of a protected probe
 * claim is refused. The probe goes before provider-rook starts.
 */
async function admissionInEffect(control: KubeClient, namespace: string): Promise<void> {
  const key = { namespace, name: 'admission-probe' };
  await control.create(Buckets, {
    apiVersion: Buckets.apiVersion,
    kind: Buckets.kind,
    metadata: { ...key, labels: { [LABEL_PROTECTED]: 'true' } },
    spec: { classRef: { name: 'none' }, writeConnectionSecretToRef: { name: 'none' } },
  } as KubeObjectLike);
  await eventually(
    () =>
      control.request('DELETE', resourcePath(Buckets, namespace, key.name), { query: { dryRun: 'All' } }).then(
        () => undefined,
        (err: unknown) => (err instanceof KubeError && err.code === 403 ? true : undefined),
      ),
    'the protection policy to be in effect',
  );
  await control.mergePatch(Buckets, key, { metadata: { labels: { [LABEL_PROTECTED]: null } } });
  await control.delete(Buckets, key);
}

/** On the namespaces of a file that asks for the admission policies: the finalizer policy is bound to them alone. */
const ADMISSION_LABEL = 'provider-rook.test/admission';

export function withProviderRook<R extends string>(o: FixtureOptions<R>): Fixture<R> {
  const f = { standIns: [] as StandIn[] } as unknown as Fixture<R>;
  beforeAll(async () => {
    const own = [o.controlCluster, o.cluster].filter((c): c is string => c !== undefined);
    const started = own.length ? await up(own) : [];
    f.controlCluster = o.controlCluster ? started[0]! : testCluster('control');
    f.cluster = o.cluster ? started.at(-1)! : testCluster('target');
    f.control = adminClient(f.controlCluster);
    f.target = adminClient(f.cluster);
    await installCrds(f.control, ourCrds());
    if (o.admission) {
      await applyManifests(f.control, loadManifests(path.join(repoRoot, 'config', 'admission', 'protection.yaml')));
      // Bound to the namespaces of the files that ask for it: a policy is cluster-wide, and files
      // running beside these ones check what happens without it (a finalizer an app team strips).
      const finalizers = loadManifests(path.join(repoRoot, 'config', 'admission', 'finalizers.yaml')).map((m) =>
        m.kind === 'ValidatingAdmissionPolicyBinding'
          ? { ...m, spec: { ...(m.spec as object), matchResources: { namespaceSelector: { matchLabels: { [ADMISSION_LABEL]: 'true' } } } } }
          : m,
      );
      await applyManifests(f.control, finalizers);
    }
    if (o.roles) await installRoles(f.control);
    const operators = o.operators ?? ['rook-minio'];
    await installOperators(f.target, operators);
    for (const s of await (o.standIns?.(f.target) ?? standInsFor(f.target, operators, { s3: o.s3 ?? false }))) {
      await s.start();
      f.standIns.push(s);
    }
    const roles = Object.entries(o.namespaces) as [R, string][];
    f.ns = Object.fromEntries(
      await Promise.all(roles.map(async ([role, prefix]) => [role, await createNamespace(f.control, prefix)])),
    ) as Record<R, string>;
    if (o.admission) {
      for (const ns of Object.values<string>(f.ns))
        await f.control.mergePatch(Namespaces, { name: ns }, { metadata: { labels: { [ADMISSION_LABEL]: 'true' } } });
      await admissionInEffect(f.control, Object.values<string>(f.ns)[0]!);
    }
    if (o.provider) await registerProvider(f.control, { namespace: f.ns[o.provider.in], name: o.provider.name }, f.cluster);
    await o.before?.(f);
    f.app = await startTestApp(f.controlCluster, appOptions());
  }, o.timeoutMs ?? 120_000);
  const appOptions = (): Partial<AppOptions> => ({ namespaces: [...(o.watch ?? []), ...Object.values<string>(f.ns)], ...o.app });
  let stopped: Promise<void> | undefined;
  f.stop = () => (stopped ??= f.app.stop());
  f.restart = async (opts = {}) => {
    await f.stop();
    f.app = await startTestApp(f.controlCluster, { ...appOptions(), controlPlaneId: f.app.controlPlaneId, ...opts });
    stopped = undefined;
    return f.app;
  };
  afterAll(async () => {
    if (f.app) await f.stop();
    for (const s of f.standIns) await s.stop();
    await o.after?.();
    const own = [o.controlCluster, o.cluster].filter((c): c is string => c !== undefined);
    if (own.length) await down(own);
  });
  return f;
}
