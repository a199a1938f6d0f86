// Keeps each Provider's status honest: can we reach its target, and what version does it run.
// Writes only when that changes.
import type { Provider } from '../../apis/provider.ts';
import { ProviderKind } from '../../apis/provider.ts';
import { ReasonedError, reasonOf, setCondition } from '../conditions.ts';
import type { KubeClient } from '../kube/client.ts';
import { isConflict } from '../kube/errors.ts';
import { sameJson } from '../json.ts';
import type { ResourceType } from '../kube/resources.ts';
import type { Reader } from '../managed/reconciler.ts';
import { done, requeue, requeueAfter, type Reconciler, type Result } from '../result.ts';
import type { ProviderResolver } from './connecter.ts';
import type { OperatorInstaller } from './operator.ts';

export const Providers: ResourceType = { apiVersion: `${ProviderKind.group}/${ProviderKind.version}`, kind: ProviderKind.kind, plural: ProviderKind.plural, namespaced: true };

export class ProviderStatusReconciler implements Reconciler {
  private readonly o: { client: KubeClient; cache: Reader<Provider>; resolver: ProviderResolver; pollIntervalMs: number; operator?: OperatorInstaller };

  constructor(opts: ProviderStatusReconciler['o']) {
    this.o = opts;
  }

  async reconcile(key: string, signal: AbortSignal): Promise<Result> {
    const cached = this.o.cache.get(key);
    if (!cached) return done();
    const provider = structuredClone(cached);
    let status: Provider['status'];
    try {
      const target = await this.o.resolver.resolve(provider, signal);
      const serverVersion = await target.client.serverVersion(signal);
      const operator = await this.o.operator?.presence(target.client, provider.spec.operatorInstall, signal);
      status = {
        ...provider.status,
        serverVersion,
        ...(operator ? { operator: { present: operator.present, ...(operator.installedBy ? { installedBy: operator.installedBy } : {}), ...(operator.missing.length ? { missing: operator.missing } : {}) } } : {}),
        conditions: setCondition(provider.status?.conditions, { type: 'Ready', status: 'True', reason: 'Reachable', message: `reached ${target.server}`, observedGeneration: provider.metadata.generation }),
      };
    } catch (err) {
      const reason = err instanceof ReasonedError ? err.reason : reasonOf(err);
      status = {
        ...provider.status,
        conditions: setCondition(provider.status?.conditions, { type: 'Ready', status: 'False', reason, message: (err as Error).message, observedGeneration: provider.metadata.generation }),
      };
    }
    if (!sameJson(status, cached.status)) {
      try {
        await this.o.client.updateStatus(Providers, { ...provider, status }, signal);
      } catch (err) {
        if (isConflict(err)) return requeue();
        throw err;
      }
    }
    return requeueAfter(this.o.pollIntervalMs);
  }
}
