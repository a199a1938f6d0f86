// stop/start keeps a cluster's data and port; down leaves no process behind.
import { describe, expect, it } from '@jest/globals';
import { readFileSync, readdirSync } from 'node:fs';
import { down, start, status, stop, up } from '../kit/cluster.ts';
import { adminClient } from '../kit/env.ts';
import type { ResourceType } from '../../src/kit/kube/resources.ts';

const ConfigMaps: ResourceType = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };

/** Live processes whose command line mentions the folder (zombies have an empty one). */
function processesUsing(dir: string): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir);
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe('cluster lifecycle', () => {
  it('keeps data and port across stop/start, and down leaves no process', async () => {
    const name = `lifecycle-${process.pid}`;
    const [cluster] = await up([name]);
    try {
      const client = adminClient(cluster!);
      await client.create(ConfigMaps, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'kept', namespace: 'default' },
        data: { answer: '42' },
      });

      await stop(name);
      expect(status().find((s) => s.name === name)?.running['kube-apiserver']).toBeUndefined();
      expect(processesUsing(cluster!.dir)).toEqual([]);
      const unreachable = await client.get(ConfigMaps, { namespace: 'default', name: 'kept' }).then(
        () => 'reachable',
        (e: Error) => e.name,
      );
      expect(unreachable).toBe('UnreachableError');

      const restarted = await start(name);
      expect(restarted.server).toBe(cluster!.server);
      const kept = await adminClient(restarted).get<{ metadata: { name: string }; data: Record<string, string> }>(ConfigMaps, {
        namespace: 'default',
        name: 'kept',
      });
      expect(kept?.data.answer).toBe('42');
    } finally {
      await down([name]);
    }
    expect(processesUsing(cluster!.dir)).toEqual([]);
    expect(status().some((s) => s.name === name)).toBe(false);
  });
});
