import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../src/runtime/kube/client.ts';
const admin = new KubeConfig(); admin.loadFromFile('.local/clusters/it-target/kubeconfig');
const kc = new KubeConfig();
kc.loadFromOptions({ clusters: [{ name: 'c', server: admin.getCurrentCluster()!.server, caData: admin.getCurrentCluster()!.caData }], users: [{ name: 'u', token: 'wrong' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' });
const c = new KubeClient(kc, { fieldManager: 'x', trusted: false, name: 'the target cluster' });
const results = await Promise.allSettled(Array.from({ length: 8 }, () => c.request('GET', '/api/v1/namespaces/default/secrets')));
for (const r of results) console.log(r.status === 'rejected' ? (r.reason as Error).message : 'ok');
await c.close();
