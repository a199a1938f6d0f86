// reconcileVersion's decisions against a fake target: what it changes of an operator, and for whom.
import { describe, expect, it } from '@jest/globals';
import type { Client, KubeObjectLike } from '../../../../src/kit/kube/client.ts';
import type { ResourceType } from '../../../../src/kit/kube/resources.ts';
import { KubeError, UnreachableError } from '../../../../src/kit/kube/errors.ts';
import { minioOperatorBundle } from '../../../../src/backends/minio-operator/tenant.ts';
import { OperatorInstaller, type OperatorPresence } from '../../../../src/runtime/operators/operator.ts';
import { reconcileVersion } from '../../../../src/runtime/operators/upgrade.ts';
import { OwnershipKey } from '../../../../src/runtime/ownership/key.ts';
import { OwnershipMarks } from '../../../../src/runtime/ownership/marks.ts';
import type { ProviderObject } from '../../../../src/runtime/providers/provider.ts';

const marks = new OwnershipMarks('cp-1', new OwnershipKey(Buffer.alloc(32, 7)));
const installer = new OperatorInstaller(minioOperatorBundle, marks);
const [OLD, NEW] = ['v7.0.1', 'v7.1.1'];

/** Someone else's install at OLD (or `image`): only its Deployment is there; every other object of the bundle is missing. */
function target(image = `minio/operator:${OLD}`, annotations: Record<string, string> = {}) {
  const writes: string[] = [];
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: minioOperatorBundle.deploymentName, namespace: 'minio-operator', annotations, uid: 'd-uid', resourceVersion: '7' },
    spec: { template: { spec: { containers: [{ image }] } } },
    status: { observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1 },
  };
  const client = {
    get: async (type: ResourceType, { name }: { name: string }) =>
      type.kind === 'Deployment' && name === deployment.metadata.name ? deployment : undefined,
    create: async (type: ResourceType, obj: KubeObjectLike) => void writes.push(`create ${type.kind} ${obj.metadata.name}`),
    apply: async (type: ResourceType, obj: KubeObjectLike) => void writes.push(`apply ${type.kind} ${obj.metadata.name}`),
  } as unknown as Client;
  return { client, writes, deployment: deployment as unknown as NonNullable<OperatorPresence['deployment']> };
}
const provider = (operator: Record<string, unknown>): ProviderObject =>
  ({
    apiVersion: 'kubernetes.crossplane.io/v1alpha2',
    kind: 'Provider',
    metadata: { name: 'p', namespace: 'infra', uid: 'p-uid' },
    spec: { credentialsSecretRef: { name: 's' }, operators: [{ name: 'minio-operator', version: NEW, ...operator }] },
  }) as unknown as ProviderObject;

describe('reconcileVersion', () => {
  it("adopting someone else's operator changes what is there, and makes nothing it lacks without leave to install", async () => {
    const { client, writes, deployment } = target();
    const presence = { present: true, installedBy: 'other' as const, missing: [], version: OLD, deployment };
    const upgrade = await reconcileVersion(installer, client, provider({ adopt: true }), presence, new AbortController().signal);
    expect(upgrade).toMatchObject({ to: NEW, phase: 'Progressing' });
    expect(writes).toEqual([`apply Deployment ${minioOperatorBundle.deploymentName}`]);
  });

  it("a bundle the target refuses (an admission policy on the image) is this upgrade's failure, not the Provider's", async () => {
    const { client, deployment } = target();
    const refusing = {
      ...client,
      apply: async () => {
        throw new KubeError(403, 'Forbidden', 'admission webhook "images.example.com" denied the request');
      },
    } as unknown as Client;
    const presence = { present: true, installedBy: 'other' as const, missing: [], version: OLD, deployment };
    const upgrade = await reconcileVersion(installer, refusing, provider({ adopt: true }), presence, new AbortController().signal);
    expect(upgrade).toMatchObject({ to: NEW, phase: 'Failed', reason: 'Forbidden' });
    // A conflict or a server's trouble is tried again, not a failure of the upgrade.
    for (const transient of [
      new KubeError(409, 'Conflict', 'the object has been modified'),
      new KubeError(503, 'ServiceUnavailable', 'x'),
    ]) {
      const flaky = { ...client, apply: async () => Promise.reject(transient) } as unknown as Client;
      await expect(reconcileVersion(installer, flaky, provider({ adopt: true }), presence, new AbortController().signal)).rejects.toBe(
        transient,
      );
    }
    // An unreachable target is the Provider's own state: that still throws.
    const unreachable = {
      ...client,
      apply: async () => Promise.reject(new UnreachableError('cannot reach the target cluster')),
    } as unknown as Client;
    await expect(
      reconcileVersion(installer, unreachable, provider({ adopt: true }), presence, new AbortController().signal),
    ).rejects.toBeInstanceOf(UnreachableError);
  });

  it('with leave to install, it makes what the version adds', async () => {
    const { client, writes, deployment } = target();
    const presence = { present: true, installedBy: 'other' as const, missing: [], version: OLD, deployment };
    await reconcileVersion(installer, client, provider({ adopt: true, install: true }), presence, new AbortController().signal);
    expect(writes.filter((w) => w.startsWith('create')).length).toBeGreaterThan(0);
    expect(writes).toContain(`apply Deployment ${minioOperatorBundle.deploymentName}`);
  });

  it('an image pinned to its digest (by an admission webhook) is at the version last applied: nothing is applied again', async () => {
    const pinned = `minio/operator@sha256:${'a'.repeat(64)}`;
    const { client, writes } = target(pinned, { 'rook.crossplane.io/operator-version': NEW });
    // As the Provider's status finds it: the version is the one last applied, the image saying none.
    const presence = await installer.presence({ client }, { name: 'minio-operator', namespace: 'minio-operator' });
    expect(presence.version).toBe(NEW);
    const upgrade = await reconcileVersion(installer, client, provider({ adopt: true }), presence, new AbortController().signal);
    expect(writes).toEqual([]);
    expect(upgrade).toMatchObject({ to: NEW, phase: 'Complete' });
  });

  it('an apply records the version it applied on the Deployment', async () => {
    const applied: KubeObjectLike[] = [];
    const { client, deployment } = target();
    const recording = { ...client, apply: async (_t: ResourceType, obj: KubeObjectLike) => void applied.push(obj) } as unknown as Client;
    const presence = { present: true, installedBy: 'other' as const, missing: [], version: OLD, deployment };
    await reconcileVersion(installer, recording, provider({ adopt: true }), presence, new AbortController().signal);
    expect(
      applied.map((o) => (o.metadata as { annotations?: Record<string, string> }).annotations?.['rook.crossplane.io/operator-version']),
    ).toEqual([NEW]);
  });

  it('an apply is conditional on the object it judged: its uid and resourceVersion, so one replaced since is not written over', async () => {
    const applied: KubeObjectLike[] = [];
    const { client, deployment } = target();
    const recording = { ...client, apply: async (_t: ResourceType, obj: KubeObjectLike) => void applied.push(obj) } as unknown as Client;
    const presence = { present: true, installedBy: 'other' as const, missing: [], version: OLD, deployment };
    await reconcileVersion(installer, recording, provider({ adopt: true }), presence, new AbortController().signal);
    expect(applied.map((o) => [o.metadata.uid, o.metadata.resourceVersion])).toEqual([['d-uid', '7']]);
  });
});
