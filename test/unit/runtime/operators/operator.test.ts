// OperatorInstaller.ensure's decision to install, against a fake target: never a second operator
// beside one someone else installed under another name or namespace.
import { describe, expect, it } from '@jest/globals';
import type { Client, KubeObjectLike } from '../../../../src/kit/kube/client.ts';
import { CustomResourceDefinitions, type ResourceType } from '../../../../src/kit/kube/resources.ts';
import { ReasonedError } from '../../../../src/kit/conditions.ts';
import { seaweedfsOperator } from '../../../../src/backends/seaweedfs/operator.ts';
import { OperatorInstaller } from '../../../../src/runtime/operators/operator.ts';
import { OwnershipKey } from '../../../../src/runtime/ownership/key.ts';
import { OwnershipMarks } from '../../../../src/runtime/ownership/marks.ts';
import type { ProviderObject } from '../../../../src/runtime/providers/provider.ts';

const marks = new OwnershipMarks('cp-1', new OwnershipKey(Buffer.alloc(32, 7)));
const owner = { resource: 'providers.kubernetes.crossplane.io', namespace: 'infra', name: 'p', uid: 'p-uid' };

/** A target whose only object of the bundle is its CRD (Established), made by `madeBy`, or none. */
function target(madeBy: 'someone else' | 'provider-rook' | 'nobody') {
  const writes: string[] = [];
  const plain: KubeObjectLike = {
    apiVersion: CustomResourceDefinitions.apiVersion,
    kind: CustomResourceDefinitions.kind,
    metadata: { name: seaweedfsOperator.crdName },
  };
  const crd = {
    ...(madeBy === 'provider-rook' ? marks.mark(CustomResourceDefinitions, plain, owner) : plain),
    status: { conditions: [{ type: 'Established', status: 'True' }] },
  };
  const objects = new Map<string, KubeObjectLike>(madeBy === 'nobody' ? [] : [[`CustomResourceDefinition ${crd.metadata.name}`, crd]]);
  const client = {
    get: async (type: ResourceType, { name }: { name: string }) => objects.get(`${type.kind} ${name}`),
    create: async (type: ResourceType, obj: KubeObjectLike) => {
      writes.push(`create ${type.kind} ${obj.metadata.name}`);
      if (type.kind === 'CustomResourceDefinition') objects.set(`${type.kind} ${obj.metadata.name}`, crd);
    },
  } as unknown as Client;
  return { fingerprint: `t-${madeBy}`, client, writes };
}
const provider = (operator: Record<string, unknown>): ProviderObject =>
  ({
    apiVersion: 'kubernetes.crossplane.io/v1alpha2',
    kind: 'Provider',
    metadata: { name: 'p', namespace: 'infra', uid: 'p-uid' },
    spec: { credentialsSecretRef: { name: 's' }, operators: [{ name: 'seaweedfs', install: true, ...operator }] },
  }) as unknown as ProviderObject;

const ensure = (t: ReturnType<typeof target>, settings: Record<string, unknown> = {}) =>
  new OperatorInstaller(seaweedfsOperator, marks).ensure(t, { provider: provider(settings), owner }, new AbortController().signal);

describe('OperatorInstaller.ensure', () => {
  it("installs no second operator where someone else's CRD is there without the Deployment, and says how to go on", async () => {
    const t = target('someone else');
    const err = await ensure(t).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReasonedError);
    expect((err as ReasonedError).reason).toBe('OperatorInstalledElsewhere');
    expect((err as ReasonedError).message).toContain(
      `CRD ${seaweedfsOperator.crdName}, which provider-rook did not install, but no Deployment seaweedfs-operator-system/${seaweedfsOperator.deploymentName}`,
    );
    expect((err as ReasonedError).message).toMatch(/spec\.operators\[0\]\.namespace .*spec\.operators\[0\]\.adopt to true/);
    expect(t.writes).toEqual([]);
  });

  it('with adopt, installs the rest of the bundle beside their CRD, leaving the CRD as it is', async () => {
    const t = target('someone else');
    await ensure(t, { adopt: true });
    expect(t.writes).toContain(`create Deployment ${seaweedfsOperator.deploymentName}`);
    expect(t.writes.filter((w) => w.startsWith('create CustomResourceDefinition'))).not.toContain(
      `create CustomResourceDefinition ${seaweedfsOperator.crdName}`,
    );
  });

  it('installs where nothing of it is there, or where the CRD is one provider-rook installed', async () => {
    for (const madeBy of ['nobody', 'provider-rook'] as const) {
      const t = target(madeBy);
      await ensure(t);
      expect([madeBy, t.writes]).toEqual([madeBy, expect.arrayContaining([`create Deployment ${seaweedfsOperator.deploymentName}`])]);
    }
  });
});
