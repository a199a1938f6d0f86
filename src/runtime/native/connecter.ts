// NativeConnecter: managed resource -> its Provider -> the Provider's Secret -> a (cached) client for
// the target cluster -> a nativeExternal that manages one object there.
import { ReasonedError } from '../../kit/conditions.ts';
import { Informer } from '../../kit/informer.ts';
import type { Logger } from '../../kit/logger.ts';
import type { KubeClient, KubeObjectLike } from '../../kit/kube/client.ts';
import { Secrets } from '../../kit/kube/resources.ts';
import type { ExternalClient, ExternalConnecter, ManagedResource } from '../managed/types.ts';
import { externalNameOf, isDeleting } from '../../kit/meta.ts';
import { credentialsFromSecret, type CredentialOptions, type Credentials } from './credentials.ts';
import type { EventRecorder } from '../../kit/events.ts';
import { NativeExternal, kindContext, type NativeExternalOptions } from './external.ts';
import type { NativeKind } from './kind.ts';
import { operatorNamespaces, type OperatorInstaller } from './operator.ts';
import { allowsNamespace, fieldsHolding, namespaceNotAllowed, protectedNamespaces, type ProviderObject as Provider } from './provider.ts';
import type { Owner, OwnershipMarks } from './ownership.ts';
import type { Target, TargetClients } from './targets.ts';
import { Reasons } from '../reasons.ts';

type SecretObject = KubeObjectLike & { data?: Record<string, string> };

export interface ProviderResolverOptions {
  credentials?: CredentialOptions;
  log: Logger;
  /** A Provider Secret ("namespace", "name") was created, changed or deleted. */
  secretChanged?: (namespace: string, name: string) => void;
}

/**
 * Finds the target cluster a Provider names. Secrets are read only in the Provider's namespace, each
 * from a watch of that one Secret, so a rotation is seen within seconds and costs no reads at rest.
 */
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

  private secretWatch(namespace: string, name: string): Informer<SecretObject> {
    const key = `${namespace}/${name}`;
    let watch = this.secrets.get(key);
    if (!watch) {
      watch = new Informer<SecretObject>(this.control, Secrets, {
        namespaces: [namespace],
        fieldSelector: `metadata.name=${name}`,
        log: this.opts.log,
      });
      const changed = (): void => this.opts.secretChanged?.(namespace, name);
      watch.on({ added: changed, updated: changed, deleted: changed });
      this.secrets.set(key, watch);
      void watch.start();
    }
    return watch;
  }

  /** Stops the Secret watches and closes the targets no Provider names any more. */
  async prune(): Promise<void> {
    const providers = this.providers.list();
    const wanted = new Set(providers.map((p) => `${p.metadata.namespace}/${p.spec.credentialsSecretRef.name}`));
    for (const [key, watch] of this.secrets) {
      if (wanted.has(key)) continue;
      this.secrets.delete(key);
      await watch.stop();
    }
    const present = new Set(providers.map((p) => `${p.metadata.namespace}/${p.metadata.name}`));
    for (const [key, fingerprint] of this.chosen) {
      if (present.has(key)) continue;
      this.chosen.delete(key);
      if (![...this.chosen.values()].includes(fingerprint)) await this.targets.close(fingerprint);
    }
  }

  provider(namespace: string, name: string): Provider {
    const provider = this.providers.get(`${namespace}/${name}`);
    if (!provider) throw new ReasonedError(Reasons.ProviderNotFound, `Provider ${namespace}/${name} does not exist`);
    return provider;
  }

  async resolve(provider: Provider, signal?: AbortSignal): Promise<Target> {
    const namespace = provider.metadata.namespace!;
    const secretName = provider.spec.credentialsSecretRef.name;
    const where = `${namespace}/${secretName}`;
    const watch = this.secretWatch(namespace, secretName);
    // Until the watch has its first list, ask (once per caller) rather than wait.
    const secret = watch.hasSynced ? watch.get(where) : await this.control.get<SecretObject>(Secrets, secretName, namespace, signal);
    if (!secret)
      throw new ReasonedError(
        Reasons.SecretNotFound,
        `Secret ${where} named by Provider ${namespace}/${provider.metadata.name} does not exist`,
      );
    const target = this.targets.get(this.credentialsOf(where, secret));
    // New credentials: the client made from the old ones goes at once, unless another Provider uses it.
    const key = `${namespace}/${provider.metadata.name}`;
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

export interface NativeConnecterOptions {
  /** The operator of this kind, shared with the Provider's status. */
  installer?: OperatorInstaller;
  recorder?: EventRecorder;
  /** Called when an operator was found present or missing unlike the Provider's status says (e.g. just installed). */
  operatorChanged?: (provider: Provider) => void;
  /** Called on every connect: which target a resource ("namespace/name") uses. */
  connected?: (key: string, target: Target) => void;
  /** The control cluster's managed resources a kind's endpoint may come from (NativeKind.endpointFrom). */
  managed?: NativeExternalOptions['managed'];
  retirementHold?: NativeExternalOptions['retirementHold'];
}

export class NativeConnecter<MR extends ManagedResource> implements ExternalConnecter<MR> {
  private readonly resolver: ProviderResolver;
  private readonly kind: NativeKind<MR>;
  private readonly marks: OwnershipMarks;
  private readonly opts: NativeConnecterOptions;

  constructor(resolver: ProviderResolver, kind: NativeKind<MR>, marks: OwnershipMarks, opts: NativeConnecterOptions = {}) {
    this.resolver = resolver;
    this.kind = kind;
    this.marks = marks;
    this.opts = opts;
  }

  async connect(mr: MR, signal: AbortSignal): Promise<ExternalClient<MR>> {
    const ref = mr.spec.providerRef;
    const namespace = mr.metadata.namespace!;
    if (!ref?.name) throw new ReasonedError(Reasons.ProviderRefMissing, 'spec.providerRef.name is not set');
    // A reference into another namespace would let anyone who can create this kind use credentials
    // they cannot read: refuse it.
    if (ref.namespace && ref.namespace !== namespace) {
      throw new ReasonedError(
        Reasons.CrossNamespaceReference,
        `spec.providerRef.namespace '${ref.namespace}' differs from this resource's namespace '${namespace}'; Providers are only used from their own namespace`,
      );
    }
    const provider = this.resolver.provider(namespace, ref.name);
    // Before the target is reached; a deletion still removes what is ours there.
    if (!isDeleting(mr.metadata)) this.refuseNamespaces(provider, mr);
    const target = await this.resolver.resolve(provider, signal);
    this.opts.connected?.(`${namespace}/${mr.metadata.name}`, target);
    const installer = this.opts.installer;
    const ensureOperator =
      installer &&
      ((s: AbortSignal) =>
        installer.ensure(
          target,
          {
            provider,
            owner: providerOwner(provider),
            seen: (present) => {
              const reported = provider.status?.operators?.find((o) => o.name === installer.bundle.name)?.present;
              if (reported !== present) this.opts.operatorChanged?.(provider);
            },
          },
          s,
        ));
    return new NativeExternal(this.kind, target.client, this.marks, {
      prerequisite: ensureOperator,
      recorder: this.opts.recorder,
      reader: target.informers,
      managed: this.opts.managed,
      retirementHold: this.opts.retirementHold,
    });
  }

  /** Refuses a resource that would put its object, or a companion, in a namespace its Provider does not allow. */
  private refuseNamespaces(provider: Provider, mr: MR): void {
    const name = externalNameOf(mr.metadata);
    const ctx = kindContext(this.marks);
    const used = [
      this.kind.desired(mr, name, ctx).metadata.namespace,
      ...(this.kind.companions?.(mr, name, ctx) ?? []).map((c) => c.namespace),
    ];
    const protect = protectedNamespaces(provider, operatorNamespaces());
    const refused = used.find((ns): ns is string => ns !== undefined && !allowsNamespace(provider, ns, protect));
    if (!refused) return;
    const err = namespaceNotAllowed(provider, refused, fieldsHolding(mr.spec, refused, 'spec').join(', ') || 'the target namespace');
    this.opts.recorder?.warning(mr, err.reason, err.message);
    throw err;
  }
}

export function providerOwner(provider: Provider): Owner {
  return {
    resource: 'providers.kubernetes.crossplane.io',
    namespace: provider.metadata.namespace ?? '',
    name: provider.metadata.name,
    uid: provider.metadata.uid ?? '',
  };
}
