// TEST DOUBLE. Local control planes run no Deployment controller and no pods, so nothing writes a
// Deployment's status there. This stand-in writes what the Deployment controller (v1.35) writes once
// every pod of the current template is ready: observedGeneration, replicas, updatedReplicas,
// readyReplicas, availableReplicas, and conditions Available and Progressing (NewReplicaSetAvailable).
// A Deployment whose image is in `broken` never becomes available: after the controller's progress
// deadline it writes Progressing=False, reason ProgressDeadlineExceeded, as the real one does (here at
// once). Only Deployments with a label of `plays` are its own. Never used by src/.
import type { KubeClient } from '../../src/kit/kube/client.ts';
import { Deployments } from '../../src/kit/kube/resources.ts';
import { StandIn, type Loose } from './stand-in.ts';

type Deployment = Loose & {
  metadata: Loose['metadata'] & { generation?: number; labels?: Record<string, string> };
  spec: { replicas?: number; template: { spec: { containers: { image: string }[] } } };
  status?: { observedGeneration?: number };
};

export class DeploymentRollout extends StandIn<Deployment> {
  /** Images whose pods never become ready (e.g. a version that crashes on this target). */
  readonly broken = new Set<string>();
  private readonly plays: (d: Deployment) => boolean;

  constructor(client: KubeClient, plays: (d: Deployment) => boolean) {
    super(client, Deployments);
    this.plays = plays;
  }

  protected async reconcile(d: Deployment): Promise<void> {
    if (!this.plays(d)) return;
    const generation = d.metadata.generation ?? 1;
    const image = d.spec.template.spec.containers[0]?.image ?? '';
    const want = d.spec.replicas ?? 1;
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const broken = this.broken.has(image);
    const status = broken
      ? {
          observedGeneration: generation,
          replicas: want,
          updatedReplicas: want,
          readyReplicas: 0,
          availableReplicas: 0,
          unavailableReplicas: want,
          conditions: [
            { type: 'Available', status: 'False', reason: 'MinimumReplicasUnavailable', lastUpdateTime: now, lastTransitionTime: now },
            { type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', lastUpdateTime: now, lastTransitionTime: now },
          ],
        }
      : {
          observedGeneration: generation,
          replicas: want,
          updatedReplicas: want,
          readyReplicas: want,
          availableReplicas: want,
          conditions: [
            { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable', lastUpdateTime: now, lastTransitionTime: now },
            { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable', lastUpdateTime: now, lastTransitionTime: now },
          ],
        };
    const seen = d.status as { observedGeneration?: number; availableReplicas?: number } | undefined;
    // The API server leaves out zero counts: none available reads as absent.
    if (seen?.observedGeneration === generation && ((seen.availableReplicas ?? 0) === 0) === broken) return;
    await this.client.updateStatus(Deployments, { ...d, status });
  }
}
