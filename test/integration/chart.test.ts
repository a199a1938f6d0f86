// The Helm chart, as an API server sees it: each rendering (defaults, and every option switched on)
// is applied with a server-side dry run to a real control plane, which validates every object
// against its schema and admission without storing anything. Also: the chart passes every process
// flag through, so no flag is reachable only by editing the manifests.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as yaml from 'js-yaml';
import { render } from '../../hack/chart.ts';
import { installCrds, typeFor, type Manifest } from '../kit/manifests.ts';
import { FLAGS } from '../../src/flags.ts';
import type { KubeClient } from '../../src/kit/kube/client.ts';
import { CustomResourceDefinitions, Namespaces, type ResourceType } from '../../src/kit/kube/resources.ts';
import { adminClient, testCluster } from '../kit/env.ts';
import { createNamespace, ourCrds } from '../kit/provider.ts';

const monitoring = (kind: string, plural: string): ResourceType => ({
  apiVersion: 'monitoring.coreos.com/v1',
  kind,
  plural,
  namespaced: true,
});
const ServiceMonitors = monitoring('ServiceMonitor', 'servicemonitors');
const PrometheusRules = monitoring('PrometheusRule', 'prometheusrules');

let control: KubeClient;
let ns: string;
const watched: string[] = [];

/** The Prometheus Operator's two kinds, as open CRDs: stand-ins, so their objects can be dry-run at all. */
async function monitoringCrds(): Promise<void> {
  for (const t of [ServiceMonitors, PrometheusRules]) {
    await control.apply(CustomResourceDefinitions, {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `${t.plural}.monitoring.coreos.com` },
      spec: {
        group: 'monitoring.coreos.com',
        scope: 'Namespaced',
        names: { kind: t.kind, plural: t.plural, listKind: `${t.kind}List`, singular: t.kind.toLowerCase() },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          },
        ],
      },
    } as never);
  }
}

const objects = (text: string): Manifest[] => (yaml.loadAll(text) as (Manifest | null)[]).filter((d): d is Manifest => Boolean(d));
const typeOf = (doc: Manifest): ResourceType =>
  [ServiceMonitors, PrometheusRules].find((t) => t.apiVersion === doc.apiVersion && t.kind === doc.kind) ?? typeFor(doc);

beforeAll(async () => {
  control = adminClient(testCluster('control'));
  await installCrds(control, ourCrds());
  await monitoringCrds();
  ns = await createNamespace(control, 'chart');
  for (let i = 0; i < 2; i++) watched.push(await createNamespace(control, 'chart-watched'));
}, 120_000);

afterAll(async () => {
  for (const n of [ns, ...watched]) await control.delete(Namespaces, { name: n }).catch(() => undefined);
});

describe('charts/provider-rook', () => {
  const everything = (): string[] => [
    `watchNamespaces={${watched.join(',')}}`,
    'controlPlaneId=cp-1',
    'metrics.serviceMonitor.enabled=true',
    'prometheusRule.enabled=true',
    'leaks.mode=report',
    'logLevel=debug',
    'allowExecCredentials=false',
  ];

  it.each([
    ['the default values', (): string[] => []],
    ['every option switched on', everything],
  ])('renders objects the API server admits, with %s', async (_what, values) => {
    const docs = objects(await render(values(), ns));
    expect(docs.map((d) => d.kind)).toEqual(
      expect.arrayContaining(['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'Deployment', 'Service']),
    );
    for (const doc of docs) {
      const applied = await control.apply(typeOf(doc), doc, undefined, { dryRun: true });
      expect([doc.kind, doc.metadata.name, applied.metadata.name]).toEqual([doc.kind, doc.metadata.name, doc.metadata.name]);
    }
    // A dry run stores nothing.
    expect(await control.get(typeOf(docs.find((d) => d.kind === 'Deployment')!), { namespace: ns, name: 'provider-rook' })).toBeUndefined();
  });

  it('binds Secrets per watched namespace when it watches some, cluster-wide otherwise', async () => {
    const some = objects(await render(everything(), ns));
    expect(
      some
        .filter((d) => d.metadata.name === 'provider-rook:secrets' && d.kind === 'RoleBinding')
        .map((d) => d.metadata.namespace)
        .sort(),
    ).toEqual([...watched].sort());
    expect(some.some((d) => d.kind === 'ClusterRoleBinding' && d.metadata.name === 'provider-rook:secrets')).toBe(false);
    const all = objects(await render([], ns));
    expect(all.some((d) => d.kind === 'ClusterRoleBinding' && d.metadata.name === 'provider-rook:secrets')).toBe(true);
  });

  it('refuses values its schema does not allow, naming the value', async () => {
    await expect(render(['logLevel=loud'])).rejects.toThrow(/logLevel/);
    await expect(render(['leaks.mode=sometimes'])).rejects.toThrow(/leaks\.mode|mode/);
    await expect(render(['poll=soon'])).rejects.toThrow(/poll/);
    await expect(render(['replicaz=2'])).rejects.toThrow(/replicaz/);
    await expect(render(['metrics.serviceMonitor.interval=soon'])).rejects.toThrow(/interval/);
  });

  it('takes what users set in the forms they set it: no replicas (stopped), a Prometheus scrape interval', async () => {
    const deployment = objects(await render(['replicas=0'], ns)).find((d) => d.kind === 'Deployment') as Manifest & {
      spec: { replicas: number };
    };
    expect(deployment.spec.replicas).toBe(0);
    const monitor = objects(await render(['metrics.serviceMonitor.enabled=true', 'metrics.serviceMonitor.interval=1m30s'], ns)).find(
      (d) => d.kind === 'ServiceMonitor',
    ) as Manifest & { spec: { endpoints: { interval: string }[] } };
    expect(monitor.spec.endpoints[0]!.interval).toBe('1m30s');
  });

  it('keeps one of two replicas through voluntary disruptions, and has no budget with one', async () => {
    const budgets = (docs: Manifest[]) => docs.filter((d) => d.kind === 'PodDisruptionBudget') as (Manifest & { spec: object })[];
    expect(budgets(objects(await render([], ns))).map((d) => d.spec)).toEqual([
      {
        maxUnavailable: 1,
        selector: { matchLabels: { 'app.kubernetes.io/name': 'provider-rook', 'app.kubernetes.io/instance': 'provider-rook' } },
      },
    ]);
    expect(budgets(objects(await render(['replicas=1'], ns)))).toEqual([]);
  });

  it('passes every process flag through its values', async () => {
    const flags = Object.keys(FLAGS).filter((f) => f !== 'kubeconfig'); // in a pod: its ServiceAccount
    expect(flags.length).toBeGreaterThan(10);
    const deployment = objects(await render(everything(), ns)).find((d) => d.kind === 'Deployment') as Manifest & {
      spec: { template: { spec: { containers: { args: string[] }[] } } };
    };
    const args = deployment.spec.template.spec.containers[0]!.args.map((a) => a.split('=')[0]);
    expect(flags.filter((f) => !args.includes(`--${f}`))).toEqual([]);
  });
});
