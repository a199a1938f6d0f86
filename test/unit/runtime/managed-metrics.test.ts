// The example dashboard and alert rules (config/monitoring/) ask only for series provider-rook
// exports: a renamed metric fails here, not silently on someone's on-call screen.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { load } from 'js-yaml';
import { registry } from '../../../src/kit/metrics.ts';
import { waitingOn } from '../../../src/runtime/managed-metrics.ts';

const file = (name: string): string => readFileSync(fileURLToPath(new URL(`../../../config/monitoring/${name}`, import.meta.url)), 'utf8');
const OURS = /\b(?:crossplane|provider_rook|controller_runtime|workqueue|rest_client|process|nodejs|leader_election)_[a-z_]+\b/g;
/** The metric families an expression reads (a histogram's _bucket/_count/_sum series by its family). */
const families = (expr: string): string[] => [...expr.matchAll(OURS)].map((m) => m[0].replace(/_(bucket|count|sum)$/, ''));

describe('config/monitoring', () => {
  const alerts = load(file('alerts.yaml')) as { spec: { groups: { rules: { alert: string; expr: string; for: string }[] }[] } };
  const rules = alerts.spec.groups.flatMap((g) => g.rules);
  const dashboard = JSON.parse(file('dashboard.json')) as { panels: { title: string; targets: { expr: string }[] }[] };
  const exprs = [...rules.map((r) => [r.alert, r.expr]), ...dashboard.panels.flatMap((p) => p.targets.map((t) => [p.title, t.expr]))] as [
    string,
    string,
  ][];

  it.each(exprs)('%s reads only metrics provider-rook exports: %s', (_where, expr) => {
    const names = families(expr);
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) expect([name, registry.getSingleMetric(name) !== undefined]).toEqual([name, true]);
  });

  it('alerts on a resource not Ready for 15 minutes and on an unreachable target', () => {
    expect(rules.find((r) => r.alert === 'ProviderRookManagedResourcesNotReady')).toMatchObject({ for: '15m' });
    expect(rules.find((r) => r.alert === 'ProviderRookTargetUnreachable')?.expr).toContain('provider_rook_provider_ready == 0');
  });
});

describe('waitingOn: what a managed resource has waited on for longer than the threshold', () => {
  const now = Date.parse('2026-01-01T01:00:00Z');
  const at = (minutesAgo: number) => new Date(now - minutesAgo * 60_000).toISOString();
  const mr = (conditions: { type: string; status: string; reason: string; lastTransitionTime: string }[], deletionTimestamp?: string) => ({
    metadata: { name: 'm', ...(deletionTimestamp ? { deletionTimestamp } : {}) },
    status: { conditions },
  });
  it.each([
    [
      'a Synced=False older than 5 minutes, by its reason',
      mr([{ type: 'Synced', status: 'False', reason: 'Unreachable', lastTransitionTime: at(6) }]),
      'Unreachable',
    ],
    [
      'a Synced=False younger than that: not yet',
      mr([{ type: 'Synced', status: 'False', reason: 'Unreachable', lastTransitionTime: at(4) }]),
      undefined,
    ],
    [
      'a Ready=False that lasts (an operator that never makes the store ready)',
      mr([{ type: 'Ready', status: 'False', reason: 'Unavailable', lastTransitionTime: at(10) }]),
      'Unavailable',
    ],
    [
      'a deletion that does not end',
      mr([{ type: 'Ready', status: 'True', reason: 'Available', lastTransitionTime: at(60) }], at(7)),
      'Deleting',
    ],
    ['a resource at rest', mr([{ type: 'Ready', status: 'True', reason: 'Available', lastTransitionTime: at(60) }]), undefined],
  ])('%s', (_name, resource, want) => expect(waitingOn(resource, now)).toBe(want));
});
