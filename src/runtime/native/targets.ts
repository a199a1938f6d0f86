// One client per distinct set of target credentials, shared by every resource that uses it and
// rebuilt only when the credentials change. Hooks let watchers start and stop with their target.
import type { KubeClient } from '../kube/client.ts';
import { targetClients } from '../metrics.ts';
import type { Credentials } from './credentials.ts';

export interface Target {
  fingerprint: string;
  server: string;
  client: KubeClient;
}

export interface TargetHooks {
  started?(target: Target): void;
  stopped?(target: Target): Promise<void> | void;
}

const IDLE_MS = 30 * 60_000;

export class TargetClients {
  private readonly targets = new Map<string, Target & { lastUsed: number }>();
  private readonly hooks: TargetHooks[] = [];
  private readonly makeClient: (credentials: Credentials) => KubeClient;

  constructor(makeClient: (credentials: Credentials) => KubeClient) {
    this.makeClient = makeClient;
  }

  addHooks(hooks: TargetHooks): void {
    this.hooks.push(hooks);
    for (const t of this.targets.values()) hooks.started?.(t);
  }

  get(credentials: Credentials): Target {
    let target = this.targets.get(credentials.fingerprint);
    if (!target) {
      target = { fingerprint: credentials.fingerprint, server: credentials.server, client: this.makeClient(credentials), lastUsed: 0 };
      this.targets.set(credentials.fingerprint, target);
      targetClients.set(this.targets.size);
      for (const h of this.hooks) h.started?.(target);
    }
    target.lastUsed = Date.now();
    return target;
  }

  /** Closes clients nobody used for a while (e.g. after a credential rotation). */
  async sweepIdle(now = Date.now()): Promise<void> {
    for (const [key, t] of this.targets) {
      if (now - t.lastUsed > IDLE_MS) {
        this.targets.delete(key);
        for (const h of this.hooks) await h.stopped?.(t);
        await t.client.close();
      }
    }
    targetClients.set(this.targets.size);
  }

  async close(): Promise<void> {
    for (const t of this.targets.values()) {
      for (const h of this.hooks) await h.stopped?.(t);
      await t.client.close();
    }
    this.targets.clear();
  }
}
