// Finds what we own in target clusters whose managed resource no longer exists (e.g. its finalizer
// was removed by hand while the provider was down) and deletes it, or only reports it.
import type { Provider } from '../../apis/provider.ts';
import type { Informer } from '../informer.ts';
import { Namespaces, Secrets, type ResourceType } from '../kube/resources.ts';
import type { Logger } from '../logger.ts';
import type { ManagedResource } from '../managed/types.ts';
import type { ProviderResolver } from './connecter.ts';
import { namespaceIsEmpty, type NativeKind, type TargetObject } from './external.ts';
import type { OwnershipMarks } from './ownership.ts';
import type { Target } from './targets.ts';

export interface LeakReport {
  target: string;
  kind: string;
  namespace?: string;
  name: string;
  owner: string;
  deleted: boolean;
}

export class LeakSweeper<MR extends ManagedResource> {
  private readonly o: {
    kind: NativeKind<MR>; marks: OwnershipMarks; resolver: ProviderResolver; providers: Informer<Provider>;
    managed: Informer<MR>; reportOnly: boolean; log: Logger;
  };
  private timer?: NodeJS.Timeout;

  constructor(opts: LeakSweeper<MR>['o']) {
    this.o = opts;
  }

  start(intervalMs: number): void {
    const run = (): void => void this.sweep().catch((err: Error) => this.o.log.info('leak sweep failed', { error: err.message }));
    run();
    this.timer = setInterval(run, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One pass over every target any Provider names. */
  async sweep(signal?: AbortSignal): Promise<LeakReport[]> {
    const targets = new Map<string, Target>();
    for (const provider of this.o.providers.list()) {
      try {
        const target = await this.o.resolver.resolve(provider, signal);
        targets.set(target.fingerprint, target);
      } catch {
        // An unusable Provider is reported by its own status; nothing to sweep there now.
      }
    }
    const live = new Set(this.o.managed.list().map((mr) => mr.metadata.uid));
    const reports: LeakReport[] = [];
    for (const target of targets.values()) {
      // The object itself first, then its companions, then (if empty) the namespace.
      for (const type of [this.o.kind.target, Secrets, Namespaces] as ResourceType[]) {
        let items: TargetObject[];
        try {
          items = (await target.client.list<TargetObject>(type, { labelSelector: this.o.marks.selector, signal })).items;
        } catch (err) {
          this.o.log.debug('cannot list for leaks', { target: target.server, kind: type.kind, error: (err as Error).message });
          continue;
        }
        for (const obj of items) {
          const owner = this.o.marks.ownerKey(obj);
          if (!owner || owner.resource !== this.o.kind.resource || live.has(owner.uid) || obj.metadata.deletionTimestamp) continue;
          const report = { target: target.server, kind: type.kind, namespace: obj.metadata.namespace, name: obj.metadata.name, owner: owner.key, deleted: false };
          if (!this.o.reportOnly) {
            const removable = type !== Namespaces || (await namespaceIsEmpty(target.client, obj.metadata.name, [this.o.kind.target], signal));
            if (removable) report.deleted = await target.client.delete(type, obj.metadata.name, obj.metadata.namespace, { uid: obj.metadata.uid, signal });
          }
          this.o.log.info(report.deleted ? 'deleted leaked object' : 'found leaked object', { ...report });
          reports.push(report);
        }
      }
    }
    return reports;
  }
}
