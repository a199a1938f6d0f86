// Installs the operator a native kind depends on into a target that lacks it, when the Provider
// allows it (a store needs its operator before its first object means anything). One install per target at a time however many resources ask;
// objects someone else installed are never changed; nothing is ever uninstalled. A bundle is data:
// a folder of manifests, with the Provider's namespace and image applied.
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import path from 'node:path';
import * as yaml from 'js-yaml';
import { ReasonedError } from '../../kit/conditions.ts';
import { Reasons } from '../reasons.ts';
import type { Client, KubeObjectLike } from '../../kit/kube/client.ts';
import { established } from '../../kit/kube/crds.ts';
import { CustomResourceDefinitions, Deployments, typeOfManifest } from '../../kit/kube/resources.ts';
import type { Owner, OwnershipMarks } from '../ownership/marks.ts';
import type { TargetInformers } from '../providers/target-informers.ts';
import {
  namespaceNotAllowed,
  operatorField,
  operatorSettings,
  SYSTEM_NAMESPACES,
  type OperatorSettings,
  type ProviderObject,
} from '../providers/provider.ts';
import { isAlreadyExists, KubeError } from '../../kit/kube/errors.ts';
import { fs } from '../../kit/builtins.ts';
import { byVersion } from '../../kit/order.ts';

export interface OperatorBundle {
  /** Its key in a Provider's spec.operators and status.operators, e.g. "rook-minio". */
  name: string;
  /** e.g. "the Rook MinIO operator" */
  description: string;
  crdName: string;
  deploymentName: string;
  defaultNamespace: string;
  /** The image of the default version. */
  defaultImage: string;
  /** The versions it ships (config/operators/NAME/VERSION/), oldest first; the last is the default. */
  versions: string[];
  /** The operator's image at `version`. */
  imageOf(version: string): string;
  /** Configured by v0.1's single spec.operatorInstall field (the Rook MinIO operator only). */
  legacy?: boolean;
  /** The objects to install, for these settings (namespace and image applied). */
  manifests(settings: OperatorSettings): KubeObjectLike[];
}

export interface OperatorPresence {
  present: boolean;
  /** 'provider-rook' when we installed it, 'other' when someone else did. */
  installedBy?: 'provider-rook' | 'other';
  missing: string[];
  /** The version its Deployment runs (its image's tag). */
  version?: string;
  /** The Deployment as read, for its rollout. */
  deployment?: Obj;
  /** The CRD as read, for who made it. */
  crd?: Obj;
}

type Obj = KubeObjectLike & {
  metadata: KubeObjectLike['metadata'] & { labels?: Record<string, string> };
  status?: { conditions?: { type: string; status: string }[] };
};
type Loose = KubeObjectLike & Record<string, unknown>;

// Cluster-scoped kinds first, namespaced ones last, so a namespace exists before what lives in it.
// A ServiceAccount before the Deployment that runs as it: an install cut off between them would leave
// a Deployment whose pods are refused, and presence (its CRD and Deployment) would not see it.
const ORDER = ['Namespace', 'CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding', 'ServiceAccount'];
/**
 * Admission policies a bundle brings beside its operator (not the operator's own): made last, and
 * where a target cannot take them (a server before Kubernetes 1.30, a role that does not grant them)
 * the operator runs without them, as one installed otherwise would. An install of ours made before
 * a bundle had them gets them at its next check (ensure).
 */
const GUARDS = ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'];
const rank = (kind: string | undefined): number =>
  GUARDS.includes(kind ?? '') ? ORDER.length + 1 : ORDER.includes(kind ?? '') ? ORDER.indexOf(kind!) : ORDER.length;

// Every bundle's default namespace: no store goes there, nor another operator, unless a Provider says so.
const defaultNamespaces = new Set<string>();
/** The default namespaces of the operators this process knows (every backend makes its bundle on import). */
export const operatorNamespaces = (): ReadonlySet<string> => defaultNamespaces;

/**
 * On an operator's Deployment: the version provider-rook applied, for when its image no longer says
 * it (an admission webhook that pins images to their digests).
 */
export const ANNOTATION_OPERATOR_VERSION = 'rook.crossplane.io/operator-version';

/** An image's tag: the version it runs; none for an image named by its digest alone (a digest is not a tag). */
export const imageTag = (image: string | undefined): string | undefined => /:([^:/]+)$/.exec((image ?? '').split('@')[0]!)?.[1];

/** The versions a bundle folder ships: its subfolders (v7.0.1/, v7.1.1/), oldest first; or none (one version, files at the top). */
export function bundleVersions(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort(byVersion);
}

/** The folder of one version of a bundle (the newest unless named). */
export function bundleDirectory(dir: string, version?: string): string {
  const versions = bundleVersions(dir);
  return versions.length ? path.join(dir, version ?? versions.at(-1)!) : dir;
}

const loadDirectory = (dir: string): KubeObjectLike[] =>
  fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .flatMap((f) =>
      (yaml.loadAll(fs.readFileSync(path.join(dir, f), 'utf8')) as (KubeObjectLike | null)[]).filter((d): d is KubeObjectLike =>
        Boolean(d),
      ),
    )
    .sort((a, b) => rank(a.kind) - rank(b.kind));

type Containers = { spec: { template: { spec: { containers: { image: string }[] } } } };

/**
 * A bundle from a folder of manifests that install into `defaultNamespace`: one subfolder per
 * version, or the files themselves for a bundle of one version (`defaultImage`'s).
 */
export function bundleFromDirectory(dir: string, facts: Omit<OperatorBundle, 'manifests' | 'versions' | 'imageOf'>): OperatorBundle {
  defaultNamespaces.add(facts.defaultNamespace);
  const folders = bundleVersions(dir);
  const versions = folders.length ? folders : [imageTag(facts.defaultImage) ?? 'default'];
  const loaded = new Map<string, KubeObjectLike[]>();
  const load = (version: string): KubeObjectLike[] => {
    let docs = loaded.get(version);
    if (!docs) loaded.set(version, (docs = loadDirectory(folders.length ? path.join(dir, version) : dir)));
    return docs;
  };
  const imageOf = (version: string): string => {
    const deployment = load(version).find((d) => d.kind === 'Deployment' && d.metadata.name === facts.deploymentName);
    return (deployment as (KubeObjectLike & Containers) | undefined)?.spec.template.spec.containers[0]?.image ?? facts.defaultImage;
  };
  return {
    ...facts,
    versions,
    imageOf,
    defaultImage: imageOf(versions.at(-1)!),
    manifests(settings) {
      const namespace = settings.namespace ?? facts.defaultNamespace;
      const version = settings.version ?? versions.at(-1)!;
      const image = settings.image ?? imageOf(version);
      return load(version).map((doc) => {
        const obj = structuredClone(doc) as Loose;
        if (obj.kind === 'Namespace' && obj.metadata.name === facts.defaultNamespace) obj.metadata.name = namespace;
        if (obj.metadata.namespace === facts.defaultNamespace) obj.metadata.namespace = namespace;
        for (const s of (obj.subjects as { namespace?: string }[] | undefined) ?? [])
          if (s.namespace === facts.defaultNamespace) s.namespace = namespace;
        if (obj.kind === 'Deployment' && obj.metadata.name === facts.deploymentName) {
          for (const c of (obj as unknown as Containers).spec.template.spec.containers) c.image = image;
        }
        return obj;
      });
    },
  };
}

/**
 * Why the Provider may not install this operator as it configures it, or undefined: an image other than
 * the bundle's without imageOverride, or a system or another operator's namespace it does not list.
 */
export function installRefusal(bundle: OperatorBundle, provider: ReadonlyDeep<ProviderObject>): ReasonedError | undefined {
  const settings = operatorSettings(provider, bundle.name, bundle.legacy);
  const field = operatorField(provider, bundle.name, bundle.legacy);
  if (settings.version && !bundle.versions.includes(settings.version)) {
    return new ReasonedError(
      Reasons.OperatorVersionUnknown,
      `${field}.version is ${settings.version}, a version of the ${bundle.description} provider-rook does not ship: use one of ${bundle.versions.join(', ')}`,
    );
  }
  if (!settings.install) return undefined;
  const own = bundle.imageOf(settings.version ?? bundle.versions.at(-1)!);
  if (settings.image && settings.image !== own && !settings.imageOverride) {
    return new ReasonedError(
      Reasons.OperatorImageNotAllowed,
      `${field}.image is ${settings.image}, not the ${bundle.description}'s own (${own}): ` +
        `provider-rook installs another image only when ${field}.imageOverride is true`,
    );
  }
  const namespace = settings.namespace ?? bundle.defaultNamespace;
  const others = [...SYSTEM_NAMESPACES, ...[...defaultNamespaces].filter((n) => n !== bundle.defaultNamespace)];
  if (others.includes(namespace) && !provider.spec.allowedNamespaces?.includes(namespace))
    return namespaceNotAllowed(provider, namespace, `${field}.namespace`);
  return undefined;
}

export class OperatorInstaller {
  private readonly inflight = new Map<string, Promise<void>>();
  private readonly verified = new Map<string, number>();
  readonly bundle: OperatorBundle;
  readonly marks: OwnershipMarks;

  constructor(bundle: OperatorBundle, marks: OwnershipMarks) {
    this.bundle = bundle;
    this.marks = marks;
  }

  /** From the target's watches of the CRD and the Deployment (made on first use), or live without them. */
  async presence(
    target: { client: Client; informers?: TargetInformers },
    settings: OperatorSettings,
    signal?: AbortSignal,
  ): Promise<OperatorPresence> {
    const namespace = settings.namespace ?? this.bundle.defaultNamespace;
    const { informers } = target;
    if (informers) {
      informers.crd(this.bundle.crdName);
      informers.informer(Deployments, { namespace, fieldSelector: `metadata.name=${this.bundle.deploymentName}` });
    }
    const read = informers ?? target.client;
    const [crd, deployment] = await Promise.all([
      read.get<Obj>(CustomResourceDefinitions, { name: this.bundle.crdName }, signal),
      read.get<Obj>(Deployments, { namespace, name: this.bundle.deploymentName }, signal),
    ]);
    const missing = [
      ...(established(crd) ? [] : [`CRD ${this.bundle.crdName}${crd ? ' (not Established)' : ''}`]),
      ...(deployment ? [] : [`Deployment ${namespace}/${this.bundle.deploymentName}`]),
    ];
    // Who installed it is who made its Deployment (the CRD, shared by every install of a cluster, when there is none).
    const ours = deployment
      ? Boolean(this.marks.provenOwner(Deployments, deployment))
      : Boolean(crd && this.marks.provenOwner(CustomResourceDefinitions, crd));
    // The image's tag, or (pinned to a digest) the version provider-rook last applied.
    const version =
      imageTag((deployment as (Obj & Containers) | undefined)?.spec?.template.spec.containers[0]?.image) ??
      (deployment as { metadata: { annotations?: Record<string, string> } } | undefined)?.metadata.annotations?.[
        ANNOTATION_OPERATOR_VERSION
      ];
    return {
      present: missing.length === 0,
      ...(crd || deployment ? { installedBy: ours ? 'provider-rook' : 'other' } : {}),
      missing,
      ...(version ? { version } : {}),
      ...(deployment ? { deployment } : {}),
      ...(crd ? { crd } : {}),
    };
  }

  /**
   * Makes sure the operator is there before a create. Throws a ReasonedError saying what is missing
   * and what to do, or that the install is still settling (the caller retries with backoff).
   * `seen` hears each finding of whether the operator is there (for the Provider's status).
   */
  async ensure(
    target: { fingerprint: string; client: Client; informers?: TargetInformers },
    using: { provider: ReadonlyDeep<ProviderObject>; owner: Owner; seen?: (present: boolean) => void },
    signal?: AbortSignal,
  ): Promise<void> {
    const { provider } = using;
    const settings = operatorSettings(provider, this.bundle.name, this.bundle.legacy);
    // Per target and namespace: two Providers of one cluster may keep the operator in namespaces of their own.
    const where = `${target.fingerprint}/${settings.namespace ?? this.bundle.defaultNamespace}`;
    if ((this.verified.get(where) ?? 0) > Date.now()) return;
    const presence = await this.presence(target, settings, signal);
    using.seen?.(presence.present);
    if (presence.present) {
      // Its guards, where this Provider may install: best effort, as they never hold up what the operator does.
      if (presence.installedBy === 'provider-rook' && settings.install && !installRefusal(this.bundle, provider))
        await this.install(target.client, using.owner, settings, signal, GUARDS).catch(() => undefined);
      this.verified.set(where, Date.now() + 5 * 60_000);
      return;
    }
    if (!settings.install) {
      throw new ReasonedError(
        Reasons.OperatorMissing,
        `the target cluster has no ${this.bundle.description} (missing ${presence.missing.join(', ')}): install it there, ` +
          `or allow provider-rook to by adding {name: ${this.bundle.name}, install: true} to spec.operators of Provider ${provider.metadata.namespace}/${provider.metadata.name}`,
      );
    }
    const refusal = this.refusal(presence, provider);
    if (refusal) throw refusal;
    // Concurrent creates on one fresh target share one install.
    let install = this.inflight.get(where);
    if (!install) {
      install = this.install(target.client, using.owner, settings, signal).finally(() => this.inflight.delete(where));
      this.inflight.set(where, install);
    }
    await install;
    const crd = await target.client.get<Obj>(CustomResourceDefinitions, { name: this.bundle.crdName }, signal);
    if (!established(crd))
      throw new ReasonedError(
        Reasons.WaitingForCRD,
        `installed ${this.bundle.description}; waiting for CRD ${this.bundle.crdName} to become Established`,
      );
    using.seen?.(true);
    this.verified.set(where, Date.now() + 5 * 60_000);
  }

  /** Why an operator that is not there, and that the Provider lets provider-rook install, is not installed; or undefined. */
  refusal(presence: OperatorPresence, provider: ReadonlyDeep<ProviderObject>): ReasonedError | undefined {
    const settings = operatorSettings(provider, this.bundle.name, this.bundle.legacy);
    if (presence.present || !settings.install) return undefined;
    return installRefusal(this.bundle, provider) ?? this.installedElsewhere(presence, provider, settings);
  }

  /**
   * Why not to install where someone else's CRD of this operator is there but not its Deployment at
   * this name and namespace, or undefined: their operator may run under another name or namespace
   * (a Helm release names it), and a second one watches every namespace too, acting on their stores.
   * Left behind by an uninstall, the CRD proves nothing either way; `installBesideOthers` says to
   * install anyway. A CRD that claims this control plane's marks without proving them (made before
   * marks were signed, or under a lost key) is taken for ours: a forged claim only brings an install
   * the Provider allows anyway.
   */
  private installedElsewhere(
    presence: OperatorPresence,
    provider: ReadonlyDeep<ProviderObject>,
    settings: Readonly<OperatorSettings>,
  ): ReasonedError | undefined {
    if (presence.installedBy !== 'other' || settings.installBesideOthers) return undefined;
    const { bundle } = this;
    const field = operatorField(provider, bundle.name, bundle.legacy);
    const namespace = settings.namespace ?? bundle.defaultNamespace;
    // Someone else's Deployment at this very name without its CRD (their install under way, or half
    // undone): a CRD and cluster-wide rights of ours beside it would run under their operator's version.
    if (presence.deployment && !this.marks.claimedOwner(presence.deployment))
      return new ReasonedError(
        Reasons.OperatorInstalledElsewhere,
        `the target cluster has Deployment ${namespace}/${bundle.deploymentName}, which provider-rook did not install, but not ` +
          `${presence.missing.join(', ')}: someone else's install of the ${bundle.description} may be under way or half undone, and ` +
          `provider-rook installs nothing beside it. Finish that install, or set ${field}.installBesideOthers to true to complete it anyway`,
      );
    if (presence.crd && this.marks.claimedOwner(presence.crd)) return undefined;
    // v0.1's field has no room for the answer: the settings move to an entry of spec.operators.
    const fromV01 = bundle.legacy && !provider.spec.operators?.some((o) => o.name === bundle.name);
    const remedy = fromV01
      ? `Move spec.operatorInstall to an entry {name: ${bundle.name}, install: true} of spec.operators, then set its namespace to where it runs under that name, or its installBesideOthers to true to install one in ${namespace} anyway`
      : `Set ${field}.namespace to where it runs under that name, or ${field}.installBesideOthers to true to install one in ${namespace} anyway`;
    return new ReasonedError(
      Reasons.OperatorInstalledElsewhere,
      `the target cluster has CRD ${bundle.crdName}, which provider-rook did not install, but no Deployment ${namespace}/${bundle.deploymentName}: ` +
        `the ${bundle.description} someone else installed may run elsewhere, and a second one would act on their stores too, so none is installed. ${remedy}`,
    );
  }

  /** Makes what of the bundle is missing (of `kinds` only, when given). */
  private async install(client: Client, owner: Owner, settings: OperatorSettings, signal?: AbortSignal, kinds?: string[]): Promise<void> {
    for (const manifest of this.bundle.manifests(settings)) {
      if (kinds && !kinds.includes(manifest.kind ?? '')) continue;
      const type = typeOfManifest(manifest);
      try {
        const existing = await client.get<Obj>(type, { namespace: manifest.metadata.namespace, name: manifest.metadata.name }, signal);
        if (existing) continue; // ours already, or someone else's: leave it as it is
        // A create, not an apply: one made by someone else in between stays theirs (409, left alone).
        await client.create(type, this.marks.mark(type, manifest as Obj, owner), signal).catch((err: unknown) => {
          if (!isAlreadyExists(err)) throw err;
        });
      } catch (err) {
        const cannotTake = err instanceof KubeError && (err.code === 404 || err.code === 403);
        if (!(GUARDS.includes(manifest.kind ?? '') && cannotTake)) throw err;
      }
    }
  }
}
