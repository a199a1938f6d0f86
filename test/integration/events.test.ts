// Events as client-go's recorder writes them, against a real API server: an identical event adds to
// one Event's count, similar events (only the message differs) beyond ten in ten minutes become one
// combined Event, and a loop that repeats itself stops writing once its token bucket is empty.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ApiEventRecorder, COMBINED_PREFIX } from '../../src/kit/controller/events.ts';
import type { KubeClient, KubeObjectLike } from '../../src/kit/kube/client.ts';
import { ConfigMaps, Events } from '../../src/kit/kube/resources.ts';
import { silentLogger } from '../../src/kit/logger.ts';
import { adminClient, testCluster } from '../kit/env.ts';
import { createNamespace } from '../kit/provider.ts';
import { eventually } from '../kit/eventually.ts';

type EventObj = KubeObjectLike & { reason: string; message: string; count: number; involvedObject: { name: string } };

let admin: KubeClient;
let ns: string;

beforeAll(async () => {
  admin = adminClient(testCluster('control'));
  ns = await createNamespace(admin, 'events');
});

afterAll(async () => {
  await admin?.close();
});

/** An object to record events about, and the Events written about it so far. */
async function subject(name: string) {
  const obj = await admin.create<KubeObjectLike>(ConfigMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns } });
  const events = async (): Promise<EventObj[]> =>
    (await admin.list<EventObj>(Events, { namespace: ns })).items.filter((e) => e.involvedObject.name === name);
  return { obj: { ...obj, apiVersion: 'v1', kind: 'ConfigMap' }, events };
}

describe('the event recorder', () => {
  it('counts an identical event on the Event it wrote first', async () => {
    const recorder = new ApiEventRecorder(admin, 'events-test', silentLogger);
    const { obj, events } = await subject('same');
    for (let i = 0; i < 3; i++) recorder.warning(obj, 'CannotConnect', 'the target did not answer');
    const one = await eventually(
      async () => {
        const e = await events();
        return e.length === 1 && e[0]!.count === 3 ? e : undefined;
      },
      'one Event with count 3',
      10_000,
    );
    expect(one[0]!.message).toBe('the target did not answer');
    // Another reason is another Event.
    recorder.normal(obj, 'Connected', 'the target answered');
    await eventually(async () => (await events()).length === 2, 'a second Event', 10_000);
  });

  it('combines more than ten similar events (only the message differs) into one, showing the latest message', async () => {
    const recorder = new ApiEventRecorder(admin, 'events-test', silentLogger);
    const { obj, events } = await subject('similar');
    for (let i = 1; i <= 14; i++) recorder.warning(obj, 'ReconcileError', `attempt ${i} failed`);
    const all = await eventually(
      async () => {
        const e = await events();
        const combined = e.find((x) => x.message.startsWith(COMBINED_PREFIX));
        return e.length === 11 && combined?.count === 4 ? e : undefined;
      },
      'ten Events and one combined Event counting four',
      10_000,
    );
    expect(all.find((x) => x.message.startsWith(COMBINED_PREFIX))?.message).toBe(`${COMBINED_PREFIX}attempt 14 failed`);
  });

  it('stops writing an event that repeats itself beyond its burst of 25', async () => {
    const recorder = new ApiEventRecorder(admin, 'events-test', silentLogger);
    const { obj, events } = await subject('loop');
    for (let i = 0; i < 40; i++) recorder.warning(obj, 'ReconcileError', 'the same failure');
    await eventually(async () => (await events())[0]?.count === 25, 'the count to reach 25', 10_000);
    // The rest were dropped, not queued: the count stays.
    recorder.warning(obj, 'ReconcileError', 'the same failure');
    const after = await admin.list<EventObj>(Events, { namespace: ns });
    expect(after.items.filter((e) => e.involvedObject.name === 'loop').map((e) => e.count)).toEqual([25]);
  });
});
