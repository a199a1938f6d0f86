// Capacity the API server arbitrates. A Provider that declares spec.capacity.maxResources lists in
// status.reservations each managed resource the scheduler placed on it; a place is taken by an
// update carrying the resourceVersion that was read, so of two schedulers (workers or replicas)
// racing for the last place, one gets 409 Conflict, reads again and finds it taken. An in-memory
// counter could not see the other replica. A reservation outlives a crash between taking the place
// and recording it on the resource (the next pass finds and keeps it), and goes once its resource
// is proven gone by a live read, or placed on another Provider (two schedulers raced for it).
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import type { Client } from '../../kit/kube/client.ts';
import { isConflict } from '../../kit/kube/errors.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import type { ManagedResource } from '../managed/types.ts';
import { Providers, type ProviderObject, type Reservation } from '../providers/provider.ts';
import { done, keyOf, type Reconciler, type Result } from '../../kit/controller/result.ts';
import type { Controller } from '../../kit/controller/controller.ts';
import type { Informer } from '../../kit/controller/informer.ts';
import type { Manager } from '../../kit/controller/manager.ts';
import type { ProviderUsage } from './usage.ts';
import { onChange } from '../../kit/controller/handlers.ts';
import type { Cache } from '../../kit/controller/informer.ts';

export interface ReservationsOptions {
  client: Client;
  providers: Pick<Cache<ProviderObject>, 'get'>;
  usage: ProviderUsage;
  /** A managed kind by its kind name, to tell whether a reservation's resource still exists. */
  managed(kind: string): { type: ResourceType; cache: Pick<Cache<ManagedResource>, 'get'> } | undefined;
}

export type Reserved = 'reserved' | 'full' | 'contended';

const ATTEMPTS = 5;

export class Reservations implements Reconciler {
  private readonly o: ReservationsOptions;

  constructor(opts: ReservationsOptions) {
    this.o = opts;
  }

  /** Places taken on the Provider: its reservations and the resources the caches show on it. */
  used(
    provider: ReadonlyDeep<ProviderObject>,
    reservations: readonly Reservation[] = provider.status?.reservations ?? [],
    except?: string,
  ): number {
    const uids = this.o.usage.usersOf(keyOf(provider.metadata));
    for (const r of reservations) if (this.cached(provider, r) !== 'stale') uids.add(r.uid);
    if (except) uids.delete(except);
    return uids.size;
  }

  /** Takes a place on the Provider `key` for `mr`: once, whatever the retries. */
  async reserve(key: string, mr: ManagedResource & { kind?: string }, signal: AbortSignal): Promise<Reserved> {
    const uid = mr.metadata.uid!;
    let provider = this.o.providers.get(key);
    for (let attempt = 0; attempt < ATTEMPTS && provider; attempt++) {
      if (provider.metadata.deletionTimestamp) return 'full'; // going away: it takes nothing new
      const max = provider.spec.capacity?.maxResources;
      let reservations = provider.status?.reservations ?? [];
      if (max === undefined || reservations.some((r) => r.uid === uid)) return 'reserved';
      if (this.used(provider, reservations, uid) >= max) {
        reservations = await this.existing(provider, reservations, signal);
        if (this.used(provider, reservations, uid) >= max) return 'full';
      }
      const entry: Reservation = { kind: mr.kind!, name: mr.metadata.name, uid };
      try {
        await this.o.client.updateStatus(
          Providers,
          { ...provider, status: { ...provider.status, reservations: [...reservations, entry] } },
          signal,
        );
        return 'reserved';
      } catch (err) {
        if (!isConflict(err)) throw err;
        provider = await this.o.client.get<ProviderObject>(
          Providers,
          { namespace: provider.metadata.namespace, name: provider.metadata.name },
          signal,
        );
      }
    }
    return provider ? 'contended' : 'full';
  }

  /** The reconciler of a Provider's reservations: drops those whose resource is gone. */
  async reconcile(key: string, signal: AbortSignal): Promise<Result> {
    const provider = this.o.providers.get(key);
    const reservations = provider?.status?.reservations;
    if (!provider || !reservations?.length) return done();
    const kept = await this.existing(provider, reservations, signal);
    if (kept.length === reservations.length) return done();
    // A conflict fails this pass: the controller retries it with the Provider read again.
    await this.o.client.updateStatus(Providers, { ...provider, status: { ...provider.status, reservations: kept } }, signal);
    return done();
  }

  /** Reservations whose resource has no Provider yet: it may still be placed here. */
  pending(provider: ReadonlyDeep<ProviderObject>): number {
    return (provider.status?.reservations ?? []).filter((r) => {
      const mr = this.o.managed(r.kind)?.cache.get({ namespace: provider.metadata.namespace, name: r.name });
      return mr?.metadata.uid === r.uid && !mr.spec.providerRef?.name;
    }).length;
  }

  /** Whether the Provider's reservations include one the caches do not show as holding its place. */
  mayHoldStale(provider: ReadonlyDeep<ProviderObject>): boolean {
    return (provider.status?.reservations ?? []).some((r) => this.cached(provider, r) !== 'held');
  }

  /**
   * What the caches say of a reservation: its resource holds the place (it exists, and is on this
   * Provider or on none yet), the place is stale (the resource went to another Provider: two
   * schedulers raced and the other one recorded first), or they do not know (not cached).
   */
  private cached(provider: ReadonlyDeep<ProviderObject>, r: Reservation): 'held' | 'stale' | 'unknown' {
    const kind = this.o.managed(r.kind);
    if (!kind) return 'held';
    const mr = kind.cache.get({ namespace: provider.metadata.namespace, name: r.name });
    if (mr?.metadata.uid !== r.uid) return 'unknown';
    return holds(mr, provider) ? 'held' : 'stale';
  }

  /** The reservations whose resource holds its place: the caches' word, else a live read (a cache may lag). */
  private async existing(
    provider: ReadonlyDeep<ProviderObject>,
    reservations: readonly Reservation[],
    signal: AbortSignal,
  ): Promise<Reservation[]> {
    const kept: Reservation[] = [];
    for (const r of reservations) {
      const known = this.cached(provider, r);
      if (known !== 'unknown') {
        if (known === 'held') kept.push(r);
        continue;
      }
      const live = await this.o.client.get<ManagedResource>(
        this.o.managed(r.kind)!.type,
        { namespace: provider.metadata.namespace, name: r.name },
        signal,
      );
      if (live?.metadata.uid === r.uid && holds(live, provider)) kept.push(r);
    }
    return kept;
  }
}

/** A resource keeps the place reserved for it while it is on that Provider, or on none yet. */
function holds(mr: ReadonlyDeep<ManagedResource>, provider: ReadonlyDeep<ProviderObject>): boolean {
  return !mr.spec.providerRef?.name || mr.spec.providerRef.name === provider.metadata.name;
}

/**
 * The reservations controller, woken where a place may have to be given back: a resource gone, a
 * Provider whose reservations may be stale, and a resource placed on another Provider than the one
 * that reserved a place for it (two schedulers raced).
 */
export function setupReservations(
  manager: Manager,
  o: Omit<ReservationsOptions, 'client' | 'providers'> & { providers: Informer<ProviderObject> },
): { reservations: Reservations; controller: Controller; placed(mr: ReadonlyDeep<ManagedResource>): void } {
  const { providers, usage } = o;
  const reservations = new Reservations({ ...o, client: manager.control });
  const controller = manager.controller('scheduling/reservations', reservations);
  const reservedFor = (mr: ReadonlyDeep<ManagedResource>, except?: string): void => {
    for (const p of providers.list())
      if (
        p.metadata.namespace === mr.metadata.namespace &&
        p.metadata.name !== except &&
        p.status?.reservations?.some((r) => r.uid === mr.metadata.uid)
      )
        controller.enqueue(keyOf(p.metadata));
  };
  usage.onFreed((mr) => reservedFor(mr));
  // A place taken in a race the other scheduler won may be written after its resource was placed.
  const mayHoldStale = (p: ReadonlyDeep<ProviderObject>): void => {
    if (reservations.mayHoldStale(p)) controller.enqueue(keyOf(p.metadata));
  };
  onChange(providers, mayHoldStale, { on: ['added', 'updated'] });
  return { reservations, controller, placed: (mr) => reservedFor(mr, mr.spec.providerRef?.name) };
}
