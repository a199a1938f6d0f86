// The default-class reconciler (crossplane's policy era): a claim that names no class gets the one
// its namespace's policy names. With no policy, or several, it guesses nothing and says so.
import { copyOf, type ReadonlyDeep } from '../../kit/controller/informer.ts';
import { setCondition } from '../../kit/conditions.ts';
import type { EventRecorder } from '../../kit/controller/events.ts';
import { sameJson } from '../../kit/json.ts';
import type { Client } from '../../kit/kube/client.ts';
import { isConflict, isNotFound } from '../../kit/kube/errors.ts';
import type { ResourceType } from '../../kit/kube/resources.ts';
import { isDeleting } from '../../kit/meta.ts';
import { Reasons, Synced } from '../reasons.ts';
import { done, requeue, type Reconciler, type Result } from '../../kit/controller/result.ts';
import type { Claim, DefaultClassPolicy } from './claim.ts';
import type { Cache } from '../../kit/controller/informer.ts';
import { byText } from '../../kit/order.ts';

export interface DefaultClassReconcilerOptions {
  client: Client;
  claims: { type: ResourceType; cache: Cache<Claim> };
  policies: { type: ResourceType; cache: Cache<DefaultClassPolicy> };
  recorder: EventRecorder;
}

export class DefaultClassReconciler implements Reconciler {
  private readonly o: DefaultClassReconcilerOptions;

  constructor(opts: DefaultClassReconcilerOptions) {
    this.o = opts;
  }

  async reconcile(key: string, signal: AbortSignal): Promise<Result> {
    const cached = this.o.claims.cache.get(key);
    if (!cached || cached.spec?.classRef || cached.spec?.resourceRef || isDeleting(cached.metadata)) return done();
    const claim = copyOf<Claim>(cached);
    const ns = claim.metadata.namespace!;
    const policyKind = this.o.policies.type.kind;
    try {
      let policies = defaultsIn(ns, this.o.policies.cache.list());
      // The class is written once and for good, so it is chosen from the API server, not the cache:
      // a policy made just before the claim may not have reached the cache yet.
      if (policies.length === 1)
        policies = defaultsIn(ns, (await this.o.client.list<DefaultClassPolicy>(this.o.policies.type, { namespace: ns, signal })).items);
      if (policies.length !== 1) {
        const message =
          policies.length === 0
            ? `no spec.classRef and no ${policyKind} in namespace ${ns} names a default class; set spec.classRef or create a ${policyKind}`
            : `no spec.classRef and ${policies.length} ${policyKind}s in namespace ${ns} name a default class (${policies.map((p) => p.metadata.name).join(', ')}); keep one`;
        const reason = policies.length === 0 ? Reasons.NoDefaultClass : Reasons.AmbiguousDefaultClass;
        const conditions = setCondition(claim.status?.conditions, {
          ...Synced.error(reason, message),
          observedGeneration: claim.metadata.generation,
        });
        if (!sameJson(conditions, cached.status?.conditions ?? [])) {
          this.o.recorder.warning(claim, reason, message);
          await this.o.client.updateStatus(this.o.claims.type, { ...claim, status: { ...claim.status, conditions } }, signal);
        }
        return done(); // the policy watch brings the claim back
      }
      const className = policies[0]!.spec!.defaultClassRef!.name;
      claim.spec = { ...claim.spec, classRef: { name: className } };
      await this.o.client.update(this.o.claims.type, claim, signal);
      this.o.recorder.normal(
        claim,
        Reasons.DefaultClassSelected,
        `Using class ${className} from ${policyKind} ${policies[0]!.metadata.name}`,
      );
      return done();
    } catch (err) {
      if (isConflict(err)) return requeue();
      if (isNotFound(err)) return done();
      throw err;
    }
  }
}

/** The namespace's policies that name a default class, in name order. */
function defaultsIn(ns: string, policies: readonly ReadonlyDeep<DefaultClassPolicy>[]): readonly ReadonlyDeep<DefaultClassPolicy>[] {
  return policies
    .filter((p) => p.metadata.namespace === ns && !isDeleting(p.metadata) && p.spec?.defaultClassRef?.name)
    .sort((a, b) => byText(a.metadata.name, b.metadata.name));
}
