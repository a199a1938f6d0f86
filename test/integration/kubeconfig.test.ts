// The process's own kubeconfig reader against a real API server: impersonation (as, as-groups) is
// honoured, so the server sees the impersonated user, and not silently dropped.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { dump, load } from 'js-yaml';
import { KubeClient } from '../../src/kit/kube/client.ts';
import { kubeconfigAccess } from '../../src/kit/kube/config.ts';
import { testCluster } from '../kit/env.ts';

type Doc = { users: { name: string; user: Record<string, unknown> }[] };

describe('our kubeconfig reader, with a real API server', () => {
  it('acts as the user and groups the kubeconfig impersonates (the server says who it sees)', async () => {
    const cluster = testCluster('control');
    const doc = load(readFileSync(cluster.kubeconfig, 'utf8')) as Doc;
    for (const u of doc.users) Object.assign(u.user, { as: 'jane@example.com', 'as-groups': ['team-a', 'team-b'] });
    const client = new KubeClient(kubeconfigAccess(dump(doc)), { fieldManager: 'kubeconfig-test' });
    try {
      const review = await client.request<{ status: { userInfo: { username: string; groups?: string[] } } }>(
        'POST',
        '/apis/authentication.k8s.io/v1/selfsubjectreviews',
        { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } },
      );
      expect(review.status.userInfo.username).toBe('jane@example.com');
      expect(review.status.userInfo.groups).toEqual(expect.arrayContaining(['team-a', 'team-b']));
    } finally {
      await client.close();
    }
  });
});
