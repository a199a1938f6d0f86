// Operator upgrades in waves: an OperatorUpgrade names an operator, a version and the
// Providers (by label, in its namespace) to bring to it, at most maxConcurrent at a time, in name
// order. Each step is a change of one Provider's spec.operators[].version, which that Provider's
// own controller carries out (upgrade.ts); the wave stops at the first Provider whose
// upgrade failed or was held, and says where. Going back is a wave to the older version.
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import { copyOf } from '../../kit/controller/informer.ts';
import { getCondition, setCondition, type Condition } from '../../kit/conditions.ts';
import type { Client } from '../../kit/kube/client.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import { sameJson } from '../../kit/json.ts';
import type { ObjectMeta } from '../../kit/meta.ts';
import { Reasons } from '../reasons.ts';
import { done, keyOf, requeueAfter, type Reconciler, type Result } from '../../kit/controller/result.ts';
import type { Controller } from '../../kit/controller/controller.ts';
import type { Informer } from '../../kit/controller/informer.ts';
import type { Manager } from '../../kit/controller/manager.ts';
import { desiredStateChanged } from '../../kit/controller/predicates.ts';
import { matchesSelector, type LabelSelector } from '../../kit/kube/selector.ts';
import { Providers, type ProviderObject } from '../providers/provider.ts';
import { onChange, enqueueOnChange } from '../../kit/controller/handlers.ts';
import type { Cache } from '../../kit/controller/informer.ts';
import { byText } from '../../kit/order.ts';

export const OperatorUpgrades: ResourceType = {
  apiVersion: 'kubernetes.crossplane.io/v1alpha2',
  kind: 'OperatorUpgrade',
  plural: 'operatorupgrades',
  namespaced: true,
};

export interface OperatorUpgrade {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta & { name: string };
  spec: { operator: string; version: string; providerSelector: LabelSelector; maxConcurrent?: number };
  status?: {
    conditions?: Condition[];
    phase?: 'Progressing' | 'Complete' | 'Failed';
    matched?: number;
    upgraded?: string[];
    upgrading?: string[];
    stoppedAt?: { provider: string; message: string };
  };
}

/** Created later (by name, at the same second). */
const isNewer = (a: ReadonlyDeep<OperatorUpgrade>, b: OperatorUpgrade): boolean => {
  const [ta, tb] = [Date.parse(a.metadata.creationTimestamp ?? ''), Date.parse(b.metadata.creationTimestamp ?? '')];
  return ta > tb || (ta === tb && a.metadata.name > b.metadata.name);
};

/** Where one Provider stands in the wave. */
type Step = 'done' | 'upgrading' | 'pending' | { stopped: string };

/**
 * Why a Provider's status cannot tell where its operators stand yet: its controller has not answered
 * its spec as it is now (a status written before the wave's change), or could not reach its target
 * (the operators it shows are from an earlier pass).
 */
export function unanswered(p: ReadonlyDeep<ProviderObject>): { notReady?: string } | undefined {
  const ready = getCondition(p.status?.conditions, 'Ready');
  if (!ready || ready.observedGeneration !== p.metadata.generation) return {};
  if (ready.status !== 'True') return { notReady: `the Provider is not Ready (${ready.reason ?? 'no reason'})` };
  return undefined;
}

/** `done`: the wave counted it done before (a Provider unreachable since keeps its place, and takes no one's turn). */
export function stepOf(p: ReadonlyDeep<ProviderObject>, operator: string, version: string, done = false): Step {
  const entry = p.spec.operators?.find((o) => o.name === operator);
  if (entry?.version !== version) return 'pending';
  const waiting = unanswered(p);
  // Not Ready, after the wave counted it done: only the status of its spec as it is now says that.
  if (waiting) return done && waiting.notReady ? 'done' : 'upgrading';
  const seen = p.status?.operators?.find((o) => o.name === operator);
  const upgrade = seen?.upgrade;
  // No Deployment there: nothing to upgrade (an install brings the version the entry names). Known by
  // what is missing, not by a version it shows: one pinned to a digest shows none until a version is applied.
  if (seen && !upgrade && (seen.missing ?? []).some((m) => m.startsWith('Deployment '))) return 'done';
  // Before the Provider's controller answered this version, it is under way.
  if (!upgrade || upgrade.to !== version) return seen?.version === version && !upgrade ? 'done' : 'upgrading';
  if (upgrade.phase === 'Complete') return 'done';
  if (upgrade.phase === 'Failed' || upgrade.phase === 'Held') return { stopped: `${upgrade.phase}: ${upgrade.message ?? ''}` };
  return 'upgrading';
}

export interface OperatorWavesOptions {
  client: Client;
  upgrades: Cache<OperatorUpgrade>;
  providers: Pick<Cache<ProviderObject>, 'list'>;
  /** Whether a Provider configures this operator in the deprecated spec.operatorInstall (a wave cannot add an entry beside it). */
  legacy(provider: ReadonlyDeep<ProviderObject>, operator: string): boolean;
  /** How often a wave under way is looked at, besides its Providers' changes. */
  recheckMs?: number;
}

export class OperatorWaves implements Reconciler {
  private readonly o: OperatorWavesOptions;

  constructor(opts: OperatorWavesOptions) {
    this.o = opts;
  }

  async reconcile(key: string, signal: AbortSignal): Promise<Result> {
    const cached = this.o.upgrades.get(key);
    if (!cached || cached.metadata.deletionTimestamp) return done();
    const wave = copyOf<OperatorUpgrade>(cached);
    // A wave that completed is done with its Providers: a later change of their version (by hand, or a wave back) is not undone.
    if (cached.status?.phase === 'Complete' && cached.status.conditions?.some((c) => c.observedGeneration === cached.metadata.generation))
      return done();
    const { operator, version, providerSelector, maxConcurrent = 1 } = wave.spec;
    // A Provider a newer wave of the same operator selects is that wave's: two waves never pull one Provider back and forth.
    const newer = this.o.upgrades
      .list()
      .filter((u) => u.metadata.namespace === wave.metadata.namespace && u.spec.operator === operator && isNewer(u, wave));
    const selected = this.o.providers
      .list()
      .filter((p) => p.metadata.namespace === wave.metadata.namespace && matchesSelector(providerSelector, p.metadata.labels))
      .filter((p) => !newer.some((u) => matchesSelector(u.spec.providerSelector, p.metadata.labels)))
      .sort((a, b) => byText(a.metadata.name, b.metadata.name));
    // Those the wave counted done, as it stands now (a changed version counts again).
    const answered = getCondition(cached.status?.conditions, 'Ready')?.observedGeneration === cached.metadata.generation;
    const counted = answered ? (cached.status?.upgraded ?? []) : [];
    const steps = selected.map((p) => ({
      p,
      step:
        this.o.legacy(p, operator) && !p.spec.operators?.some((o) => o.name === operator)
          ? ({
              stopped: `it configures ${operator} in the deprecated spec.operatorInstall: move that to spec.operators, and the wave goes on`,
            } as Step)
          : stepOf(p, operator, version, counted.includes(p.metadata.name)),
    }));
    const stopped = steps.find((s) => typeof s.step === 'object');
    const upgrading = steps.filter((s) => s.step === 'upgrading');
    if (!stopped) {
      // Start the next ones, in name order, up to maxConcurrent at a time.
      for (const s of steps.filter((x) => x.step === 'pending').slice(0, Math.max(0, maxConcurrent - upgrading.length))) {
        await this.setVersion(s.p, operator, version, signal);
        s.step = 'upgrading';
        upgrading.push(s);
      }
    }
    const names = (f: (s: (typeof steps)[number]) => boolean) => steps.filter(f).map((s) => s.p.metadata.name);
    const upgraded = names((s) => s.step === 'done');
    const phase = !selected.length || stopped ? 'Failed' : upgraded.length === selected.length ? 'Complete' : 'Progressing';
    const ready: Omit<Condition, 'lastTransitionTime'> = !selected.length
      ? {
          type: 'Ready',
          status: 'False',
          reason: Reasons.NoProvidersMatch,
          message: 'no Provider in this namespace matches spec.providerSelector: nothing was changed',
        }
      : stopped
        ? {
            type: 'Ready',
            status: 'False',
            reason: Reasons.UpgradeStopped,
            message: `stopped at Provider ${stopped.p.metadata.name} (${(stopped.step as { stopped: string }).stopped}); ${upgraded.length}/${selected.length} run ${version}, no other Provider is started. Fix it, or go back with a wave to the older version`,
          }
        : phase === 'Complete'
          ? {
              type: 'Ready',
              status: 'True',
              reason: Reasons.UpgradeComplete,
              message: `all ${selected.length} Providers run ${operator} ${version}`,
            }
          : {
              type: 'Ready',
              status: 'False',
              reason: Reasons.Upgrading,
              message: `${upgraded.length}/${selected.length} Providers run ${version}; upgrading ${steps
                .filter((s) => s.step === 'upgrading')
                .map((s) => s.p.metadata.name + (unanswered(s.p)?.notReady ? ` (${unanswered(s.p)!.notReady})` : ''))
                .join(', ')}`,
            };
    wave.status = {
      conditions: setCondition(wave.status?.conditions, { ...ready, observedGeneration: wave.metadata.generation }),
      phase,
      matched: selected.length,
      upgraded,
      upgrading: names((s) => s.step === 'upgrading'),
      ...(stopped ? { stoppedAt: { provider: stopped.p.metadata.name, message: (stopped.step as { stopped: string }).stopped } } : {}),
    };
    if (!sameJson(wave.status, cached.status)) await this.o.client.updateStatus(OperatorUpgrades, wave, signal);
    // Providers' changes bring it back; the recheck covers a missed one while the wave runs. A wave at rest costs nothing.
    return phase === 'Progressing' ? requeueAfter(this.o.recheckMs ?? 10_000) : done();
  }

  /** The Provider's spec.operators entry for `operator`, at `version` (added when missing), conditional on what was read. */
  private async setVersion(p: ReadonlyDeep<ProviderObject>, operator: string, version: string, signal: AbortSignal): Promise<void> {
    const operators = [...(p.spec.operators ?? [])];
    const i = operators.findIndex((o) => o.name === operator);
    if (i >= 0) operators[i] = { ...operators[i]!, version };
    else operators.push({ name: operator, version });
    await this.o.client.update(Providers, { ...p, spec: { ...p.spec, operators } }, signal);
  }
}

/** The controller of upgrade waves: each wave wakes on its own changes and on any change of a Provider in its namespace. */
export function setupOperatorWaves(
  manager: Manager,
  providers: Informer<ProviderObject>,
  legacy: OperatorWavesOptions['legacy'],
): Controller {
  const upgrades = manager.informer<OperatorUpgrade>(OperatorUpgrades);
  const waves = manager.controller('operator-upgrades', new OperatorWaves({ client: manager.control, upgrades, providers, legacy }));
  enqueueOnChange(upgrades, waves, { on: ['added', 'updated'], when: desiredStateChanged });
  onChange(
    providers,
    (p) => {
      for (const u of upgrades.list()) if (u.metadata.namespace === p.metadata.namespace) waves.enqueue(keyOf(u.metadata));
    },
    { on: ['updated'] },
  );
  return waves;
}
