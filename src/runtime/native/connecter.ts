// NativeConnecter: managed resource -> its Provider -> the Provider's Secret -> a (cached) client for
// the target cluster -> a nativeExternal that manages one object there.
import { ReasonedError } from '../conditions.ts';
import type { KubeClient, KubeObjectLike } from '../kube/client.ts';
import { Secrets } from '../kube/resources.ts';
import type { ExternalClient, ExternalConnecter, ManagedResource } from '../managed/types.ts';
import type { Reader } from '../managed/reconciler.ts';
import { credentialsFromSecret, type CredentialOptions } from './credentials.ts';
import type { EventRecorder } from '../events.ts';
import { NativeExternal, type NativeKind } from './external.ts';
import type { OperatorInstaller } from './operator.ts';
import { operatorSettings, type ProviderObject as Provider } from './provider.ts';
import type { Owner, OwnershipMarks } from './ownership.ts';
import type { Target, TargetClients } from './targets.ts';

/** Finds the target cluster a Provider names. Secrets are read only in the Provider's namespace. */
export class ProviderResolver {
  private readonly control: KubeClient;
  private readonly providers: Reader<Provider>;
  readonly targets: TargetClients;

  private readonly credentialOptions: CredentialOptions;

  constructor(control: KubeClient, providers: Reader<Provider>, targets: TargetClients, credentialOptions: CredentialOptions = {}) {
    this.control = control;
    this.providers = providers;
    this.targets = targets;
    this.credentialOptions = credentialOptions;
  }

  provider(namespace: string, name: string): Provider {
    const provider = this.providers.get(`${namespace}/${name}`);
    if (!provider) throw new ReasonedError('ProviderNotFound', `Provider ${namespace}/${name} does not exist`);
    return provider;
  }

  async resolve(provider: Provider, signal?: AbortSignal): Promise<Target> {
    const namespace = provider.metadata.namespace!;
    const secretName = provider.spec.credentialsSecretRef.name;
    const where = `${namespace}/${secretName}`;
    const secret = await this.control.get<KubeObjectLike & { data?: Record<string, string> }>(Secrets, secretName, namespace, signal);
    if (!secret) throw new ReasonedError('SecretNotFound', `Secret ${where} named by Provider ${namespace}/${provider.metadata.name} does not exist`);
    return this.targets.get(credentialsFromSecret(where, secret.data, this.credentialOptions));
  }
}

export interface NativeConnecterOptions {
  /** The operator of this kind, shared with the Provider's status. */
  installer?: OperatorInstaller;
  recorder?: EventRecorder;
  /** Called after provider-rook installed an operator into a Provider's target. */
  operatorInstalled?: (provider: Provider) => void;
  /** Called on every connect: which target a resource ("namespace/name") uses. */
  connected?: (key: string, target: Target) => void;
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
    if (!ref?.name) throw new ReasonedError('ProviderRefMissing', 'spec.providerRef.name is not set');
    // A reference into another namespace would let anyone who can create this kind use credentials
    // they cannot read: refuse it.
    if (ref.namespace && ref.namespace !== namespace) {
      throw new ReasonedError('CrossNamespaceReference', `spec.providerRef.namespace '${ref.namespace}' differs from this resource's namespace '${namespace}'; Providers are only used from their own namespace`);
    }
    const provider = this.resolver.provider(namespace, ref.name);
    const target = await this.resolver.resolve(provider, signal);
    this.opts.connected?.(`${namespace}/${mr.metadata.name}`, target);
    const installer = this.opts.installer;
    const ensureOperator = installer && ((s: AbortSignal) => installer.ensure(target, {
      where: `${namespace}/${ref.name}`, owner: providerOwner(provider), settings: operatorSettings(provider, installer.bundle.name, installer.bundle.legacy),
      installed: () => this.opts.operatorInstalled?.(provider),
    }, s));
    return new NativeExternal(this.kind, target.client, this.marks, { prerequisite: ensureOperator, recorder: this.opts.recorder });
  }
}

export function providerOwner(provider: Provider): Owner {
  return { resource: 'providers.kubernetes.crossplane.io', namespace: provider.metadata.namespace ?? '', name: provider.metadata.name, uid: provider.metadata.uid ?? '' };
}
