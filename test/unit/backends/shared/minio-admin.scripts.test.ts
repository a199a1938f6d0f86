// The access and revoke Jobs' scripts (src/backends/shared/mc-scripts.ts, in the Jobs minio-admin.ts builds), run by sh as the pod runs
// them, with an `mc` on PATH that records its calls and answers `mc ls` as a test says (MinIO's
// client is never run here: its licence is the AGPL). Paths the pod has but this machine does not
// (/user, /dev/termination-log) are moved into a temporary folder; nothing else of a script changes.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { accessJob, KEPT_EXIT_CODE, revokeTeardown, userSecret, type BucketUser } from '../../../../src/backends/shared/minio-admin.ts';
import type { TargetObject } from '../../../../src/runtime/native/kind.ts';
import { testBucketUser } from '../../../kit/bucket-user.ts';

type Env = { name: string; value?: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }[];
type Container = { command: string[]; env: Env };

const user = testBucketUser;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'mc-script-'));
  // Records each call; `mc ls` prints what MC_LS_OUTPUT holds; every other call succeeds.
  writeFileSync(
    join(dir, 'mc'),
    [
      '#!/bin/sh',
      `echo "$*" >>"${dir}/calls"`,
      `if [ "$1" = ls ]; then printf '%s' "\${MC_LS_OUTPUT:-}"; fi`,
      // A user exists until removed; the first MC_INFO_FAILS questions about it fail as an outage would.
      `if [ "$1 $2 $3" = "admin user info" ]; then`,
      `  n=$(cat "${dir}/info-calls" 2>/dev/null || echo 0); echo $((n + 1)) >"${dir}/info-calls"`,
      `  if [ "$n" -lt "\${MC_INFO_FAILS:-0}" ]; then echo "mc: <ERROR> connection refused" >&2; exit 1; fi`,
      `  if [ -e "${dir}/removed-$5" ]; then echo "mc: <ERROR> Unable to get user info. The specified user does not exist." >&2; exit 1; fi`,
      'fi',
      `if [ "$1 $2 $3" = "admin user rm" ]; then touch "${dir}/removed-$5"; fi`,
      // The policy document a grant loads, as mc reads it then; MC_TAMPER rewrites the mounted one at the first step.
      `if [ "$1 $2 $3" = "admin policy create" ]; then cat "$6" >"${dir}/policy-used"; fi`,
      `if [ "$1" = mb ] && [ -n "\${MC_TAMPER:-}" ]; then printf '%s' "$MC_TAMPER" >"${dir}/user/policy.json"; fi`,
      'exit 0',
      '',
    ].join('\n'),
  );
  chmodSync(join(dir, 'mc'), 0o755);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Runs the Job's script as its pod would: its env (each secretKeyRef resolved from `secrets`), the
 * user's Secret mounted at /user (here `dir`/user), and `extra` env for the recording mc. `later`:
 * the user's Secret as the kubelet updates the mount while the pod sleeps (a `sleep` on PATH copies
 * it in and records itself); without it, a sleep ends the script (exit 9).
 */
function run(
  job: TargetObject,
  secrets: Record<string, Record<string, string>>,
  { extra = {}, later }: { extra?: Record<string, string>; later?: Record<string, string> } = {},
) {
  const c = (job.spec as { template: { spec: { containers: Container[] } } }).template.spec.containers[0]!;
  const env: Record<string, string> = { PATH: `${dir}:/usr/bin:/bin`, ...extra };
  for (const e of c.env) {
    const ref = e.valueFrom?.secretKeyRef;
    env[e.name] = ref ? secrets[ref.name]![ref.key]! : e.value!;
  }
  env.MC_CONFIG_DIR = dir; // the pod's writable emptyDir, here the temporary folder
  const user = join(dir, 'user');
  const mount = (into: string, data: Record<string, string>): void => {
    rmSync(into, { recursive: true, force: true });
    mkdirSync(into);
    for (const [key, value] of Object.entries(data)) writeFileSync(join(into, key), value);
  };
  mount(user, Object.values(secrets).find((s) => 'policy.json' in s) ?? {});
  if (later) mount(join(dir, 'later'), later);
  writeFileSync(
    join(dir, 'sleep'),
    `#!/bin/sh
echo "sleep $*" >>"${dir}/calls"
${later ? `cp "${dir}/later/"* "${user}/"` : 'exit 9'}
`,
  );
  chmodSync(join(dir, 'sleep'), 0o755);
  const script = c.command[2]!.replaceAll('/user/', `${user}/`)
    .replaceAll('/home/grant', join(dir, 'grant'))
    .replaceAll('/dev/termination-log', join(dir, 'termination-log'));
  const out = spawnSync('/bin/sh', ['-c', script], { env, encoding: 'utf8', timeout: 10_000 });
  const calls = existsSync(join(dir, 'calls')) ? readFileSync(join(dir, 'calls'), 'utf8').trim().split('\n') : [];
  const log = existsSync(join(dir, 'termination-log')) ? readFileSync(join(dir, 'termination-log'), 'utf8').trim() : '';
  return { status: out.status, stderr: out.stderr, calls, log };
}

/** The Secrets a pod reads: the root user's, and the user's as provider-rook writes it for `u`. */
function secretsFor(u: BucketUser): Record<string, Record<string, string>> {
  const data = (userSecret(u) as TargetObject & { data: Record<string, string> }).data;
  const user = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
  return { 'store-access-keys': { username: 'root', password: 'root-secret' }, 'store-user': user };
}

describe("the access Job's script", () => {
  const features = { lifecycle: { rules: [{ id: 'logs', prefix: 'logs/', expirationDays: 7 }] } };

  it('applies the policy and the rules when the Secret holds what the Job was made for', () => {
    const u = user({ features });
    const r = run(accessJob(u).build(), secretsFor(u));
    expect(r.status).toBe(0);
    expect(r.calls).toEqual(
      expect.arrayContaining([
        `ilm rule import store/app-b-1`,
        `admin user add store AK SK-secret`,
        expect.stringMatching(/^admin policy create/),
      ]),
    );
  });

  it('loads the policy it checked, though the Secret as mounted changed once the check passed', () => {
    const u = user({ features });
    const secrets = secretsFor(u);
    const widened = '{"Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::*"]}]}';
    const r = run(accessJob(u).build(), secrets, { extra: { MC_TAMPER: widened } });
    expect(r.status).toBe(0);
    expect(readFileSync(join(dir, 'user', 'policy.json'), 'utf8')).toBe(widened); // the mount did change
    expect(readFileSync(join(dir, 'policy-used'), 'utf8')).toBe(secrets['store-user']!['policy.json']);
  });

  const stale = [
    ['keys', user({ features, keys: { accessKey: 'OLD', secretKey: 'OLD-SK' } })],
    // Someone who may patch Secrets there (not read them, nor run pods) choosing the user's secret key.
    ['secret key', user({ features, keys: { accessKey: 'AK', secretKey: 'CHOSEN-BY-ANOTHER' } })],
    ['policy', user({ features, access: 'ReadOnly' })],
    ['lifecycle rules', user({ features: { lifecycle: { rules: [{ id: 'logs', expirationDays: 1 }] } } })],
  ] as [string, BucketUser][];

  it.each(stale)("changes nothing while the user's Secret (written after the Job) holds other %s", (_what, old) => {
    const r = run(accessJob(user({ features })).build(), secretsFor(old));
    expect(r.status).toBe(9); // the recording sleep ends the wait
    expect(r.stderr).toContain("waiting for the user's Secret to hold this Job's keys, policy and rules");
    expect(r.calls.filter((c) => !c.startsWith('alias set'))).toEqual(['sleep 5']);
  });

  it.each(stale)('waits for the Secret to hold its %s, then applies what it holds then', (_what, old) => {
    const u = user({ features });
    const r = run(accessJob(u).build(), secretsFor(old), { later: secretsFor(u)['store-user'] });
    expect(r.status).toBe(0);
    const after = r.calls.slice(r.calls.indexOf('sleep 5') + 1);
    expect(r.calls.slice(0, r.calls.indexOf('sleep 5'))).toEqual([expect.stringMatching(/^alias set/)]);
    // The keys come from the Secret as it is now, not as the pod's variables read it at its start.
    expect(after).toEqual(expect.arrayContaining(['ilm rule import store/app-b-1', 'admin user add store AK SK-secret']));
  });
});

describe("the revoke Job's script", () => {
  const revoke = (u: BucketUser, deleteObjects: boolean) => revokeTeardown(u, deleteObjects).object.build();
  const locked = user({ features: { versioning: 'Enabled', objectLock: true } });
  const versioned = user({ features: { versioning: 'Enabled' } });
  // What `mc ls --versions` prints for a bucket whose one object was deleted: its old version and the delete marker.
  const versions =
    '[2026-11-28 10:00:00 UTC]     0B STANDARD 2d1e v2 DEL a.txt\n[2026-11-28 09:00:00 UTC]     3B STANDARD 9c0f v1 PUT a.txt\n';
  const lsOutput = (text: string) => ({ MC_LS_OUTPUT: text });
  const bucketCalls = (calls: string[]) => calls.filter((c) => /^(ls|rb)\b/.test(c));

  const [ls, rb, force] = ['ls --versions store/app-b-1', 'rb store/app-b-1', 'rb --force store/app-b-1'];
  const kept = (log: string) => ({ status: KEPT_EXIT_CODE, log });
  const removed = { status: 0, log: '' };
  it.each([
    {
      name: 'lists old versions and delete markers too, and removes a bucket that has none',
      ...{ u: versioned, deleteObjects: false, listing: '', outcome: removed, calls: [ls, rb] },
    },
    {
      name: 'keeps a bucket whose only objects are old versions (it lists empty without --versions)',
      ...{ u: versioned, deleteObjects: false, listing: versions, outcome: kept('bucket app-b-1 still holds objects'), calls: [ls] },
    },
    {
      name: 'empties and removes a versioned bucket where the class deletes objects',
      ...{ u: versioned, deleteObjects: true, listing: versions, outcome: removed, calls: [ls, force] },
    },
    {
      name: 'keeps a bucket under object lock that holds objects even where the class deletes objects (MinIO refuses rb --force there)',
      ...{
        u: locked,
        deleteObjects: true,
        listing: versions,
        outcome: kept('bucket app-b-1 holds objects under object lock'),
        calls: [ls],
      },
    },
    {
      name: 'removes an empty bucket under object lock',
      ...{ u: locked, deleteObjects: true, listing: '', outcome: removed, calls: [ls, rb] },
    },
  ])('$name', ({ u, deleteObjects, listing, outcome, calls }) => {
    const r = run(revoke(u, deleteObjects), secretsFor(u), { extra: lsOutput(listing) });
    expect({ status: r.status, log: r.log }).toEqual(outcome);
    expect(bucketCalls(r.calls)).toEqual(calls);
    // The user goes in every case, before anything is decided about the bucket.
    expect(r.calls).toContain('admin user rm store AK');
  });

  it("removes the user provider-rook made, whatever access key someone wrote into the user's Secret since", () => {
    const u = user({});
    const secrets = secretsFor(u);
    secrets['store-user']!.accessKey = 'BOGUS other-user';
    const r = run(revoke(u, false), secrets, { extra: lsOutput('') });
    expect(r.status).toBe(0);
    expect(r.calls.filter((c) => c.startsWith('admin user rm'))).toEqual(['admin user rm store AK']);
  });

  it('removes a user the store could not be asked about at first: an outage is never taken for "gone"', () => {
    const r = run(revoke(versioned, false), secretsFor(versioned), { extra: { ...lsOutput(''), MC_INFO_FAILS: '2' } });
    expect(r.status).toBe(0);
    expect(r.calls).toContain('admin user rm store AK');
    expect(r.calls.filter((c) => c === 'admin user info store AK').length).toBeGreaterThanOrEqual(3);
  });

  it('says why a locked bucket was kept, and what the owner can do', () => {
    const failed = {
      metadata: { name: 'store-revoke' },
      status: { conditions: [{ type: 'Failed', status: 'True', reason: 'PodFailurePolicy' }] },
    };
    expect(revokeTeardown(locked, true).outcome(failed as TargetObject)).toEqual({
      done: true,
      kept: 'bucket app-b-1 holds objects under object lock, so it was kept with them (its user was removed). Delete them by hand once their retention ends, then the bucket',
    });
  });
});
