// Installs the operator a native kind depends on into a target that lacks it (crossplane-runtime
// #34), when the Provider allows it. One install per target at a time however many resources ask;
// objects someone else installed are never changed; nothing is ever uninstalled.
import { ReasonedError } from '../conditions.ts';
import type { KubeClient, KubeObjectLike } from '../kube/client.ts';
import { ClusterRoleBindings, ClusterRoles, CustomResourceDefinitions, Deployments, Namespaces, ServiceAccounts, type ResourceType } from '../kube/resources.ts';
import type { Owner, OwnershipMarks } from './ownership.ts';

export interface OperatorSettings {
  enabled?: boolean;
  image?: string;
  namespace?: string;
}

export interface OperatorBundle {
  /** e.g. "the Rook MinIO operator" */
  description: string;
  crdName: string;
  deploymentName: string;
  defaultNamespace: string;
  /** The objects to install, for these settings (namespace and image applied). */
  manifests(settings: OperatorSettings): KubeObjectLike[];
}

export interface OperatorPresence {
  present: boolean;
  /** 'provider-rook' when we installed it, 'other' when someone else did. */
  installedBy?: 'provider-rook' | 'other';
  missing: string[];
}

const TYPES: Record<string, ResourceType> = Object.fromEntries(
  [Namespaces, CustomResourceDefinitions, ClusterRoles, ClusterRoleBindings, ServiceAccounts, Deployments].map((t) => [`${t.apiVersion}/${t.kind}`, t]),
);

type Obj = KubeObjectLike & { metadata: KubeObjectLike['metadata'] & { labels?: Record<string, string> }; status?: { conditions?: { type: string; status: string }[] } };

function typeOf(obj: KubeObjectLike): ResourceType {
  const type = TYPES[`${obj.apiVersion}/${obj.kind}`];
  if (!type) throw new Error(`operator bundle has an unsupported kind ${obj.apiVersion}/${obj.kind}`);
  return type;
}

export function established(crd: Obj | undefined): boolean {
  return crd?.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
}

export class OperatorInstaller {
  private readonly inflight = new Map<string, Promise<void>>();
  private readonly verified = new Map<string, number>();
  private readonly bundle: OperatorBundle;
  private readonly marks: OwnershipMarks;

  constructor(bundle: OperatorBundle, marks: OwnershipMarks) {
    this.bundle = bundle;
    this.marks = marks;
  }

  async presence(client: KubeClient, settings: OperatorSettings = {}, signal?: AbortSignal): Promise<OperatorPresence> {
    const namespace = settings.namespace ?? this.bundle.defaultNamespace;
    const [crd, deployment] = await Promise.all([
      client.get<Obj>(CustomResourceDefinitions, this.bundle.crdName, undefined, signal),
      client.get<Obj>(Deployments, this.bundle.deploymentName, namespace, signal),
    ]);
    const missing = [
      ...(established(crd) ? [] : [`CRD ${this.bundle.crdName}${crd ? ' (not Established)' : ''}`]),
      ...(deployment ? [] : [`Deployment ${namespace}/${this.bundle.deploymentName}`]),
    ];
    const ours = [crd, deployment].some((o) => o && this.marks.ownerKey(o));
    return { present: missing.length === 0, ...(crd || deployment ? { installedBy: ours ? 'provider-rook' : 'other' } : {}), missing };
  }

  /**
   * Makes sure the operator is there before a create. Throws a ReasonedError saying what is missing
   * and what to do, or that the install is still settling (the caller retries with backoff).
   */
  async ensure(target: { fingerprint: string; client: KubeClient }, provider: { where: string; owner: Owner; settings?: OperatorSettings }, signal?: AbortSignal): Promise<void> {
    if ((this.verified.get(target.fingerprint) ?? 0) > Date.now()) return;
    const settings = provider.settings ?? {};
    const presence = await this.presence(target.client, settings, signal);
    if (presence.present) {
      this.verified.set(target.fingerprint, Date.now() + 5 * 60_000);
      return;
    }
    if (!settings.enabled) {
      throw new ReasonedError('OperatorMissing',
        `the target cluster has no ${this.bundle.description} (missing ${presence.missing.join(', ')}): install it there ` +
        `(kubectl apply -f config/operator/) or set spec.operatorInstall.enabled: true on Provider ${provider.where}`);
    }
    // Concurrent creates on one fresh target share one install.
    let install = this.inflight.get(target.fingerprint);
    if (!install) {
      install = this.install(target.client, provider.owner, settings, signal).finally(() => this.inflight.delete(target.fingerprint));
      this.inflight.set(target.fingerprint, install);
    }
    await install;
    const crd = await target.client.get<Obj>(CustomResourceDefinitions, this.bundle.crdName, undefined, signal);
    if (!established(crd)) throw new ReasonedError('WaitingForCRD', `installed ${this.bundle.description}; waiting for CRD ${this.bundle.crdName} to become Established`);
    this.verified.set(target.fingerprint, Date.now() + 5 * 60_000);
  }

  private async install(client: KubeClient, owner: Owner, settings: OperatorSettings, signal?: AbortSignal): Promise<void> {
    for (const manifest of this.bundle.manifests(settings)) {
      const type = typeOf(manifest);
      const existing = await client.get<Obj>(type, manifest.metadata.name, manifest.metadata.namespace, signal);
      if (existing) continue; // ours already, or someone else's: leave it as it is
      const marked = {
        ...manifest,
        metadata: {
          ...manifest.metadata,
          labels: { ...(manifest.metadata as Obj['metadata']).labels, ...this.marks.labels(owner) },
          annotations: this.marks.annotations(owner),
        },
      };
      await client.apply(type, marked, signal);
    }
  }
}
