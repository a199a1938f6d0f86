// Which managed resources use each Provider, kept from the informers' events (so counting costs no
// request and no scan), plus the choices this process made that its caches do not show yet
// (kube-scheduler's "assumed" pods): a burst of placements spreads instead of piling onto the
// Provider that looked emptiest a moment ago. Only the spread relies on it; capacity is arbitrated
// by the API server (reservations.ts).
import { keyOf } from '../../kit/controller/result.ts';
import { type ReadonlyDeep } from '../../kit/controller/informer.ts';
import type { Informer } from '../../kit/controller/informer.ts';
import type { ManagedResource } from '../managed/types.ts';
import { onChange } from '../../kit/controller/handlers.ts';

const providerKeyOf = (mr: ReadonlyDeep<ManagedResource>): string | undefined =>
  mr.spec.providerRef?.name ? keyOf({ namespace: mr.metadata.namespace, name: mr.spec.providerRef.name }) : undefined;

export class ProviderUsage {
  private readonly users = new Map<string, Set<string>>();
  private readonly providerOf = new Map<string, string>();
  private readonly assumed = new Map<string, string>();
  private readonly freedHandlers: ((mr: ReadonlyDeep<ManagedResource>) => void)[] = [];

  /** Follows one managed kind's cache. */
  track(cache: Informer<ManagedResource>): void {
    onChange(cache, (mr) => this.set(mr), { on: ['added', 'updated'] });
    onChange(cache, (mr) => this.remove(mr), { on: ['deleted'] });
  }

  /** Called with each managed resource that went away (a Provider may have room again). */
  onFreed(handler: (mr: ReadonlyDeep<ManagedResource>) => void): void {
    this.freedHandlers.push(handler);
  }

  /** This process placed `uid` on the Provider `key`; counted until the cache shows it. */
  assume(uid: string, key: string): void {
    this.assumed.set(uid, key);
  }

  forget(uid: string): void {
    this.assumed.delete(uid);
  }

  /** The uids using (or assumed on) the Provider `key`. */
  usersOf(key: string): Set<string> {
    const out = new Set(this.users.get(key));
    for (const [uid, k] of this.assumed) if (k === key) out.add(uid);
    return out;
  }

  private set(mr: ReadonlyDeep<ManagedResource>): void {
    const uid = mr.metadata.uid;
    if (!uid) return;
    const key = providerKeyOf(mr);
    const before = this.providerOf.get(uid);
    if (before === key) return;
    if (before) this.users.get(before)?.delete(uid);
    if (key) {
      this.providerOf.set(uid, key);
      let set = this.users.get(key);
      if (!set) this.users.set(key, (set = new Set()));
      set.add(uid);
      if (this.assumed.get(uid) === key) this.assumed.delete(uid);
    } else {
      this.providerOf.delete(uid);
    }
  }

  private remove(mr: ReadonlyDeep<ManagedResource>): void {
    const uid = mr.metadata.uid;
    if (!uid) return;
    const before = this.providerOf.get(uid);
    if (before) this.users.get(before)?.delete(uid);
    this.providerOf.delete(uid);
    this.assumed.delete(uid);
    for (const handler of this.freedHandlers) handler(mr);
  }
}
