// Which namespaces of a target a Provider lets stores and operators use, and which operator images
// it lets provider-rook install: decided before the target is reached, each refusal naming its field.
import { describe, expect, it } from '@jest/globals';
import '../../../../src/backends/index.ts'; // every backend's operator bundle, as the process has them
import { minioObjectStore, rookMinioOperator } from '../../../../src/backends/rook-minio/objectstore.ts';
import type { ObjectStore } from '../../../../src/backends/rook-minio/api.ts';
import type { ReasonedError } from '../../../../src/kit/conditions.ts';
import { MemoryEventRecorder } from '../../../../src/kit/controller/events.ts';
import { NativeConnecter } from '../../../../src/runtime/native/connecter.ts';
import { installRefusal, operatorNamespaces } from '../../../../src/runtime/operators/operator.ts';
import { ANNOTATION_OWNER_PROOF, OwnershipMarks, ownerOf } from '../../../../src/runtime/ownership/marks.ts';
import { OwnershipKey } from '../../../../src/runtime/ownership/key.ts';
import { ensureNamespace } from '../../../../src/runtime/native/namespaces.ts';
import { Namespaces } from '../../../../src/kit/kube/resources.ts';
import type { KubeClient } from '../../../../src/kit/kube/client.ts';
import { allowsNamespace, fieldsHolding, protectedNamespaces, type ProviderObject } from '../../../../src/runtime/providers/provider.ts';
import { Reasons } from '../../../../src/runtime/reasons.ts';
import { type ProviderResolver } from '../../../../src/runtime/providers/resolver.ts';

const provider = (spec: Partial<ProviderObject['spec']> = {}): ProviderObject => ({
  metadata: { name: 'p', namespace: 'infra' },
  spec: { credentialsSecretRef: { name: 's' }, ...spec },
});
const allows = (p: ProviderObject, ns: string) => allowsNamespace(p, ns, protectedNamespaces(p, operatorNamespaces()));

describe('target namespaces', () => {
  it("unset, allowedNamespaces allows any namespace but the system's and the operators'", () => {
    const p = provider({ operators: [{ name: 'rook-ceph', namespace: 'ceph-ops' }] });
    for (const ns of ['kube-system', 'kube-public', 'kube-node-lease', 'rook-minio-system', 'minio-operator', 'rook-ceph', 'ceph-ops'])
      expect([ns, allows(p, ns)]).toEqual([ns, false]);
    for (const ns of ['rook-minio', 'apps', 'minio-x']) expect([ns, allows(p, ns)]).toEqual([ns, true]);
    expect(allows(provider({ operatorInstall: { namespace: 'old-ops' } }), 'old-ops')).toBe(false);
  });

  it('set, it allows only what it lists, a protected namespace only by name', () => {
    const p = provider({ allowedNamespaces: ['apps', 'kube-system'] });
    expect(['apps', 'kube-system', 'rook-minio', 'kube-public'].map((ns) => allows(p, ns))).toEqual([true, true, false, false]);
    expect(allows(provider({ allowedNamespaces: [] }), 'apps')).toBe(false);
  });

  it('set, a prefix followed by * allows the namespaces it begins, never a protected one', () => {
    const p = provider({ allowedNamespaces: ['rook-minio-*', 'kube-*', 'apps'] });
    const ns = ['rook-minio-team-a-bucket-x7k2p', 'rook-minio', 'rook-minio-system', 'kube-system', 'kube-apps', 'apps', 'apps-2'];
    expect(ns.map((n) => [n, allows(p, n)])).toEqual([
      ['rook-minio-team-a-bucket-x7k2p', true],
      ['rook-minio', false],
      ['rook-minio-system', false],
      ['kube-system', false],
      ['kube-apps', true],
      ['apps', true],
      ['apps-2', false],
    ]);
    expect(allows(provider({ allowedNamespaces: ['rook-minio-*', 'rook-minio-system'] }), 'rook-minio-system')).toBe(true);
  });

  it('names the fields that hold a value', () => {
    expect(
      fieldsHolding({ targetNamespace: 'x', forProvider: { credentials: { namespace: 'x' }, list: ['y', 'x'] } }, 'x', 'spec'),
    ).toEqual(['spec.targetNamespace', 'spec.forProvider.credentials.namespace', 'spec.forProvider.list[1]']);
  });
});

describe('operator installs', () => {
  const refusal = (spec: Partial<ProviderObject['spec']>) => installRefusal(rookMinioOperator, provider(spec));

  it("another image only with imageOverride, for spec.operators and v0.1's spec.operatorInstall alike", () => {
    expect(
      refusal({ operators: [{ name: 'rook-ceph' }, { name: 'rook-minio', install: true, image: 'evil.example.com/minio:1' }] }),
    ).toMatchObject({
      reason: Reasons.OperatorImageNotAllowed,
      message:
        "spec.operators[1].image is evil.example.com/minio:1, not the Rook MinIO operator's own (rook/minio:v1.2.7): provider-rook installs another image only when spec.operators[1].imageOverride is true",
    });
    expect(refusal({ operatorInstall: { enabled: true, image: 'evil.example.com/minio:1' } })).toMatchObject({
      reason: Reasons.OperatorImageNotAllowed,
      message: expect.stringMatching(/^spec\.operatorInstall\.image .* spec\.operatorInstall\.imageOverride is true$/),
    });
    expect(
      refusal({ operators: [{ name: 'rook-minio', install: true, image: 'evil.example.com/minio:1', imageOverride: true }] }),
    ).toBeUndefined();
    expect(refusal({ operatorInstall: { enabled: true, image: 'mirror.example.com/minio:1', imageOverride: true } })).toBeUndefined();
    expect(refusal({ operators: [{ name: 'rook-minio', install: true, image: 'rook/minio:v1.2.7' }] })).toBeUndefined();
    expect(refusal({ operators: [{ name: 'rook-minio', install: false, image: 'evil.example.com/minio:1' }] })).toBeUndefined(); // nothing is installed
  });

  it("never into a system or another operator's namespace the Provider does not list", () => {
    for (const ns of ['kube-system', 'kube-node-lease', 'minio-operator', 'rook-ceph']) {
      expect(refusal({ operators: [{ name: 'rook-minio', install: true, namespace: ns }] })).toMatchObject({
        reason: Reasons.TargetNamespaceNotAllowed,
        message: expect.stringMatching(
          new RegExp(
            `^spec\\.operators\\[0\\]\\.namespace is ${ns}, a namespace Provider infra/p does not allow: .*spec\\.allowedNamespaces`,
          ),
        ),
      });
    }
    expect(refusal({ operatorInstall: { enabled: true, namespace: 'kube-system' } })?.message).toMatch(
      /^spec\.operatorInstall\.namespace is kube-system/,
    );
    expect(
      refusal({ allowedNamespaces: ['kube-system'], operators: [{ name: 'rook-minio', install: true, namespace: 'kube-system' }] }),
    ).toBeUndefined();
    // Its own namespace, default or chosen, needs no listing, even when the Provider lists others.
    expect(refusal({ allowedNamespaces: ['apps'], operators: [{ name: 'rook-minio', install: true }] })).toBeUndefined();
    expect(refusal({ operators: [{ name: 'rook-minio', install: true, namespace: 'ops' }] })).toBeUndefined();
  });
});

describe('NativeConnecter', () => {
  const store = (spec: Partial<ObjectStore['spec']>, meta: Partial<ObjectStore['metadata']> = {}): ObjectStore => ({
    apiVersion: 'minio.rook.crossplane.io/v1alpha1',
    kind: 'ObjectStore',
    metadata: { name: 's', namespace: 'infra', uid: 'u', ...meta },
    spec: {
      forProvider: { scope: { nodeCount: 4 } },
      targetNamespace: 'apps',
      providerRef: { name: 'p' },
      reclaimPolicy: 'Delete',
      ...spec,
    },
  });

  function connecter(p: ProviderObject) {
    const reached: string[] = [];
    const resolver = {
      cached: () => p,
      resolve: async () => {
        reached.push('target');
        throw new Error('the test target is not there');
      },
    } as unknown as ProviderResolver;
    const recorder = new MemoryEventRecorder();
    return { reached, recorder, c: new NativeConnecter(resolver, minioObjectStore, {} as OwnershipMarks, { recorder }) };
  }
  const refusedWith = async (p: ProviderObject, mr: ObjectStore) => {
    const { c, reached, recorder } = connecter(p);
    const err = await c.connect(mr, new AbortController().signal).then(
      () => undefined,
      (e: unknown) => e as ReasonedError,
    );
    return { err, reached, events: recorder.events };
  };

  it('refuses a store, or its access keys, in a namespace the Provider does not allow, before reaching the target', async () => {
    const system = await refusedWith(provider(), store({ targetNamespace: 'kube-system' }));
    expect(system.err).toMatchObject({
      reason: Reasons.TargetNamespaceNotAllowed,
      message: expect.stringMatching(/^spec\.targetNamespace is kube-system, .*spec\.allowedNamespaces lists it$/),
    });
    expect(system.reached).toEqual([]);
    expect(system.events).toEqual([
      { type: 'Warning', reason: Reasons.TargetNamespaceNotAllowed, message: system.err!.message, name: 's' },
    ]);

    const keys = await refusedWith(
      provider(),
      store({ forProvider: { scope: { nodeCount: 4 }, credentials: { name: 'k', namespace: 'kube-system' } } }),
    );
    expect(keys.err?.message).toMatch(/^spec\.forProvider\.credentials\.namespace is kube-system/);
    const listed = await refusedWith(provider({ allowedNamespaces: ['other'] }), store({}));
    expect(listed.err?.message).toBe(
      'spec.targetNamespace is apps, a namespace Provider infra/p does not allow: its spec.allowedNamespaces lists only other',
    );
    expect([system, keys, listed].flatMap((r) => r.reached)).toEqual([]);
  });

  it('lets an allowed store, and the deletion of a refused one, reach the target', async () => {
    for (const [p, mr] of [
      [provider({ allowedNamespaces: ['kube-system'] }), store({ targetNamespace: 'kube-system' })],
      [provider(), store({})],
      [provider(), store({ targetNamespace: 'kube-system' }, { deletionTimestamp: '2026-01-01T00:00:00Z' })],
    ] as const) {
      const { reached, err } = await refusedWith(p, mr);
      expect([reached, (err as Error).message]).toEqual([['target'], 'the test target is not there']);
    }
  });

  it('lets the deletion of a refused one make nothing there (no teardown work), saying why', async () => {
    const resolver = { cached: () => provider(), resolve: async () => ({ client: {}, informers: {} }) } as unknown as ProviderResolver;
    const c = new NativeConnecter(resolver, minioObjectStore, {} as OwnershipMarks, { recorder: new MemoryEventRecorder() });
    const deleting = store({ targetNamespace: 'kube-system' }, { deletionTimestamp: '2026-01-01T00:00:00Z' });
    const external = (await c.connect(deleting, new AbortController().signal)) as unknown as {
      target: { opts: { makesNothing?: string } };
    };
    expect(external.target.opts.makesNothing).toMatch(
      /^spec\.targetNamespace is kube-system, a namespace Provider infra\/p does not allow/,
    );
  });
});

describe('a namespace made before marks were signed', () => {
  it('is signed on upgrade only as the copy judged: conditional on its uid and resourceVersion', async () => {
    const marks = new OwnershipMarks('cp-1', new OwnershipKey(Buffer.alloc(32, 7)));
    const owner = ownerOf('objectstores.minio.rook.crossplane.io', {
      metadata: { name: 'm', namespace: 'infra', uid: 'mr-uid' },
      spec: { providerRef: { name: 'p' } },
    } as never);
    const marked = marks.mark(Namespaces, { metadata: { name: 'store-ns' } }, owner);
    const { [ANNOTATION_OWNER_PROOF]: _proof, ...annotations } = marked.metadata.annotations ?? {};
    const legacy = { ...marked, metadata: { ...marked.metadata, annotations, uid: 'ns-uid', resourceVersion: '7' } };
    const patches: { metadata: Record<string, unknown> }[] = [];
    const client = {
      get: async () => legacy,
      create: async () => legacy,
      mergePatch: async (_t: unknown, _k: unknown, patch: { metadata: Record<string, unknown> }) => void patches.push(patch),
    } as unknown as KubeClient;
    await ensureNamespace({ client, marks, signal: new AbortController().signal }, 'store-ns', { owner, vouchers: { legacy: true } });
    expect(patches).toHaveLength(1);
    expect(patches[0]!.metadata).toMatchObject({ uid: 'ns-uid', resourceVersion: '7' });
  });
});
