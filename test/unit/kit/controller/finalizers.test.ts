// The finalizer patches (kube-rs's finalizer.rs): the operations sent for each starting list, and
// which API answers count as a conflict; a patch of an object as read tests its uid.
import { describe, expect, it } from '@jest/globals';
import { addFinalizer, mergePatchSame, removeFinalizer } from '../../../../src/kit/controller/finalizers.ts';
import type { KubeClient } from '../../../../src/kit/kube/client.ts';
import { isConflict, KubeError } from '../../../../src/kit/kube/errors.ts';
import type { ResourceType } from '../../../../src/kit/kube/resources.ts';

const type: ResourceType = { apiVersion: 'x.example.com/v1', kind: 'Thing', plural: 'things', namespaced: true };
const F = 'example.com/ours';
const thing = (finalizers?: string[]) => ({
  apiVersion: type.apiVersion,
  kind: type.kind,
  metadata: { name: 't', namespace: 'ns', ...(finalizers ? { finalizers } : {}) },
});

function client(answer?: Error) {
  const sent: unknown[][] = [];
  const fake = {
    jsonPatch: async (_t: ResourceType, _key: unknown, ops: unknown[]) => {
      sent.push(ops);
      if (answer) throw answer;
      return thing(['as-stored']);
    },
  };
  return { sent, client: fake as unknown as KubeClient };
}

describe('addFinalizer / removeFinalizer', () => {
  const cases: { name: string; run: (c: KubeClient) => Promise<unknown>; want: unknown[][] }[] = [
    {
      name: 'add, no list yet: test it is absent, then make it',
      run: (c) => addFinalizer(c, type, thing(), F),
      want: [
        [
          { op: 'test', path: '/metadata/finalizers', value: null },
          { op: 'add', path: '/metadata/finalizers', value: [F] },
        ],
      ],
    },
    {
      name: 'add to an empty list: test it is empty',
      run: (c) => addFinalizer(c, type, thing([]), F),
      want: [
        [
          { op: 'test', path: '/metadata/finalizers', value: [] },
          { op: 'add', path: '/metadata/finalizers', value: [F] },
        ],
      ],
    },
    {
      name: "add to another writer's list: test it is as read, append",
      run: (c) => addFinalizer(c, type, thing(['theirs']), F),
      want: [
        [
          { op: 'test', path: '/metadata/finalizers', value: ['theirs'] },
          { op: 'add', path: '/metadata/finalizers', value: ['theirs', F] },
        ],
      ],
    },
    { name: 'add when present: nothing sent', run: (c) => addFinalizer(c, type, thing([F]), F), want: [] },
    {
      name: 'remove: test it is still at its index, remove that index',
      run: (c) => removeFinalizer(c, type, thing(['theirs', F, 'later']), F),
      want: [
        [
          { op: 'test', path: '/metadata/finalizers/1', value: F },
          { op: 'remove', path: '/metadata/finalizers/1' },
        ],
      ],
    },
    { name: 'remove when absent: nothing sent', run: (c) => removeFinalizer(c, type, thing(['theirs']), F), want: [] },
    { name: 'remove with no list: nothing sent', run: (c) => removeFinalizer(c, type, thing(), F), want: [] },
  ];
  it.each(cases)('$name', async ({ run, want }) => {
    const { sent, client: c } = client();
    await run(c);
    expect(sent).toEqual(want);
  });

  const answers: { name: string; err: Error; conflict: boolean }[] = [
    {
      name: 'a patch that does not apply (a failed test): a conflict',
      err: new KubeError(422, 'Invalid', 'the server rejected our request due to an error in our request'),
      conflict: true,
    },
    {
      name: 'a failed test spelled out: a conflict',
      err: new KubeError(422, 'Invalid', 'testing value /metadata/finalizers failed: test failed'),
      conflict: true,
    },
    {
      name: 'a validation failure: itself',
      err: new KubeError(422, 'Invalid', 'Thing.x.example.com "t" is invalid: spec.size: Invalid value'),
      conflict: false,
    },
    { name: 'not found: itself', err: new KubeError(404, 'NotFound', 'things "t" not found'), conflict: false },
  ];
  it.each(answers)('$name', async ({ err, conflict }) => {
    const { client: c } = client(err);
    const failed = await addFinalizer(c, type, thing(), F).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isConflict(failed)).toBe(conflict);
    if (!conflict) expect(failed).toBe(err);
  });
});

describe('a patch of the object as read', () => {
  it('a JSON patch tests its uid first', async () => {
    const { client: c, sent } = client();
    await addFinalizer(c, type, { ...thing(), metadata: { ...thing().metadata, uid: 'u1' } }, F);
    expect(sent[0]?.[0]).toEqual({ op: 'test', path: '/metadata/uid', value: 'u1' });
  });

  const merged = (answer?: Error) => {
    const sent: unknown[] = [];
    const fake = {
      mergePatch: async (_t: ResourceType, _key: unknown, patch: unknown) => {
        sent.push(patch);
        if (answer) throw answer;
        return thing();
      },
    } as unknown as KubeClient;
    const run = () =>
      mergePatchSame(fake, type, { metadata: { name: 't', namespace: 'ns', uid: 'u1' } }, { metadata: { labels: { a: 'b' } } }).then(
        () => undefined,
        (e: unknown) => e,
      );
    return { sent, run };
  };

  it('a merge patch names its uid beside what it changes', async () => {
    const { sent, run } = merged();
    expect(await run()).toBeUndefined();
    expect(sent).toEqual([{ metadata: { labels: { a: 'b' }, uid: 'u1' } }]);
  });

  it("the server's refusal to change the uid (another object under that name now) is a conflict; other refusals are themselves", async () => {
    const anew = new KubeError(422, 'Invalid', 'Thing.x.example.com "t" is invalid: metadata.uid: Invalid value: "u1": field is immutable');
    expect(isConflict(await merged(anew).run())).toBe(true);
    const invalid = new KubeError(422, 'Invalid', 'Thing.x.example.com "t" is invalid: spec.size: Invalid value');
    expect(await merged(invalid).run()).toBe(invalid);
  });
});
