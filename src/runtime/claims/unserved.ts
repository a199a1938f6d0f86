// The claims no served kind can take, answered by the claim machinery itself rather than by one of
// the backends: a class that is missing or points at a kind nothing serves, a kind-less resourceRef
// to nothing the claim may bind. It says why and waits: routing (routing.ts) hands the claim to its
// kind's controller once its class appears. It makes nothing, so it adds no finalizer; it only lets
// go of what a claim still holds when one it answers is deleted.
import { copyOf } from '../../kit/controller/informer.ts';
import type { EventRecorder } from '../../kit/controller/events.ts';
import type { Client } from '../../kit/kube/client.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import type { ManagedResource } from '../managed/types.ts';
import { ANNOTATION_EXTERNAL_NAME, hasFinalizer, isDeleting } from '../../kit/meta.ts';
import { done, type Reconciler, type Result } from '../../kit/controller/result.ts';
import { FINALIZER_CLAIM, heldBy, type Claim, type PortableClass } from './claim.ts';
import type { Cache } from '../../kit/controller/informer.ts';
import { importNotAllowed, portableClassNotFound, resourceNotReserved, unsupportedClass } from './refusals.ts';
import { releaseClaim } from './release.ts';
import type { ClaimRouter } from './routing.ts';
import { claimFailed, type ClaimWriter } from './status.ts';

export interface UnservedClaimOptions {
  client: Client;
  recorder: EventRecorder;
  claims: { type: ResourceType; cache: Cache<Claim> };
  portableClasses: { type: ResourceType; cache: Pick<Cache<PortableClass>, 'get'> };
  /** Every served class kind and the managed kind made from it. */
  served: { class: ResourceType; managed: ResourceType; managedCache: Pick<Cache<ManagedResource>, 'list'> }[];
  router: Pick<ClaimRouter, 'route'>;
}

export class UnservedClaimReconciler implements Reconciler {
  private readonly o: UnservedClaimOptions;
  private readonly writer: ClaimWriter;

  constructor(opts: UnservedClaimOptions) {
    this.o = opts;
    this.writer = { client: opts.client, claims: opts.claims.type, recorder: opts.recorder };
  }

  async reconcile(key: string, signal: AbortSignal): Promise<Result> {
    const cached = this.o.claims.cache.get(key);
    // Checked again: a class may have appeared while the claim was queued.
    if (!cached || this.o.router.route(cached) !== 'unserved') return done();
    const claim = copyOf<Claim>(cached);
    try {
      if (isDeleting(claim.metadata)) return await this.release(claim, signal);
      throw this.refusal(claim);
    } catch (err) {
      return claimFailed(this.writer, claim, cached, err, signal);
    }
  }

  /** Why no controller takes the claim, in the order a claim controller would find it. */
  private refusal(claim: Claim): Error {
    const ref = claim.spec?.resourceRef;
    if (ref) return resourceNotReserved(ref.kind ?? 'managed resource', ref);
    if (claim.metadata.annotations?.[ANNOTATION_EXTERNAL_NAME]) return importNotAllowed('resource');
    const ns = claim.metadata.namespace!;
    const name = claim.spec!.classRef!.name;
    const { type, cache } = this.o.portableClasses;
    const portable = cache.get({ namespace: ns, name });
    return portable
      ? unsupportedClass(
          type.kind,
          portable,
          this.o.served.map((s) => s.class),
        )
      : portableClassNotFound(type.kind, { namespace: ns, name });
  }

  /** A deleted claim that still holds something (its class went since): release it, whatever its kind. */
  private async release(claim: Claim, signal: AbortSignal): Promise<Result> {
    if (!hasFinalizer(claim.metadata, FINALIZER_CLAIM)) return done();
    const held = this.o.served.flatMap((s) =>
      s.managedCache
        .list()
        .filter((mr) => heldBy(mr, claim))
        .map((mr) => ({ type: s.managed, mr })),
    );
    await releaseClaim(this.writer, claim, held, signal);
    return done();
  }
}
