// Kubernetes Events for the objects we reconcile. Identical events for one object are suppressed
// for a while, so a resource stuck in an error loop does not flood the API server.
import type { Client } from '../kube/client.ts';
import { Events } from '../kube/resources.ts';
import type { Logger } from '../logger.ts';

export interface EventTarget {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; uid?: string; annotations?: Record<string, string> };
}

export interface EventRecorder {
  normal(obj: EventTarget, reason: string, message: string): void;
  warning(obj: EventTarget, reason: string, message: string): void;
}

const SUPPRESS_MS = 10 * 60_000;

export class ApiEventRecorder implements EventRecorder {
  private readonly recent = new Map<string, number>();
  private readonly client: Client;
  private readonly component: string;
  private readonly log: Logger;

  constructor(client: Client, component: string, log: Logger) {
    this.client = client;
    this.component = component;
    this.log = log;
  }

  normal(obj: EventTarget, reason: string, message: string): void {
    this.emit(obj, 'Normal', reason, message);
  }

  warning(obj: EventTarget, reason: string, message: string): void {
    this.emit(obj, 'Warning', reason, message);
  }

  private emit(obj: EventTarget, type: string, reason: string, message: string): void {
    const now = Date.now();
    const key = `${obj.metadata.uid}|${type}|${reason}|${message}`;
    if ((this.recent.get(key) ?? 0) > now - SUPPRESS_MS) return;
    this.recent.set(key, now);
    if (this.recent.size > 10_000) for (const [k, at] of this.recent) if (at <= now - SUPPRESS_MS) this.recent.delete(k);
    const at = new Date(now).toISOString();
    const namespace = obj.metadata.namespace || 'default';
    // Fire and forget: an event that cannot be written must never fail a reconcile.
    this.client
      .create(Events, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { generateName: `${obj.metadata.name}.`, namespace, name: '' },
        involvedObject: {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          name: obj.metadata.name,
          namespace: obj.metadata.namespace,
          uid: obj.metadata.uid,
        },
        type,
        reason,
        message: message.slice(0, 1024),
        source: { component: this.component },
        reportingComponent: this.component,
        reportingInstance: this.component,
        firstTimestamp: at,
        lastTimestamp: at,
        count: 1,
      })
      .catch((err: Error) => this.log.debug('cannot record event', { reason, error: err.message }));
  }
}

/** Keeps events in memory: for unit tests. */
export class MemoryEventRecorder implements EventRecorder {
  readonly events: { type: string; reason: string; message: string; name: string }[] = [];
  normal(obj: EventTarget, reason: string, message: string): void {
    this.events.push({ type: 'Normal', reason, message, name: obj.metadata.name });
  }
  warning(obj: EventTarget, reason: string, message: string): void {
    this.events.push({ type: 'Warning', reason, message, name: obj.metadata.name });
  }
}
