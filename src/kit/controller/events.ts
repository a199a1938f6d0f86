// Kubernetes Events for the objects we reconcile, correlated as client-go's recorder does them, so a
// resource stuck in an error loop neither floods the API server nor hides how often it happened:
// - an event identical to one already written adds to that Event's count and lastTimestamp;
// - more than 10 events in 10 minutes that differ only in their message become one Event, whose
//   message starts "(combined from similar events): ";
// - each object's identical events pass a token bucket (25 at once, then one per 5 minutes).
import type { Client } from '../kube/client.ts';
import { isNotFound } from '../kube/errors.ts';
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

// client-go's figures (tools/record/events_cache.go).
const MAX_ENTRIES = 4096;
const AGGREGATE_MAX_EVENTS = 10;
const AGGREGATE_WINDOW_MS = 600_000;
const SPAM_BURST = 25;
const SPAM_REFILL_MS = 300_000;
export const COMBINED_PREFIX = '(combined from similar events): ';

/** A Map that forgets its least recently used entry beyond MAX_ENTRIES. */
class Lru<V> extends Map<string, V> {
  touch(key: string): V | undefined {
    const v = super.get(key);
    if (v !== undefined) {
      super.delete(key);
      super.set(key, v);
    }
    return v;
  }
  override set(key: string, value: V): this {
    super.delete(key);
    super.set(key, value);
    if (this.size > MAX_ENTRIES) this.delete(this.keys().next().value!);
    return this;
  }
}

/** An Event written, and the write that follows on it (so a count never overtakes its create). */
interface Written {
  name: string;
  count: number;
  last: Promise<unknown>;
}

export class ApiEventRecorder implements EventRecorder {
  private readonly written = new Lru<Written>();
  private readonly similar = new Lru<{ since: number; messages: Set<string> }>();
  private readonly buckets = new Lru<{ tokens: number; at: number }>();
  private readonly client: Client;
  private readonly component: string;
  private readonly log: Logger;
  private sequence = 0;

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
    const text = message.slice(0, 1024);
    const { kind, apiVersion } = obj;
    const { name, namespace, uid } = obj.metadata;
    const object = [kind, apiVersion, namespace, name, uid].join('|');
    if (!this.allowed(`${object}|${type}|${reason}|${text}`, now)) return;
    const shown = this.aggregated(`${object}|${type}|${reason}`, text, now);
    // Combined events all add to one Event, which shows the latest message.
    const key = `${object}|${type}|${reason}|${shown.startsWith(COMBINED_PREFIX) ? COMBINED_PREFIX : shown}`;
    const event = { type, reason, message: shown };
    const at = new Date(now).toISOString();
    const seen = this.written.touch(key);
    // Fire and forget: an event that cannot be written must never fail a reconcile.
    const failed = (err: Error) => this.log.debug('cannot record event', { reason, error: err.message });
    if (seen) {
      seen.count++;
      const count = seen.count;
      seen.last = seen.last
        .then(() =>
          this.client.mergePatch(
            Events,
            { namespace: namespace || 'default', name: seen.name },
            { count, lastTimestamp: at, message: shown },
          ),
        )
        .catch((err: Error) => (isNotFound(err) ? this.create(obj, key, event, at) : failed(err)));
      return;
    }
    this.create(obj, key, event, at);
  }

  /** A new Event, named as client-go names them (<object>.<time in hex>), remembered for its count. */
  private create(obj: EventTarget, key: string, event: { type: string; reason: string; message: string }, at: string): void {
    const { type, reason, message } = event;
    const name = `${obj.metadata.name}.${(BigInt(Date.now()) * 1_000_000n + BigInt(this.sequence++ % 1_000_000)).toString(16)}`;
    const namespace = obj.metadata.namespace || 'default';
    const written: Written = { name, count: 1, last: Promise.resolve() };
    written.last = this.client
      .create(Events, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name, namespace },
        involvedObject: {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          name: obj.metadata.name,
          namespace: obj.metadata.namespace,
          uid: obj.metadata.uid,
        },
        type,
        reason,
        message,
        source: { component: this.component },
        reportingComponent: this.component,
        reportingInstance: this.component,
        firstTimestamp: at,
        lastTimestamp: at,
        count: 1,
      })
      .catch((err: Error) => {
        if (this.written.get(key) === written) this.written.delete(key);
        this.log.debug('cannot record event', { reason, error: err.message });
      });
    this.written.set(key, written);
  }

  /** The message to show: this one, or the combined one once its similar events are too many. */
  private aggregated(key: string, message: string, now: number): string {
    let group = this.similar.touch(key);
    if (!group || group.since <= now - AGGREGATE_WINDOW_MS) {
      group = { since: now, messages: new Set() };
      this.similar.set(key, group);
    }
    group.messages.add(message);
    return group.messages.size > AGGREGATE_MAX_EVENTS ? `${COMBINED_PREFIX}${message}`.slice(0, 1024) : message;
  }

  /** The spam filter: a token bucket per identical event. */
  private allowed(key: string, now: number): boolean {
    const b = this.buckets.touch(key) ?? { tokens: SPAM_BURST, at: now };
    b.tokens = Math.min(SPAM_BURST, b.tokens + (now - b.at) / SPAM_REFILL_MS);
    b.at = now;
    this.buckets.set(key, b);
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
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
