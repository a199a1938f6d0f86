// ProviderResolver: a Provider -> its Secret -> a (cached) client for its target cluster. Secrets are
// watched one by one in the Provider's namespace, so a rotation is seen at once and costs no reads at rest.
import { readLive } from '../../kit/kube/live.ts';
import type { ObjectKey } from '../../kit/kube/object-key.ts';
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import { ReasonedError } from '../../kit/conditions.ts';
import { Informer } from '../../kit/controller/informer.ts';
import type { Logger } from '../../kit/logger.ts';
import type { KubeClient, KubeObjectLike } from '../../kit/kube/client.ts';
import { Secrets } from '../../kit/kube/resources.ts';
import { credentialsFromSecret, type CredentialOptions, type Credentials } from './credentials.ts';
import { Providers, type ProviderObject as Provider } from './provider.ts';
import type { Target, TargetClients } from './targets.ts';
import { Reasons } from '../reasons.ts';
import { keyOf } from '../../kit/controller/result.ts';
import { onChange } from '../../kit/controller/handlers.ts';

type SecretObject = KubeObjectLike & { data?: Record<string, string> };

export interface ProviderResolverOptions {
  credentials?: CredentialOptions;
  log: Logger;
  /** A Provider Secret ("namespace", "name") was created, changed or deleted. */
  secretChanged?: (key: Required<ObjectKey>) => void;
}

/**
 * Finds the target cluster a Provider names. Secrets are read only in the Provider's namespace, each
 * from a watch of that one Secret, so a rotation is seen within seconds and costs no reads at rest.
 */
export const providerNotFound = ({ namespace, name }: Required<ObjectKey>): ReasonedError =>
  new ReasonedError(Reasons.ProviderNotFound, `Provider ${namespace}/${name} does not exist`);

export class ProviderResolver {
  private readonly control: KubeClient;
  private readonly providers: Pick<Informer<Provider>, 'get' | 'list'>;
  readonly targets: TargetClients;
  private readonly opts: ProviderResolverOptions;
  private readonly secrets = new Map<string, Informer<SecretObject>>();
  /** The target each Provider ("namespace/name") resolved to last. */
  private readonly chosen = new Map<string, string>();
  /** Each cached Secret object, parsed (see credentialsOf). */
  private readonly parsed = new WeakMap<SecretObject, { credentials?: Credentials; error?: unknown }>();

  constructor(
    control: KubeClient,
    providers: Pick<Informer<Provider>, 'get' | 'list'>,
    targets: TargetClients,
    opts: ProviderResolverOptions,
  ) {
    this.control = control;
    this.providers = providers;
    this.targets = targets;
    this.opts = opts;
  }

  private secretWatch({ namespace, name }: Required<ObjectKey>): Informer<SecretObject> {
    const key = keyOf({ namespace, name });
    let watch = this.secrets.get(key);
    if (!watch) {
      watch = new Informer<SecretObject>(this.control, Secrets, {
        namespaces: [namespace],
        fieldSelector: `metadata.name=${name}`,
        log: this.opts.log,
      });
      const changed = (): void => this.opts.secretChanged?.({ namespace, name });
      onChange(watch, changed);
      this.secrets.set(key, watch);
      void watch.start();
    }
    return watch;
  }

  /** Stops the Secret watches and closes the targets no Provider names any more. */
  async prune(): Promise<void> {
    const providers = this.providers.list();
    const wanted = new Set(providers.map((p) => keyOf({ namespace: p.metadata.namespace, name: p.spec.credentialsSecretRef.name })));
    for (const [key, watch] of this.secrets) {
      if (wanted.has(key)) continue;
      this.secrets.delete(key);
      await watch.stop();
    }
    const present = new Set(providers.map((p) => keyOf(p.metadata)));
    for (const [key, fingerprint] of this.chosen) {
      if (present.has(key)) continue;
      this.chosen.delete(key);
      if (![...this.chosen.values()].includes(fingerprint)) await this.targets.close(fingerprint);
    }
  }

  provider(key: Required<ObjectKey>): ReadonlyDeep<Provider> {
    const provider = this.cached(key);
    if (!provider) throw providerNotFound(key);
    return provider;
  }

  /** The Provider as cached, if it is. */
  cached({ namespace, name }: Required<ObjectKey>): ReadonlyDeep<Provider> | undefined {
    return this.providers.get({ namespace, name });
  }

  /** Whether the Provider is gone, read live: a cache may not have seen it made yet. */
  async gone({ namespace, name }: Required<ObjectKey>, signal?: AbortSignal): Promise<boolean> {
    return (await readLive(this.control, Providers, { namespace, name }, signal)) === undefined;
  }

  async resolve(provider: ReadonlyDeep<Provider>, signal?: AbortSignal): Promise<Target> {
    const namespace = provider.metadata.namespace!;
    const secretName = provider.spec.credentialsSecretRef.name;
    const where = keyOf({ namespace, name: secretName });
    const watch = this.secretWatch({ namespace, name: secretName });
    // Until the watch has its first list, ask (once per caller) rather than wait.
    const secret = watch.hasSynced
      ? watch.get(where)
      : await this.control.get<SecretObject>(Secrets, { namespace, name: secretName }, signal);
    if (!secret)
      throw new ReasonedError(
        Reasons.SecretNotFound,
        `Secret ${where} named by Provider ${namespace}/${provider.metadata.name} does not exist`,
      );
    const target = this.targets.get(this.credentialsOf(where, secret));
    // New credentials: the client made from the old ones goes at once, unless another Provider uses it.
    const key = keyOf({ namespace, name: provider.metadata.name });
    const before = this.chosen.get(key);
    this.chosen.set(key, target.fingerprint);
    if (before && before !== target.fingerprint && ![...this.chosen.values()].includes(before)) await this.targets.close(before);
    return target;
  }

  /**
   * Parsing a Secret checks its certificates and key (about 1.5 ms of CPU): once per version of the
   * Secret, not once per reconcile. The watch cache hands out the same object until it changes.
   */
  private credentialsOf(where: string, secret: SecretObject): Credentials {
    let parsed = this.parsed.get(secret);
    if (!parsed) {
      try {
        parsed = { credentials: credentialsFromSecret(where, secret.data, this.opts.credentials) };
      } catch (error) {
        parsed = { error };
      }
      this.parsed.set(secret, parsed);
    }
    if (parsed.credentials) return parsed.credentials;
    throw parsed.error;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.secrets.values()].map((w) => w.stop()));
    this.secrets.clear();
  }
}
