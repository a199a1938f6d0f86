// OperatorInstaller.ensure's decision to install, against a fake target: never a second operator
// beside one someone else installed under another name or namespace.
import { describe, expect, it } from '@jest/globals';
import type { Client, KubeObjectLike } from '../../../../src/kit/kube/client.ts';
import { CustomResourceDefinitions, Deployments, type ResourceType } from '../../../../src/kit/kube/resources.ts';
import { KubeError } from '../../../../src/kit/kube/errors.ts';
import { ReasonedError } from '../../../../src/kit/conditions.ts';
import { seaweedfsOperator } from '../../../../src/backends/seaweedfs/operator.ts';
import { rookMinioOperator } from '../../../../src/backends/rook-minio/objectstore.ts';
import { OperatorInstaller } from '../../../../src/runtime/operators/operator.ts';
import { OwnershipKey } from '../../../../src/runtime/ownership/key.ts';
import { OwnershipMarks } from '../../../../src/runtime/ownership/marks.ts';
import type { ProviderObject } from '../../../../src/runtime/providers/provider.ts';

const marks = new OwnershipMarks('cp-1', new OwnershipKey(Buffer.alloc(32, 7)));
const owner = { resource: 'providers.kubernetes.crossplane.io', namespace: 'infra', name: 'p', uid: 'p-uid' };

/** The same control plane's marks under a key it no longer holds (lost, and made anew). */
const lostKey = new OwnershipMarks('cp-1', new OwnershipKey(Buffer.alloc(32, 9)));

/** A target whose only object of the bundle is its CRD (Established), made by `madeBy`, or none. */
function target(madeBy: 'someone else' | 'provider-rook' | 'provider-rook, under a lost key' | 'nobody', bundle = seaweedfsOperator) {
  const writes: string[] = [];
  const plain: KubeObjectLike = {
    apiVersion: CustomResourceDefinitions.apiVersion,
    kind: CustomResourceDefinitions.kind,
    metadata: { name: bundle.crdName },
  };
  const signer = { 'provider-rook': marks, 'provider-rook, under a lost key': lostKey }[madeBy as string];
  const crd = {
    ...(signer ? signer.mark(CustomResourceDefinitions, plain, owner) : plain),
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
const provider = (spec: Record<string, unknown>): ProviderObject =>
  ({
    apiVersion: 'kubernetes.crossplane.io/v1alpha2',
    kind: 'Provider',
    metadata: { name: 'p', namespace: 'infra', uid: 'p-uid' },
    spec: { credentialsSecretRef: { name: 's' }, ...spec },
  }) as unknown as ProviderObject;

const ensure = (t: ReturnType<typeof target>, settings: Record<string, unknown> = {}) =>
  new OperatorInstaller(seaweedfsOperator, marks).ensure(
    t,
    { provider: provider({ operators: [{ name: 'seaweedfs', install: true, ...settings }] }), owner },
    new AbortController().signal,
  );

describe('OperatorInstaller.ensure', () => {
  it("installs no second operator where someone else's CRD is there without the Deployment, and says how to go on", async () => {
    const t = target('someone else');
    const err = await ensure(t).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReasonedError);
    expect((err as ReasonedError).reason).toBe('OperatorInstalledElsewhere');
    expect((err as ReasonedError).message).toContain(
      `CRD ${seaweedfsOperator.crdName}, which provider-rook did not install, but no Deployment seaweedfs-operator-system/${seaweedfsOperator.deploymentName}`,
    );
    expect((err as ReasonedError).message).toMatch(/spec\.operators\[0\]\.namespace .*spec\.operators\[0\]\.installBesideOthers to true/);
    expect(t.writes).toEqual([]);
    // Leave to change the version of someone else's operator is not leave to install a second one.
    const adopting = target('someone else');
    expect(await ensure(adopting, { adopt: true }).catch((e: unknown) => (e as ReasonedError).reason)).toBe('OperatorInstalledElsewhere');
    expect(adopting.writes).toEqual([]);
  });

  it("installs nothing beside someone else's Deployment whose CRD is not there (their install under way)", async () => {
    const t = target('nobody');
    const theirs = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: seaweedfsOperator.deploymentName, namespace: 'seaweedfs-operator-system' },
    };
    const get = t.client.get.bind(t.client);
    t.client.get = (async (type: ResourceType, key: { name: string }) =>
      type.kind === Deployments.kind && key.name === seaweedfsOperator.deploymentName ? theirs : get(type, key)) as Client['get'];
    const err = await ensure(t).catch((e: unknown) => e as ReasonedError);
    expect(err?.reason).toBe('OperatorInstalledElsewhere');
    expect(err?.message).toContain(
      `Deployment seaweedfs-operator-system/${seaweedfsOperator.deploymentName}, which provider-rook did not install`,
    );
    expect(t.writes).toEqual([]);
  });

  it("set in v0.1's spec.operatorInstall, says to move the settings to spec.operators, which has room for the answer", async () => {
    const t = target('someone else', rookMinioOperator);
    const err = await new OperatorInstaller(rookMinioOperator, marks)
      .ensure(t, { provider: provider({ operatorInstall: { enabled: true } }), owner }, new AbortController().signal)
      .catch((e: unknown) => e as ReasonedError);
    expect(err?.reason).toBe('OperatorInstalledElsewhere');
    expect(err?.message).toMatch(
      /Move spec\.operatorInstall to an entry \{name: rook-minio, install: true\} of spec\.operators.*installBesideOthers/,
    );
    expect(t.writes).toEqual([]);
  });

  it('with installBesideOthers, installs the rest of the bundle beside their CRD, leaving the CRD as it is', async () => {
    const t = target('someone else');
    await ensure(t, { installBesideOthers: true });
    expect(t.writes).toContain(`create Deployment ${seaweedfsOperator.deploymentName}`);
    expect(t.writes.filter((w) => w.startsWith('create CustomResourceDefinition'))).not.toContain(
      `create CustomResourceDefinition ${seaweedfsOperator.crdName}`,
    );
  });

  it('installs where nothing of it is there, or where the CRD is one provider-rook installed (its marks proven or not)', async () => {
    for (const madeBy of ['nobody', 'provider-rook', 'provider-rook, under a lost key'] as const) {
      const t = target(madeBy);
      await ensure(t);
      expect([madeBy, t.writes]).toEqual([madeBy, expect.arrayContaining([`create Deployment ${seaweedfsOperator.deploymentName}`])]);
    }
  });

  it('makes the admission policy the bundle brings last, and installs the operator where the target cannot take it', async () => {
    const t = target('nobody');
    const create = t.client.create.bind(t.client);
    // A server before Kubernetes 1.30, or a role that does not grant the policy: refused.
    t.client.create = (async (type: ResourceType, obj: KubeObjectLike) => {
      if (!type.kind.startsWith('ValidatingAdmissionPolicy')) return create(type, obj);
      t.writes.push(`refused ${type.kind} ${obj.metadata.name}`);
      throw new KubeError(403, 'Forbidden', 'not allowed');
    }) as Client['create'];
    await ensure(t);
    expect(t.writes).toContain(`create Deployment ${seaweedfsOperator.deploymentName}`);
    expect(t.writes.slice(-2)).toEqual([
      'refused ValidatingAdmissionPolicy seaweedfs-operator-references',
      'refused ValidatingAdmissionPolicyBinding seaweedfs-operator-references',
    ]);
  });

  it('gives an operator it installed before the bundle brought an admission policy that policy, at its next check', async () => {
    const t = target('provider-rook');
    const namespace = seaweedfsOperator.defaultNamespace;
    const deployment = marks.mark(
      Deployments,
      { apiVersion: Deployments.apiVersion, kind: Deployments.kind, metadata: { name: seaweedfsOperator.deploymentName, namespace } },
      owner,
    );
    const get = t.client.get.bind(t.client);
    t.client.get = (async (type: ResourceType, key: { name: string }) =>
      type.kind === 'Deployment' && key.name === seaweedfsOperator.deploymentName ? deployment : get(type, key)) as Client['get'];
    await ensure(t);
    expect(t.writes).toEqual([
      'create ValidatingAdmissionPolicy seaweedfs-operator-references',
      'create ValidatingAdmissionPolicyBinding seaweedfs-operator-references',
    ]);
    // Not for a Provider that may not install; and a policy the target refuses holds up nothing.
    const quiet = target('provider-rook');
    quiet.client.get = t.client.get;
    await new OperatorInstaller(seaweedfsOperator, marks).ensure(
      quiet,
      { provider: provider({ operators: [{ name: 'seaweedfs', install: false }] }), owner },
      new AbortController().signal,
    );
    expect(quiet.writes).toEqual([]);
    const failing = target('provider-rook');
    failing.client.get = t.client.get;
    failing.client.create = (async () => {
      throw new KubeError(500, 'InternalError', 'down');
    }) as Client['create'];
    await expect(ensure(failing)).resolves.toBeUndefined();
  });

  it("makes the operator's ServiceAccount before the Deployment that runs as it", async () => {
    const t = target('nobody');
    await ensure(t);
    const at = (kind: string) => t.writes.findIndex((w) => w.startsWith(`create ${kind} `));
    expect(at('ServiceAccount')).toBeGreaterThanOrEqual(0);
    expect(at('ServiceAccount')).toBeLessThan(at('Deployment'));
  });
});
