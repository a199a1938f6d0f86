// An operator's version on one target: a Provider names the version it wants in
// spec.operators[].version; an operator provider-rook installed (or one the Provider adopts) is
// brought to it by applying that version's bundle, and its Deployment's rollout is reported as the
// Deployment controller writes it. Going back is the same operation. Someone else's operator is
// never changed unless the Provider says to adopt it.
import { getCondition } from '../../kit/conditions.ts';
import type { ReadonlyDeep } from '../../kit/controller/informer.ts';
import type { Client, KubeObjectLike } from '../../kit/kube/client.ts';
import { Deployments, typeOfManifest } from '../../kit/kube/resources.ts';
import { ANNOTATION_OPERATOR_VERSION, imageTag, installRefusal, type OperatorInstaller, type OperatorPresence } from './operator.ts';
import { operatorField, operatorSettings, type OperatorStatus, type ProviderObject } from '../providers/provider.ts';
import { keyOf } from '../../kit/controller/result.ts';
import { KubeError } from '../../kit/kube/errors.ts';
import { reasonOf } from '../reasons.ts';

type Upgrade = NonNullable<OperatorStatus['upgrade']>;

/** The Deployment controller's reason for a rollout past its deadline, which may still recover by itself. */
export const ROLLOUT_STALLED = 'ProgressDeadlineExceeded';

/** On an operator's Deployment: the Provider ("namespace/name") whose spec.operators[].version it follows. */
export const ANNOTATION_VERSION_SET_BY = 'rook.crossplane.io/operator-version-set-by';

type Deployment = KubeObjectLike & {
  metadata: KubeObjectLike['metadata'] & { generation?: number; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: { replicas?: number; template?: { spec?: { containers?: { image?: string }[] } } };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    availableReplicas?: number;
    conditions?: { type: string; status: string; reason?: string }[];
  };
};

/** Where the operator's version stands against what the Provider asks; undefined when it asks for none, or nothing is installed yet. */
export async function reconcileVersion(
  installer: OperatorInstaller,
  client: Client,
  provider: ReadonlyDeep<ProviderObject>,
  presence: OperatorPresence,
  signal: AbortSignal,
): Promise<Upgrade | undefined> {
  const { bundle } = installer;
  const settings = operatorSettings(provider, bundle.name, bundle.legacy);
  const to = settings.version;
  // Not installed: an install (on demand) brings the version asked for.
  if (!to || !presence.deployment) return undefined;
  const refusal = installRefusal(bundle, { ...provider, spec: { ...provider.spec, operators: [{ ...settings, install: true }] } });
  if (refusal) return { to, phase: 'Failed', reason: refusal.reason, message: refusal.message };
  const deployment = presence.deployment as Deployment;
  const running = deployment.spec?.template?.spec?.containers?.[0]?.image;
  const setBy = deployment.metadata.annotations?.[ANNOTATION_VERSION_SET_BY];
  const self = keyOf(provider.metadata);
  // By version (the image's tag): a registry mirror or an admission webhook may rewrite the rest, or
  // pin it to a digest (then the version last applied says it, or the same bundle would be applied again and again).
  if (presence.version !== (imageTag(settings.image ?? bundle.imageOf(to)) ?? to)) {
    if (setBy && setBy !== self) {
      return {
        to,
        phase: 'Held',
        message: `Provider ${setBy} sets the version of this ${bundle.description} (the same target and namespace); change it there, or remove annotation ${ANNOTATION_VERSION_SET_BY} from its Deployment`,
      };
    }
    // Installed by provider-rook for another Provider of this target and namespace: that one's to change.
    const installedFor = presence.installedBy === 'provider-rook' ? installer.marks.provenOwner(Deployments, deployment) : undefined;
    if (installedFor && installedFor.key !== self && setBy !== self && !settings.adopt) {
      return {
        to,
        phase: 'Held',
        message:
          `Provider ${installedFor.key} installed this ${bundle.description} (the same target and namespace) and keeps its version; ` +
          `change it there, or set ${operatorField(provider, bundle.name, bundle.legacy)}.adopt to true to set it from here`,
      };
    }
    if (presence.installedBy !== 'provider-rook' && !settings.adopt) {
      return {
        to,
        phase: 'Held',
        message:
          `someone else installed the ${bundle.description} (it runs ${presence.version ?? running ?? 'an unknown version'}); provider-rook changes ` +
          `only what it installed, unless ${operatorField(provider, bundle.name, bundle.legacy)}.adopt is true`,
      };
    }
    try {
      await applyVersion(installer, client, provider, settings, signal);
    } catch (err) {
      // The target refused it (an admission policy on the image, RBAC it may not grant, a CRD's stored
      // versions): this upgrade failed, which stops its wave. Not the Provider: it stays Ready and
      // schedulable. An unreachable target is the Provider's own state.
      if (!refusedByTarget(err) || signal.aborted) throw err;
      return { to, phase: 'Failed', reason: reasonOf(err), message: `the ${to} bundle was refused: ${(err as Error).message}` };
    }
    return { to, phase: 'Progressing', message: `applied the ${to} bundle; waiting for its Deployment to roll out` };
  }
  return rollout(deployment, to);
}

/** That version's manifests over what is there: ours keep their marks; someone else's only when adopted; what is missing is made ours. */
async function applyVersion(
  installer: OperatorInstaller,
  client: Client,
  provider: ReadonlyDeep<ProviderObject>,
  settings: ReturnType<typeof operatorSettings>,
  signal: AbortSignal,
): Promise<void> {
  const { marks, bundle } = installer;
  // What a version adds belongs to the Provider that asked for it; Orphan, so no sweep ever takes it.
  const owner = {
    resource: 'providers.kubernetes.crossplane.io',
    namespace: provider.metadata.namespace ?? '',
    name: provider.metadata.name,
    uid: provider.metadata.uid ?? '',
    reclaimPolicy: 'Orphan',
  };
  for (const manifest of bundle.manifests(settings) as Deployment[]) {
    const type = typeOfManifest(manifest);
    const existing = await client.get<Deployment>(type, { namespace: manifest.metadata.namespace, name: manifest.metadata.name }, signal);
    if (!existing) {
      // Only a Provider allowed to install makes what a version adds (it may grant cluster-wide rights).
      if (settings.install) await client.create(type, marks.mark(type, manifest, owner), signal);
      continue;
    }
    const ours = Boolean(marks.provenOwner(type, existing));
    if (!ours && !settings.adopt) continue;
    // A cluster-wide binding made for the operator in another namespace (another Provider's install) is left as it is.
    if (bindsElsewhere(existing, manifest)) continue;
    const { labels, annotations } = existing.metadata;
    const setBy =
      manifest.kind === 'Deployment' && manifest.metadata.name === bundle.deploymentName
        ? {
            [ANNOTATION_VERSION_SET_BY]: keyOf(provider.metadata),
            ...(settings.version ? { [ANNOTATION_OPERATOR_VERSION]: settings.version } : {}),
          }
        : {};
    // Written only while it is the very object just judged: one replaced or changed since is judged again.
    const { uid, resourceVersion } = existing.metadata;
    await client.apply(
      type,
      {
        ...manifest,
        metadata: {
          ...manifest.metadata,
          uid,
          resourceVersion,
          labels: { ...labels, ...manifest.metadata.labels },
          annotations: { ...annotations, ...manifest.metadata.annotations, ...setBy },
        },
      },
      signal,
    );
  }
}

/** A binding whose subjects live in other namespaces than the manifest's: another install's. */
function bindsElsewhere(existing: KubeObjectLike, manifest: KubeObjectLike): boolean {
  const namespaces = (o: KubeObjectLike) =>
    ((o as { subjects?: { namespace?: string }[] }).subjects ?? [])
      .map((x) => x.namespace ?? '')
      .sort()
      .join(',');
  return existing.kind === 'ClusterRoleBinding' && namespaces(existing) !== namespaces(manifest);
}

/** The rollout, as the Deployment controller reports it (observedGeneration, updated and available replicas, Progressing). */
export function rollout(deployment: Deployment, to: string): Upgrade {
  const where = `Deployment ${deployment.metadata.namespace}/${deployment.metadata.name}`;
  const status = deployment.status ?? {};
  // First: a condition from before the change (a failed rollout being undone) says nothing of this one.
  if ((status.observedGeneration ?? 0) < (deployment.metadata.generation ?? 0)) {
    return { to, phase: 'Progressing', message: `waiting for the Deployment controller to see ${where}'s change` };
  }
  const progressing = getCondition(status.conditions, 'Progressing');
  const stalled = progressing?.status === 'False' ? progressing : undefined;
  if (stalled?.reason === ROLLOUT_STALLED) {
    return {
      to,
      phase: 'Failed',
      reason: ROLLOUT_STALLED,
      message: `${where} did not roll out ${to} within its progress deadline (ProgressDeadlineExceeded)`,
    };
  }
  const want = deployment.spec?.replicas ?? 1;
  const updated = status.updatedReplicas ?? 0;
  const available = status.availableReplicas ?? 0;
  if (updated >= want && available >= want && (status.replicas ?? 0) <= want) return { to, phase: 'Complete' };
  return { to, phase: 'Progressing', message: `${where}: ${updated}/${want} pods updated, ${available} available` };
}

/**
 * An answer that refuses the bundle itself (invalid, forbidden, denied at admission), which trying
 * again does not mend; not a conflict, a throttle or a server's trouble, which the next pass retries.
 */
function refusedByTarget(err: unknown): boolean {
  return err instanceof KubeError && (err.code === 400 || err.code === 403 || err.code === 422);
}
