// TEST DOUBLE. Local control planes run no pods, so the real Rook MinIO operator cannot run there.
// This stand-in does to the API what the operator (rook v1.2.7) does for every minio.rook.io
// ObjectStore: a headless Service and a StatefulSet named after the store, labelled app=minio and
// objectstore=<name>. It then plays the StatefulSet controller and kubelet by setting
// status.readyReplicas, which is how provider-rook tells a store is ready. Never used by src/.
import { Informer } from '../../src/runtime/informer.ts';
import type { KubeClient, KubeObjectLike } from '../../src/runtime/kube/client.ts';
import { isAlreadyExists, isConflict } from '../../src/runtime/kube/errors.ts';
import { Services, StatefulSets } from '../../src/runtime/kube/resources.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { RookObjectStores } from '../../src/minio/objectstore.ts';

interface Store extends KubeObjectLike {
  metadata: { name: string; namespace: string; uid: string; deletionTimestamp?: string };
  spec?: { scope?: { nodeCount?: number } };
}

interface StatefulSet extends KubeObjectLike {
  spec: { replicas: number };
  status?: { readyReplicas?: number; replicas?: number };
}

export interface FakeOperatorOptions {
  /** How many servers report ready; all of them by default. */
  readyReplicas?: (store: Store) => number;
}

export class FakeMinioOperator {
  private readonly informer: Informer<Store>;
  private readonly client: KubeClient;
  private readonly opts: FakeOperatorOptions;
  private readonly busy = new Set<string>();
  private readonly dirty = new Set<string>();

  constructor(client: KubeClient, opts: FakeOperatorOptions = {}) {
    this.client = client;
    this.opts = opts;
    this.informer = new Informer<Store>(client, RookObjectStores, { log: silentLogger });
    const handle = (store: Store): void => void this.reconcile(store).catch(() => undefined);
    this.informer.on({ added: handle, updated: (_old, s) => handle(s) });
  }

  async start(): Promise<void> {
    await this.informer.start();
  }

  async stop(): Promise<void> {
    await this.informer.stop();
  }

  /** Re-runs for every store, e.g. after changing readyReplicas. */
  resync(): Promise<void[]> {
    return Promise.all(this.informer.list().map((s) => this.reconcile(s).catch(() => undefined)));
  }

  private async reconcile(store: Store): Promise<void> {
    const { name, namespace, uid } = store.metadata;
    const key = `${namespace}/${name}`;
    if (store.metadata.deletionTimestamp) return;
    if (this.busy.has(key)) {
      this.dirty.add(key);
      return;
    }
    this.busy.add(key);
    try {
      const replicas = store.spec?.scope?.nodeCount ?? 0;
      if (replicas < 4 || replicas % 2 !== 0) return; // the real operator only logs "node count must be greater than 3 and even"
      const labels = { app: 'minio', objectstore: name };
      const ownerReferences = [{ apiVersion: 'v1alpha1', kind: 'ObjectStore', name, uid }]; // sic: the real operator omits the group
      await this.client.create(Services, {
        apiVersion: 'v1', kind: 'Service', metadata: { name, namespace, labels, ownerReferences },
        spec: { clusterIP: 'None', selector: { app: 'minio' }, ports: [{ port: 9000 }] },
      }).catch((e: unknown) => { if (!isAlreadyExists(e)) throw e; });
      let sts = await this.client.get<StatefulSet>(StatefulSets, name, namespace);
      if (!sts) {
        sts = await this.client.create<StatefulSet>(StatefulSets, {
          apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name, namespace, labels, ownerReferences },
          spec: {
            replicas, serviceName: name, selector: { matchLabels: labels },
            template: { metadata: { labels }, spec: { containers: [{ name: 'minio', image: 'rook/minio:v1.2.7', command: ['/usr/bin/minio'], ports: [{ containerPort: 9000 }] }] } },
          },
        } as StatefulSet);
      } else if (sts.spec.replicas !== replicas) {
        sts = await this.client.update<StatefulSet>(StatefulSets, { ...sts, spec: { ...sts.spec, replicas } });
      }
      const ready = this.opts.readyReplicas?.(store) ?? replicas;
      if (sts.status?.readyReplicas !== ready) {
        await this.client.updateStatus(StatefulSets, { ...sts, status: { ...sts.status, replicas, readyReplicas: ready } });
      }
    } catch (err) {
      if (!isConflict(err)) throw err;
    } finally {
      this.busy.delete(key);
      const latest = this.informer.get(key);
      if (this.dirty.delete(key) && latest) await this.reconcile(latest);
    }
  }
}
