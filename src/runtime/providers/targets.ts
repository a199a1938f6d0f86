// One client per distinct set of target credentials, shared by every resource that uses it, with
// the target's watch caches. A client is rebuilt when the credentials change, and the superseded one
// is closed at once. Hooks let watchers start and stop with their target.
import type { KubeClient } from '../../kit/kube/client.ts';
import type { Logger } from '../../kit/logger.ts';
import type { Credentials } from './credentials.ts';
import { TargetInformers } from './target-informers.ts';
import { targetClients } from '../managed-metrics.ts';

export interface Target {
  fingerprint: string;
  server: string;
  client: KubeClient;
  informers: TargetInformers;
  /** The server's version, once read: asked again only while its watches fail. */
  serverVersion?: string;
}

export interface TargetHooks {
  started?(target: Target): void;
  stopped?(target: Target): Promise<void> | void;
  /** Whether a watch of this hook's still needs the target, though no reconcile used it lately (it is then kept open). */
  inUse?(target: Target): boolean;
}

const IDLE_MS = 30 * 60_000;

export class TargetClients {
  private readonly targets = new Map<string, Target & { lastUsed: number }>();
  private readonly hooks: TargetHooks[] = [];
  private readonly makeClient: (credentials: Credentials) => KubeClient;
  private readonly log: Logger;

  constructor(makeClient: (credentials: Credentials) => KubeClient, log: Logger) {
    this.makeClient = makeClient;
    this.log = log;
  }

  addHooks(hooks: TargetHooks): void {
    this.hooks.push(hooks);
    for (const t of this.targets.values()) hooks.started?.(t);
  }

  get(credentials: Credentials): Target {
    let target = this.targets.get(credentials.fingerprint);
    if (!target) {
      const client = this.makeClient(credentials);
      target = {
        fingerprint: credentials.fingerprint,
        server: credentials.server,
        client,
        informers: new TargetInformers(client, this.log.with({ target: credentials.server })),
        lastUsed: 0,
      };
      this.targets.set(credentials.fingerprint, target);
      targetClients.set(this.targets.size);
      for (const h of this.hooks) h.started?.(target);
    }
    target.lastUsed = Date.now();
    return target;
  }

  /** Stops a target's watches and closes its client (its credentials were superseded, or nobody used it lately). */
  async close(fingerprint: string, shuttingDown = false): Promise<void> {
    const t = this.targets.get(fingerprint);
    if (!t) return;
    this.targets.delete(fingerprint);
    targetClients.set(this.targets.size);
    if (!shuttingDown) for (const h of this.hooks) await h.stopped?.(t);
    await t.informers.stop();
    await t.client.close();
  }

  /** Closes clients nobody used for a while, and whose watches nobody needs. */
  async sweepIdle(now = Date.now()): Promise<void> {
    for (const [key, t] of this.targets) if (now - t.lastUsed > IDLE_MS && !this.hooks.some((h) => h.inUse?.(t))) await this.close(key);
  }

  async closeAll(): Promise<void> {
    for (const key of [...this.targets.keys()]) await this.close(key, true);
  }
}
