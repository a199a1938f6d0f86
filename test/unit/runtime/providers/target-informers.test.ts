// TargetInformers tells its listeners once when the target fails and once when every watch works
// again: an outage must reach them even while another watch of the target never worked at all.
import { describe, expect, it } from '@jest/globals';
import type { KubeClient } from '../../../../src/kit/kube/client.ts';
import { UnreachableError } from '../../../../src/kit/kube/errors.ts';
import { ConfigMaps, Secrets } from '../../../../src/kit/kube/resources.ts';
import { silentLogger } from '../../../../src/kit/logger.ts';
import { TargetInformers } from '../../../../src/runtime/providers/target-informers.ts';
import { eventually } from '../../../kit/eventually.ts';

describe('TargetInformers health', () => {
  it('tells of each outage and recovery once, while another watch never works', async () => {
    let down = false;
    const ends: (() => void)[] = [];
    const client = {
      list: async (type: { plural: string }) => {
        // Secrets are never listed (forbidden, say); ConfigMaps are, until the server goes.
        if (type.plural === 'secrets' || down) throw new UnreachableError('connect ECONNREFUSED 127.0.0.1:1');
        return { items: [], resourceVersion: '1' };
      },
      watch: (_t: unknown, o: { signal: AbortSignal; onOpen?: () => void }) =>
        new Promise<void>((_resolve, reject) => {
          o.onOpen?.();
          ends.push(() => reject(new UnreachableError('socket hang up')));
          o.signal.addEventListener('abort', () => reject(new Error('aborted')));
        }),
    } as unknown as KubeClient;
    const informers = new TargetInformers(client, silentLogger);
    const told: string[] = [];
    informers.onHealth({ failed: () => told.push('failed'), recovered: () => told.push('recovered') });
    const never = informers.informer(Secrets);
    const works = informers.informer(ConfigMaps);
    try {
      await eventually(async () => (works.hasSynced && never.failing ? true : undefined), 'one watch open, the other failing', {
        timeoutMs: 5_000,
        delayMs: 20,
      });
      down = true;
      for (const end of ends.splice(0)) end();
      await eventually(async () => (works.failing ? true : undefined), 'the open watch to fail', { timeoutMs: 5_000, delayMs: 20 });
      expect(told).toEqual(['failed']);
      // Back: told so, though the other watch still fails; and the next outage is told again.
      down = false;
      await eventually(async () => (!works.failing ? true : undefined), 'the watch to work again', { timeoutMs: 10_000, delayMs: 20 });
      expect(told).toEqual(['failed', 'recovered']);
      down = true;
      for (const end of ends.splice(0)) end();
      await eventually(async () => (works.failing ? true : undefined), 'the watch to fail again', { timeoutMs: 5_000, delayMs: 20 });
      expect(told).toEqual(['failed', 'recovered', 'failed']);
    } finally {
      await informers.stop();
    }
  });
});
