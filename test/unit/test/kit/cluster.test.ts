// A cluster's ports are never handed to another cluster, even while it is stopped (e2e outage test).
import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stablePort } from '../../../kit/cluster.ts';

const root = mkdtempSync(path.join(tmpdir(), 'stable-port-'));
const before = process.env.PROVIDER_ROOK_CLUSTERS_DIR;
afterAll(() => {
  if (before === undefined) delete process.env.PROVIDER_ROOK_CLUSTERS_DIR;
  else process.env.PROVIDER_ROOK_CLUSTERS_DIR = before;
  rmSync(root, { recursive: true, force: true });
});

describe('stablePort', () => {
  it('skips the ports a stopped cluster recorded and those already handed out', async () => {
    process.env.PROVIDER_ROOK_CLUSTERS_DIR = root;
    const [recorded, left] = [24_001, 24_002];
    mkdirSync(path.join(root, 'stopped'));
    const ports = { apiserver: recorded, etcdClient: recorded, etcdPeer: recorded };
    writeFileSync(path.join(root, 'stopped', 'cluster.json'), JSON.stringify({ name: 'stopped', ports }));
    const taken = new Set<number>();
    for (let port = 20_000; port < 32_000; port++) if (port !== recorded && port !== left) taken.add(port);

    for (let i = 0; i < 5; i++) expect(await stablePort(taken)).toBe(left);
    taken.add(left);
    await expect(stablePort(taken)).rejects.toThrow(/no free port/);
  });
});
