// TEST DOUBLE. Local control planes run no pods, so the real Rook MinIO operator cannot run there.
// This stand-in does to the API what the operator (rook v1.2.7, pkg/operator/minio/controller.go)
// does for every minio.rook.io ObjectStore, quirks included (../shared/reference/rook-minio-operator.md §4):
// - a headless Service and a StatefulSet named after the store, labelled app=minio, objectstore=<name>;
// - the Service selects only app=minio, so stores sharing a namespace share its endpoints;
// - owner references with "apiVersion: v1alpha1" (no group), which the garbage collector cannot map;
// - the access keys copied literally into the StatefulSet's env; the store's metadata.annotations on it;
// - nothing is ever updated: once its Service exists, a re-reconcile fails ("failed to update minio
//   headless service") before it reaches the StatefulSet.
// It then plays the StatefulSet controller and kubelet by setting status.readyReplicas, which is how
// provider-rook tells a store is ready. Never used by src/.
// With { s3: true } it also plays the pods' MinIO with a real S3 server per store (SeaweedFS: real
// S3, IAM and policy enforcement), started with the keys the operator put in the StatefulSet (read
// from the Secret spec.credentials names) before the servers report ready, and stopped when the
// store goes; tests reach it through resolveS3Endpoint (s3-stores.ts). MinIO's admin API is not played.
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { isAlreadyExists } from '../../src/kit/kube/errors.ts';
import { Secrets, Services, StatefulSets } from '../../src/kit/kube/resources.ts';
import { RookObjectStores } from '../../src/backends/rook-minio/objectstore.ts';
import { S3Stores } from './s3-stores.ts';
import { FakeMinioClient } from './fake-minio-client.ts';
import { StandIn } from './stand-in.ts';

interface Store extends KubeObjectLike {
  metadata: { name: string; namespace: string; uid: string; deletionTimestamp?: string; annotations?: Record<string, string> };
  spec?: {
    scope?: { nodeCount?: number; volumeClaimTemplates?: { metadata: { name: string } }[] };
    annotations?: Record<string, string> | null;
    credentials?: { name: string; namespace?: string };
    clusterDomain?: string;
  };
}

interface StatefulSet extends KubeObjectLike {
  spec: {
    replicas: number;
    template: {
      metadata: { labels: Record<string, string> };
      spec: { containers: { env?: { name: string; value?: string }[]; [field: string]: unknown }[] };
    };
  };
  status?: { readyReplicas?: number; replicas?: number };
}

export interface FakeOperatorOptions {
  /** How many servers report ready; all of them by default. */
  readyReplicas?: (store: Store) => number;
  /** Run a real S3 server for each store. Off by default: most tests need no S3, and each server costs about 125 MiB of RSS. */
  s3?: boolean;
}

export class FakeMinioOperator extends StandIn<Store> {
  private readonly opts: FakeOperatorOptions;
  private readonly s3?: S3Stores;

  /** MinIO's client in the Jobs aimed at these stores (fake-minio-client.ts). */
  private readonly jobs: FakeMinioClient;

  constructor(client: KubeClient, opts: FakeOperatorOptions = {}) {
    super(client, RookObjectStores);
    this.opts = opts;
    if (opts.s3) this.s3 = new S3Stores(client);
    this.jobs = new FakeMinioClient(client, {
      s3: opts.s3,
      plays: (job) => FakeMinioClient.rootFormat(job) === 'username-password',
      shell: (endpoint, commands) => this.s3!.shellAt(endpoint, commands),
    });
  }

  /** Leaves the admin Jobs `which` picks unplayed, as pods not scheduled yet (FakeMinioClient.hold). */
  holdJobs(which: Parameters<FakeMinioClient['hold']>[0]): Promise<void> {
    return this.jobs.hold(which);
  }

  /** `weed shell` on the server it runs at this loopback endpoint (what a test reads only there, such as a quota). */
  shellAt(endpoint: string, commands: string[]): Promise<string> {
    if (!this.s3) throw new Error('this stand-in runs no S3 server');
    return this.s3.shellAt(endpoint, commands);
  }

  /** The processes of the S3 servers it runs (none without s3). */
  serverPids(): Promise<number[]> {
    return this.s3?.pids() ?? Promise.resolve([]);
  }

  override async start(): Promise<void> {
    await Promise.all([super.start(), this.jobs.start()]);
  }

  override async stop(): Promise<void> {
    await Promise.all([super.stop(), this.jobs.stop()]);
    await this.s3?.stopAll();
  }

  protected override async gone(store: Store): Promise<void> {
    await this.s3?.stop(store.metadata.uid);
  }

  protected async reconcile(store: Store): Promise<void> {
    if (store.metadata.deletionTimestamp) return;
    const replicas = store.spec?.scope?.nodeCount ?? 0;
    if (replicas < 4 || replicas % 2 !== 0) return; // the real operator only logs "node count must be greater than 3 and even"
    // The operator's informer has no resync and its handlers only log errors: a failed pass waits for
    // the next event. Only the StatefulSet controller's part below is retried.
    const sts = await this.operate(store, replicas).catch(() => undefined);
    if (!sts) return;
    // The pods: MinIO with the keys the operator copied into the StatefulSet, behind its pod labels.
    if (this.s3) {
      const env = new Map(sts.spec.template.spec.containers[0]?.env?.map((e) => [e.name, e.value ?? '']));
      const root = { accessKey: env.get('MINIO_ACCESS_KEY') ?? '', secretKey: env.get('MINIO_SECRET_KEY') ?? '' };
      await this.s3.run(store.metadata.uid, root, {
        namespace: store.metadata.namespace,
        labels: sts.spec.template.metadata.labels,
        podPort: 9000,
      });
    }
    // The StatefulSet controller and kubelet: every server reports ready.
    const ready = this.opts.readyReplicas?.(store) ?? sts.spec.replicas;
    if (sts.status?.readyReplicas !== ready) {
      await this.client.updateStatus(StatefulSets, {
        ...sts,
        status: { ...sts.status, replicas: sts.spec.replicas, readyReplicas: ready },
      });
    }
  }

  /** What controller.go does: the Service, then the StatefulSet, each made once. */
  private async operate(store: Store, replicas: number): Promise<StatefulSet | undefined> {
    const { name, namespace, uid } = store.metadata;
    let sts = await this.client.get<StatefulSet>(StatefulSets, { namespace, name });
    if (!sts) {
      const creds = store.spec?.credentials;
      const keys = creds
        ? await this.client.get<KubeObjectLike & { data?: Record<string, string> }>(Secrets, {
            namespace: creds.namespace ?? namespace,
            name: creds.name,
          })
        : undefined;
      if (!keys?.data) return; // the real operator fails to read the Secret and tries again on the next event
      const labels = { app: 'minio', objectstore: name };
      const ownerReferences = [{ apiVersion: 'v1alpha1', kind: 'ObjectStore', name, uid }]; // sic: the real operator omits the group
      try {
        await this.client.create(Services, {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name, namespace, labels, ownerReferences },
          spec: { clusterIP: 'None', selector: { app: 'minio' }, ports: [{ port: 9000 }] },
        });
      } catch (e) {
        if (isAlreadyExists(e)) return; // "failed to update minio headless service": never reaches the StatefulSet
        throw e;
      }
      sts = await this.client.create<StatefulSet>(StatefulSets, statefulSet(store, replicas, labels, ownerReferences, keys.data));
    }
    return sts;
  }
}

/** The StatefulSet as controller.go builds it. */
function statefulSet(
  store: Store,
  replicas: number,
  labels: Record<string, string>,
  ownerReferences: unknown[],
  keys: Record<string, string>,
): StatefulSet {
  const { name, namespace } = store.metadata;
  const domain = store.spec?.clusterDomain || 'cluster.local';
  const templates = store.spec?.scope?.volumeClaimTemplates ?? [];
  const volumes = templates.length ? templates.map((t) => t.metadata.name) : ['minio-data'];
  const text = (b64: string | undefined): string => Buffer.from(b64 ?? '', 'base64').toString();
  const probe = (path: string, initialDelaySeconds: number) => ({
    httpGet: { path, port: 9000 },
    initialDelaySeconds,
    periodSeconds: 10,
    timeoutSeconds: 2,
    successThreshold: 1,
    failureThreshold: 4,
  });
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    // The store's own metadata.annotations, not spec.annotations (those go on the pods).
    metadata: {
      name,
      namespace,
      labels,
      ownerReferences,
      ...(store.metadata.annotations ? { annotations: store.metadata.annotations } : {}),
    },
    spec: {
      replicas,
      serviceName: name,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels, ...(store.spec?.annotations ? { annotations: store.spec.annotations } : {}) },
        spec: {
          containers: [
            {
              name: 'minio',
              image: 'rook/minio:v1.2.7',
              command: ['/usr/bin/minio'],
              // One URL per server per volume, without a port.
              args: [
                'server',
                ...Array.from({ length: replicas }, (_, i) =>
                  volumes.map((v) => `http://${name}-${i}.${name}.${namespace}.svc.${domain}/data/${v}`),
                ).flat(),
              ],
              // Literal values, not secretKeyRefs: the keys are visible in the StatefulSet.
              env: [
                { name: 'MINIO_ACCESS_KEY', value: text(keys.username) },
                { name: 'MINIO_SECRET_KEY', value: text(keys.password) },
              ],
              ports: [{ containerPort: 9000 }],
              volumeMounts: volumes.map((v) => ({ name: v, mountPath: `/data/${v}` })),
              readinessProbe: probe('/minio/health/ready', 5),
              livenessProbe: probe('/minio/health/live', 8),
            },
          ],
          ...(templates.length ? {} : { volumes: [{ name: 'minio-data', emptyDir: {} }] }),
        },
      },
      ...(templates.length ? { volumeClaimTemplates: templates } : {}),
    },
  } as StatefulSet;
}
