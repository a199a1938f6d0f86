// Protection against deleting data judged by the real API server: the
// ValidatingAdmissionPolicy of config/admission/protection.yaml refuses to delete a claim or managed
// resource labelled rook.crossplane.io/protected=true, and a claim its class protects, whoever asks
// and however (namespace deletion included); the app team's role cannot lift a class's protection.
import type { ObjectKey } from '../../src/kit/kube/object-key.ts';
import { describe, expect, it } from '@jest/globals';
import { BucketClasses, Buckets } from '../../src/app.ts';
import { kinds } from '../../src/apis/kinds.gen.ts';
import type { Bucket } from '../../src/apis/storage.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { KubeError } from '../../src/kit/kube/errors.ts';
import { Namespaces, resourcePath, type ResourceType } from '../../src/kit/kube/resources.ts';
import { testCluster } from '../kit/env.ts';
import { createNamespace, identityClient } from '../kit/provider.ts';
import { applyManifests } from '../kit/manifests.ts';
import { eventually } from '../kit/eventually.ts';
import { withProviderRook } from '../kit/fixture.ts';
import { cond } from '../kit/conditions.ts';
import { bucketClass } from '../kit/claims.ts';

const LABEL = 'rook.crossplane.io/protected';
const env = withProviderRook({
  namespaces: { platform: 'prot-infra', apps: 'prot-app' },
  provider: { name: 'target', in: 'platform' },
  admission: true,
  roles: true,
  before: async () => {
    for (const [name, protectClaims] of [
      ['plain', false],
      ['guarded', true],
    ] as const) {
      await env.control.apply(kinds.ObjectStoreClass, {
        apiVersion: kinds.ObjectStoreClass.apiVersion,
        kind: 'ObjectStoreClass',
        metadata: { name, namespace: env.ns.platform },
        spec: { scope: { nodeCount: 4 }, providerRef: { name: 'target' }, targetNamespace: 'prot-minio', protectClaims },
      } as KubeObjectLike);
      await env.control.apply(
        BucketClasses,
        bucketClass({ name, namespace: env.ns.apps }, kinds.ObjectStoreClass, { name, namespace: env.ns.platform }),
      );
    }
  },
});

const claim = (name: string, className: string, labels?: Record<string, string>, namespace = env.ns.apps) =>
  ({
    apiVersion: Buckets.apiVersion,
    kind: 'Bucket',
    metadata: { name, namespace, ...(labels ? { labels } : {}) },
    spec: { classRef: { name: className }, writeConnectionSecretToRef: { name: `${name}-s3` } },
  }) as KubeObjectLike;

/** The error a delete was refused with (throws if it was not). */
async function refusedDelete(client: KubeClient, type: ResourceType, { namespace, name }: Required<ObjectKey>): Promise<KubeError> {
  const err = await client.delete(type, { namespace, name }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(KubeError);
  return err as KubeError;
}

const bound = (name: string, namespace = env.ns.apps) =>
  eventually(async () => {
    const b = await env.control.get<Bucket>(Buckets, { namespace, name });
    return b?.status?.bindingPhase === 'Bound' ? b : undefined;
  }, `Bucket ${namespace}/${name} Bound`);

describe('protection against deleting data', () => {
  it("keeps provider-rook's finalizer on a claim: its app team cannot take it off, provider-rook's own user can", async () => {
    await env.control.create(Buckets, claim('held', 'plain'));
    await bound('held');
    const key = { namespace: env.ns.apps, name: 'held' };
    const path = resourcePath(Buckets, key.namespace, key.name);
    // A dry run: the policy is loaded a moment after it is written, and a strip let through then would be real.
    const strip = (as: KubeClient) =>
      as
        .request('PATCH', path, {
          query: { dryRun: 'All' },
          contentType: 'application/merge-patch+json',
          body: { metadata: { finalizers: null } },
        })
        .then(
          () => 'stripped',
          (e: unknown) => e as KubeError,
        );
    const appTeam = await identityClient(
      testCluster('control'),
      env.control,
      { namespace: env.ns.apps, name: 'app-team-f' },
      { role: 'provider-rook:app-team' },
    );
    const refused = await eventually(async () => {
      const answer = await strip(appTeam);
      return answer instanceof KubeError && answer.code === 403 ? answer : undefined;
    }, "the app team's strip to be refused");
    expect(refused.message).toContain(
      `Bucket ${env.ns.apps}/held: finalizer finalizer.resourceclaim.crossplane.io is provider-rook's, and comes off once provider-rook has released what the claim holds`,
    );
    // Other changes are the app team's to make still.
    await appTeam.mergePatch(Buckets, key, { metadata: { labels: { team: 'orders' } } });
    // provider-rook's ServiceAccount (as config/provider/ runs it), with no more rights than the app team's.
    await env.control
      .create(Namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'provider-rook-system' } })
      .catch((e: unknown) => {
        if (!(e instanceof KubeError && e.code === 409)) throw e;
      });
    const sa = { namespace: 'provider-rook-system', name: 'provider-rook' };
    const providerRook = await identityClient(testCluster('control'), env.control, sa, { role: 'provider-rook:app-team' });
    // The app team's role in this namespace alone: other files check what that user may do elsewhere.
    await applyManifests(env.control, [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'provider-rook-as-app-team', namespace: env.ns.apps },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'provider-rook:app-team' },
        subjects: [{ kind: 'ServiceAccount', ...sa }],
      },
    ]);
    expect(
      await eventually(async () => ((await strip(providerRook)) === 'stripped' ? true : undefined), 'its binding to take effect'),
    ).toBe(true);
    await env.control.delete(Buckets, key);
    await eventually(async () => (await env.control.get(Buckets, key)) === undefined, 'the claim to go');
  });

  it('refuses to delete a Bucket labelled protected, whoever asks, until the label goes; nothing is lost meanwhile', async () => {
    await env.control.create(Buckets, claim('keep', 'plain', { [LABEL]: 'true' }));
    const mr = (await bound('keep')).spec.resourceRef!.name;
    const err = await refusedDelete(env.control, Buckets, { namespace: env.ns.apps, name: 'keep' });
    expect(err.code).toBe(403);
    expect(err.message).toContain(`Bucket ${env.ns.apps}/keep is protected against deletion (label rook.crossplane.io/protected=true)`);
    expect((await env.control.get<Bucket>(Buckets, { namespace: env.ns.apps, name: 'keep' }))?.metadata.deletionTimestamp).toBeUndefined();
    // Its own label, not its class: its status says nothing of it.
    expect((await env.control.get<Bucket>(Buckets, { namespace: env.ns.apps, name: 'keep' }))?.status?.protected).toBeUndefined();
    // Lifting it is the owner's to do; then the claim and its store go as usual.
    await env.control.mergePatch(Buckets, { namespace: env.ns.apps, name: 'keep' }, { metadata: { labels: { [LABEL]: null } } });
    await env.control.delete(Buckets, { namespace: env.ns.apps, name: 'keep' });
    await eventually(
      async () => (await env.control.get(kinds.ObjectStore, { namespace: env.ns.platform, name: mr })) === undefined,
      'its store to go',
    );
  });

  it('protects every claim of a protecting class and its managed resource; the app team cannot lift it, a platform team can', async () => {
    await env.control.create(Buckets, claim('guarded-claim', 'guarded'));
    const bucket = await bound('guarded-claim');
    const mr = bucket.spec.resourceRef!.name;
    expect(
      (
        await env.control.get<KubeObjectLike & { metadata: { labels?: Record<string, string> } }>(kinds.ObjectStore, {
          namespace: env.ns.platform,
          name: mr,
        })
      )?.metadata.labels?.[LABEL],
    ).toBe('true');
    await eventually(
      async () => (await env.control.get<Bucket>(Buckets, { namespace: env.ns.apps, name: 'guarded-claim' }))?.status?.protected === true,
      'the claim to show its protection',
    );

    const appTeam = await identityClient(
      testCluster('control'),
      env.control,
      { namespace: env.ns.apps, name: 'app-team' },
      { role: 'provider-rook:app-team' },
    );
    const byApp = await refusedDelete(appTeam, Buckets, { namespace: env.ns.apps, name: 'guarded-claim' });
    expect(byApp.message).toContain('its class protects its claims');
    // Its status is not the app team's to write, so it cannot lift the class's protection.
    const current = (await appTeam.get<Bucket>(Buckets, { namespace: env.ns.apps, name: 'guarded-claim' }))!;
    const lift = await appTeam.updateStatus(Buckets, { ...current, status: { ...current.status, protected: false } }).then(
      () => undefined,
      (e: unknown) => e as KubeError,
    );
    expect(lift?.code).toBe(403);
    expect((await refusedDelete(env.control, kinds.ObjectStore, { namespace: env.ns.platform, name: mr })).message).toContain(
      'label rook.crossplane.io/protected=true',
    );

    // A platform team lifts it on the managed resource; the claim follows, and may then be deleted.
    const platformTeam = await identityClient(
      testCluster('control'),
      env.control,
      { namespace: env.ns.platform, name: 'platform' },
      { role: 'provider-rook:platform-team' },
    );
    await platformTeam.mergePatch(kinds.ObjectStore, { namespace: env.ns.platform, name: mr }, { metadata: { labels: { [LABEL]: null } } });
    await eventually(
      async () =>
        (await env.control.get<Bucket>(Buckets, { namespace: env.ns.apps, name: 'guarded-claim' }))?.status?.protected === undefined,
      'the claim to show no protection',
    );
    await appTeam.delete(Buckets, { namespace: env.ns.apps, name: 'guarded-claim' });
    await eventually(
      async () => (await env.control.get(kinds.ObjectStore, { namespace: env.ns.platform, name: mr })) === undefined,
      'its store to go',
    );
  });

  it('keeps a protected Bucket when its namespace is deleted, until the protection is lifted', async () => {
    const ns = await createNamespace(env.control, 'prot-doomed');
    await env.control.create(Buckets, claim('survivor', 'none', { [LABEL]: 'true' }, ns));
    await env.control.delete(Namespaces, { name: ns });
    // The namespace controller tries, is refused, and says so on the namespace.
    const stuck = await eventually(async () => {
      const n = await env.control.get<KubeObjectLike & { status?: { conditions?: { type: string; status: string; message?: string }[] } }>(
        Namespaces,
        { name: ns },
      );
      const failure = cond(n, 'NamespaceDeletionContentFailure');
      return failure?.status === 'True' ? failure : undefined;
    }, 'the namespace to report the refused delete');
    expect(stuck.message).toContain('is protected against deletion');
    expect(await env.control.get(Buckets, { namespace: ns, name: 'survivor' })).toBeDefined();
    await env.control.mergePatch(Buckets, { namespace: ns, name: 'survivor' }, { metadata: { labels: { [LABEL]: null } } });
    await eventually(
      async () => (await env.control.get(Namespaces, { name: ns })) === undefined,
      'the namespace to go once the protection is lifted',
      60_000,
    );
  }, 90_000);
});
