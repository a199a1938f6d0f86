// The operator stand-ins fail a pass the way the real operators do: the MinIO Operator's queue
// retries an error with backoff; the Rook MinIO operator (an informer without resync) only logs it
// and waits for the next event, while the StatefulSet controller it relies on retries. A stand-in
// that dropped a failed pass for good left e2e claims waiting forever after one dropped connection.
// With { s3: true }, a stand-in plays a store's pods with a real S3 server for as long as the store lives.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { installOperatorBundle } from '../kit/manifests.ts';
import { MinioTenants } from '../../src/backends/minio-operator/tenant.ts';
import { RookObjectStores } from '../../src/backends/rook-minio/objectstore.ts';
import { KubeClient, type KubeObjectLike } from '../../src/kit/kube/client.ts';
import { UnreachableError } from '../../src/kit/kube/errors.ts';
import { Services, StatefulSets, type ResourceType } from '../../src/kit/kube/resources.ts';
import { down, up } from '../kit/cluster.ts';
import { adminClient, kubeConfigOf } from '../kit/env.ts';
import { createNamespace, writeSecret } from '../kit/provider.ts';
import { FakeMinioOperator } from '../fakes/fake-minio-operator.ts';
import { operatorStandIns } from '../fakes/backends.ts';
import { resolveS3Endpoint } from '../fakes/s3-stores.ts';
import { roundTrip } from '../kit/s3.ts';
import { eventually } from '../kit/eventually.ts';

/** A client whose next `failures` status writes fail as a dropped connection would. */
class FlakyStatusClient extends KubeClient {
  failures = 0;
  failed = 0;
  override updateStatus<T extends KubeObjectLike>(type: ResourceType, obj: T, signal?: AbortSignal): Promise<T> {
    if (this.failures > 0) {
      this.failures--;
      this.failed++;
      return Promise.reject(new UnreachableError('the connection was closed (test)'));
    }
    return super.updateStatus(type, obj, signal);
  }
}

type Status = { currentState?: string; readyReplicas?: number };
// A cluster of its own: the stand-ins of tests running beside these watch the shared target
// cluster-wide, and would finish these objects with clients that never fail.
const ALONE = `it-stand-ins-${process.pid}`;
let admin: KubeClient;
let flaky: FlakyStatusClient;
let ns: string;
const stops: { stop(): Promise<void> }[] = [];

beforeAll(async () => {
  const [target] = await up([ALONE]);
  admin = adminClient(target!);
  flaky = new FlakyStatusClient(kubeConfigOf(target!), { fieldManager: 'stand-in' });
  await installOperatorBundle(admin, 'minio-operator');
  await installOperatorBundle(admin, 'rook-minio');
  ns = await createNamespace(admin, 'it-stand-ins');
}, 60_000);

afterAll(async () => {
  await Promise.all(stops.map((s) => s.stop()));
  await down([ALONE]);
}, 60_000);

describe('operator stand-ins', () => {
  // First, and stopped at its end: two Rook MinIO stand-ins would race for one store's Service.
  it("play a store's pods with a real S3 server: keys from the store's Secret, reached by Service name, stopped with the store", async () => {
    const operator = new FakeMinioOperator(admin, { s3: true });
    await operator.start();
    try {
      const keys = { accessKey: 'store-user', secretKey: 'store-password-0123' };
      await writeSecret(admin, { namespace: ns, name: 's3-keys' }, { username: keys.accessKey, password: keys.secretKey });
      await admin.create(RookObjectStores, {
        apiVersion: RookObjectStores.apiVersion,
        kind: 'ObjectStore',
        metadata: { name: 'with-s3', namespace: ns },
        spec: { scope: { nodeCount: 4 }, credentials: { name: 's3-keys', namespace: ns } },
      } as KubeObjectLike);
      // A Service that selects this store's pods, as provider-rook's <store>-s3 does.
      await admin.create(Services, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'with-s3-s3', namespace: ns },
        spec: { selector: { app: 'minio', objectstore: 'with-s3' }, ports: [{ port: 9000 }] },
      } as KubeObjectLike);
      await eventually(
        async () =>
          (await admin.get<KubeObjectLike & { status?: Status }>(StatefulSets, { namespace: ns, name: 'with-s3' }))?.status
            ?.readyReplicas === 4,
        'the store ready',
      );
      const endpoint = await resolveS3Endpoint(`http://with-s3-s3.${ns}.svc.cluster.local:9000`, admin);
      await roundTrip(endpoint, keys, 'first', { makeBucket: true });
      await expect(resolveS3Endpoint(`http://with-s3-s3.${ns}.svc.cluster.local:80`, admin)).rejects.toThrow(/does not serve port 80/);
      await admin.delete(RookObjectStores, { namespace: ns, name: 'with-s3' });
      await eventually(
        () =>
          fetch(endpoint).then(
            () => false,
            () => true,
          ),
        'the server to stop with its store',
      );
      await expect(resolveS3Endpoint(`http://with-s3-s3.${ns}.svc.cluster.local:9000`, admin)).rejects.toThrow(/selects 0 running stores/);
    } finally {
      await operator.stop();
    }
  });

  it("retry a Tenant whose status write failed, without a new event, as the MinIO Operator's queue does", async () => {
    const operator = operatorStandIns['minio-operator']!.make(flaky);
    await operator.start();
    stops.push(operator);
    await writeSecret(
      admin,
      { namespace: ns, name: 'retried-env' },
      { 'config.env': 'export MINIO_ROOT_USER="user"\nexport MINIO_ROOT_PASSWORD="password"\n' },
    );
    flaky.failures = 3;
    await admin.create(MinioTenants, {
      apiVersion: MinioTenants.apiVersion,
      kind: 'Tenant',
      metadata: { name: 'retried', namespace: ns },
      spec: {
        requestAutoCert: false,
        configuration: { name: 'retried-env' },
        pools: [
          {
            name: 'pool-0',
            servers: 4,
            volumesPerServer: 1,
            volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
          },
        ],
      },
    } as KubeObjectLike);
    const tenant = await eventually(
      async () => {
        const t = await admin.get<KubeObjectLike & { status?: Status }>(MinioTenants, { namespace: ns, name: 'retried' });
        return t?.status?.currentState === 'Initialized' ? t : undefined;
      },
      'the Tenant Initialized after three failed status writes',
      20_000,
    );
    expect(flaky.failed).toBe(3);
    expect(tenant.status?.currentState).toBe('Initialized');
  });

  it("retry the StatefulSet's readiness for a Rook MinIO store, whose operator part runs once per event", async () => {
    const operator = new FakeMinioOperator(flaky);
    await operator.start();
    stops.push(operator);
    await writeSecret(admin, { namespace: ns, name: 'store-keys' }, { username: 'user', password: 'password' });
    flaky.failures = 2;
    await admin.create(RookObjectStores, {
      apiVersion: RookObjectStores.apiVersion,
      kind: 'ObjectStore',
      metadata: { name: 'retried', namespace: ns },
      spec: { scope: { nodeCount: 4 }, credentials: { name: 'store-keys', namespace: ns } },
    } as KubeObjectLike);
    const sts = await eventually(
      async () => {
        const s = await admin.get<KubeObjectLike & { status?: Status }>(StatefulSets, { namespace: ns, name: 'retried' });
        return s?.status?.readyReplicas === 4 ? s : undefined;
      },
      'the StatefulSet ready after two failed status writes',
      20_000,
    );
    expect(flaky.failed).toBe(5);
    expect(sts.status?.readyReplicas).toBe(4);
  });
});
