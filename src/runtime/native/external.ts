// NativeExternal: the generic ExternalClient for "the external resource is a Kubernetes object in
// another cluster". A small per-kind description (NativeKind, kind.ts) says what object to keep
// there; each call is one pass over one resource (pass.ts), split by phase: observe.ts reads and
// judges, apply.ts makes or repairs, delete.ts tears down and deletes. The trust rules the three
// share are the resource's ownership (ResourceOwnership, ownership/marks.ts), which the pass holds;
// the target namespace is handled in namespaces.ts, key rotation in rotation.ts.
import type { KubeClient } from '../../kit/kube/client.ts';
import type { ExternalClient, ExternalCreation, ExternalDeletion, ExternalObservation, ManagedResource } from '../managed/types.ts';
import type { OwnershipMarks } from '../ownership/marks.ts';
import { apply } from './apply.ts';
import { remove, stopTeardown } from './delete.ts';
import { keep } from './keep.ts';
import { nameOf, type NativeKind } from './kind.ts';
import { observe } from './observe.ts';
import { NativePass, type NativeExternalOptions } from './pass.ts';

export class NativeExternal<MR extends ManagedResource> implements ExternalClient<MR> {
  private readonly target: { kind: NativeKind<MR>; client: KubeClient; marks: OwnershipMarks; opts: NativeExternalOptions };

  constructor(kind: NativeKind<MR>, client: KubeClient, marks: OwnershipMarks, opts: NativeExternalOptions = {}) {
    this.target = { kind, client, marks, opts };
  }

  observe(mr: MR, signal: AbortSignal): Promise<ExternalObservation> {
    return observe(new NativePass(this.target, mr, signal));
  }

  externalName(mr: MR): string {
    return nameOf(this.target.kind, mr);
  }

  create(mr: MR, signal: AbortSignal): Promise<ExternalCreation> {
    return apply(new NativePass(this.target, mr, signal), true);
  }

  update(mr: MR, signal: AbortSignal): Promise<ExternalCreation> {
    return apply(new NativePass(this.target, mr, signal), false);
  }

  delete(mr: MR, signal: AbortSignal): Promise<ExternalDeletion> {
    return remove(new NativePass(this.target, mr, signal));
  }

  async keep(mr: MR, signal: AbortSignal): Promise<void> {
    const pass = new NativePass(this.target, mr, signal);
    await stopTeardown(pass);
    return keep(pass);
  }
}
