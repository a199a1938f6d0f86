// KubeClient against a hostile server: nothing it sends (nor the endpoint, nor a credential plugin's
// output) may reach an error message, since those end up in status conditions and Events.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ClusterAccess } from '../../../../src/kit/kube/config.ts';
import { KubeClient, WatchStalledError, type ClientOptions, type KubeObjectLike } from '../../../../src/kit/kube/client.ts';
import { formatObjectKey, objectKeyOf, parseObjectKey } from '../../../../src/kit/kube/object-key.ts';
import { CredentialPluginError, KubeError, UnreachableError } from '../../../../src/kit/kube/errors.ts';
import { reasonOf } from '../../../../src/runtime/reasons.ts';
import { ConfigMaps, Secrets } from '../../../../src/kit/kube/resources.ts';

const ATTACK = 'ATTACKER-TEXT';
const status = (code: number, reason: string) => ({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message: ATTACK });

// Answers by object name (the last path segment); /version with whatever gitVersion is set.
let gitVersion = 'v1.30.1';
let flakyHits = 0;
const routes: Record<string, (res: ServerResponse, req: IncomingMessage) => void> = {
  forbidden: (res) => res.writeHead(403, { 'Content-Type': 'application/json' }).end(JSON.stringify(status(403, 'Forbidden'))),
  boom: (res) => res.writeHead(500, { 'Content-Type': 'application/json' }).end(JSON.stringify(status(500, `Made-Up ${ATTACK}`))),
  html: (res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end(`${ATTACK}<html>`),
  version: (res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ gitVersion })),
  // The server closes the connection under the first two requests (as a restarting server does), then answers.
  flaky: (res) => {
    if (++flakyHits <= 2) res.socket?.destroy();
    else res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"metadata":{"name":"flaky"}}');
  },
  // DELETE: gone at once, or held by finalizers (the object comes back with a deletionTimestamp).
  gone: (res) => res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"metadata":{"name":"gone"}}'),
  held: (res) =>
    res
      .writeHead(200, { 'Content-Type': 'application/json' })
      .end('{"metadata":{"name":"held","deletionTimestamp":"2026-01-01T00:00:00Z"}}'),
  // Answers after a moment: requests pile up.
  slow: (res) => void setTimeout(() => res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"metadata":{"name":"slow"}}'), 50),
  // A redirect to something that would answer: an API server never redirects, so it is not followed.
  moved: (res) => res.writeHead(302, { Location: `http://127.0.0.1:${port}/version` }).end(),
  // Echoes what it was sent: method, content type, query and body.
  patched: (res, req) => {
    let body = '';
    req
      .setEncoding('utf8')
      .on('data', (chunk: string) => {
        body += chunk;
      })
      .on('end', () =>
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(
          JSON.stringify({
            metadata: { name: 'patched' },
            seen: { method: req.method, contentType: req.headers['content-type'], query: req.url?.split('?')[1], body: JSON.parse(body) },
          }),
        ),
      );
  },
  configmaps: (res) =>
    res
      .writeHead(200, { 'Content-Type': 'application/json' })
      .end(JSON.stringify({ type: 'ERROR', object: status(500, 'InternalError') }) + '\n'),
  // Endless answers: 70 MiB of a body; a watch event that never ends its line; a list whose every page says continue.
  huge: (res) => stream(res, 70 * 1024 * 1024, 'x'),
  endless: (res) => stream(res, 20 * 1024 * 1024, '{"type":"ADDED","object":{"metadata":{"name":"'),
  forever: (res) => {
    listPages++;
    res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"items":[],"metadata":{"continue":"more","resourceVersion":"1"}}');
  },
  // A watch that opens, sends one event, then says nothing more (no event, no bookmark).
  secrets: (res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.write(JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'one', resourceVersion: '7' } } }) + '\n');
  },
};

let listPages = 0;

/** Writes `total` bytes of `text`, repeated, heeding backpressure, until done or the client hangs up. */
function stream(res: ServerResponse, total: number, text: string): void {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  const chunk = Buffer.alloc(1024 * 1024, text);
  let sent = 0;
  const more = (): void => {
    while (sent < total && !res.destroyed) {
      sent += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', more);
    }
    if (!res.destroyed) res.end();
  };
  more();
}

let server: Server;
let port: number;
let connections = 0;
let versionHits = 0;
/** Every path asked for. */
const paths: string[] = [];
const clients: KubeClient[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const last = new URL(req.url ?? '/', 'http://x').pathname.split('/').pop() ?? '';
    paths.push(req.url ?? '');
    if (last === 'version') versionHits++;
    (routes[last] ?? ((r) => r.writeHead(404).end()))(res, req);
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await new Promise((resolve) => server.close(resolve));
});

function client(opts: Partial<ClientOptions> = {}, at = port, user: Omit<ClusterAccess, 'server'> = { token: 't' }): KubeClient {
  const c = new KubeClient(
    { server: `http://127.0.0.1:${at}`, skipTLSVerify: true, ...user },
    { fieldManager: 'test', timeoutMs: 10_000, ...opts },
  );
  clients.push(c);
  return c;
}

const untrusted = () => client({ trusted: false, name: 'the target cluster' });

/** A kubeconfig user whose credentials come from an exec plugin: Node running `script`. */
const execUser = (script: string) => ({
  exec: { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: ['-e', script] },
});

async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

describe('KubeClient with an untrusted server', () => {
  it('keeps the code and a known reason of a Status, not its message', async () => {
    const err = await failure(untrusted().get(ConfigMaps, { namespace: 'ns', name: 'forbidden' }));
    expect(err).toBeInstanceOf(KubeError);
    expect(err).toMatchObject({ code: 403, reason: 'Forbidden' });
    expect(err.message).not.toContain(ATTACK);
    expect(err.message).toMatch(/GET \/api\/v1\/namespaces\/ns\/configmaps\/forbidden: the target cluster answered HTTP 403/);
  });

  it('names a request path in an error cut short: a name read from its own objects cannot swell a status', async () => {
    const name = `${ATTACK}-${'x'.repeat(5000)}`;
    const err = await failure(untrusted().mergePatch(ConfigMaps, { namespace: 'ns', name }, {}));
    expect(err.message.length).toBeLessThan(300);
    expect(err.message).toMatch(/^PATCH \/api\/v1\/namespaces\/ns\/configmaps\/ATTACKER-TEXT-x+…: the target cluster answered HTTP 404$/);
  });

  it('drops a reason Kubernetes does not know', async () => {
    const err = await failure(untrusted().get(ConfigMaps, { namespace: 'ns', name: 'boom' }));
    expect(err).toMatchObject({ code: 500, reason: 'Unknown' });
    expect(err.message).not.toContain(ATTACK);
    expect(err.message).not.toContain('Made-Up');
  });

  it('refuses a body that is not JSON in its own words', async () => {
    const err = await failure(untrusted().get(ConfigMaps, { namespace: 'ns', name: 'html' }));
    expect(err).toBeInstanceOf(KubeError);
    expect(err.message).toMatch(/answered with something other than JSON/);
    expect(err.message).not.toContain(ATTACK);
  });

  it('returns only a version that looks like a Kubernetes version', async () => {
    const c = untrusted();
    gitVersion = `v1.2.3 ${ATTACK}`;
    const err = await failure(c.serverVersion());
    expect(err).toBeInstanceOf(KubeError);
    expect(err.message).toMatch(/did not report a Kubernetes version/);
    expect(err.message).not.toContain(ATTACK);
    gitVersion = 'v1.30.1';
    await expect(c.serverVersion()).resolves.toBe('v1.30.1');
  });

  it('names an unreachable server only by its name and the error code', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const err = await failure(
      client({ trusted: false, name: 'the target cluster' }, closedPort).get(ConfigMaps, { namespace: 'ns', name: 'x' }),
    );
    expect(err).toBeInstanceOf(UnreachableError);
    expect(err.message).toBe('cannot reach the target cluster (ECONNREFUSED)');
    expect(err.message).not.toContain('127.0.0.1');
    expect(err.message).not.toContain(String(closedPort));
  });

  it("does not turn a server away for a request its caller ended (a reconcile's deadline): the next one is sent", async () => {
    const c = client({ isolate: true, trusted: false, name: 'the target cluster' });
    const ended = new AbortController();
    ended.abort(new DOMException('deadline', 'TimeoutError'));
    await expect(c.get(ConfigMaps, { namespace: 'ns', name: 'slow' }, ended.signal)).rejects.toBeInstanceOf(UnreachableError);
    // Ended while the server had not answered yet, too.
    const midway = new AbortController();
    const pending = c.get(ConfigMaps, { namespace: 'ns', name: 'slow' }, midway.signal);
    midway.abort(new DOMException('deadline', 'TimeoutError'));
    await expect(pending).rejects.toBeInstanceOf(UnreachableError);
    const before = paths.length;
    await expect(c.get(ConfigMaps, { namespace: 'ns', name: 'slow' })).resolves.toMatchObject({ metadata: { name: 'slow' } });
    expect(paths.length).toBe(before + 1);
  });

  it('ends a watch on an ERROR event without its message', async () => {
    const err = await failure(
      untrusted().watch(ConfigMaps, { namespace: 'ns', resourceVersion: '1', signal: new AbortController().signal }, () => {}),
    );
    expect(err).toBeInstanceOf(KubeError);
    expect(err).toMatchObject({ code: 500, reason: 'InternalError' });
    expect(err.message).not.toContain(ATTACK);
  });
});

describe('KubeClient against a server that never stops sending', () => {
  const type = (plural: string) => ({ apiVersion: 'v1', kind: 'Thing', plural, namespaced: true });

  it('reads no more than 64 MiB of an answer', async () => {
    const err = await failure(untrusted().get(ConfigMaps, { namespace: 'ns', name: 'huge' }));
    expect(err).toBeInstanceOf(KubeError);
    expect(err.message).toBe('GET /api/v1/namespaces/ns/configmaps/huge: the target cluster answered more than 64 MiB; not read further');
  });

  it('reads no more than 16 Mi characters of one watch event', async () => {
    const err = await failure(
      untrusted().watch(type('endless'), { namespace: 'ns', resourceVersion: '1', signal: new AbortController().signal }, () => {}),
    );
    expect(err).toBeInstanceOf(KubeError);
    expect(err.message).toBe(
      'WATCH /api/v1/namespaces/ns/endless: the target cluster answered more than 16 Mi characters in one event; not read further',
    );
  });

  it('follows no more than 400 pages of a list', async () => {
    listPages = 0;
    const err = await failure(untrusted().list(type('forever'), { namespace: 'ns' }));
    expect(err.message).toBe('LIST /api/v1/namespaces/ns/forever: the target cluster answered more than 200000 objects; not read further');
    expect(listPages).toBe(400);
  });
});

describe('KubeClient with the trusted control cluster', () => {
  it('still carries the API server message of a Status', async () => {
    const err = await failure(client().get(ConfigMaps, { namespace: 'ns', name: 'forbidden' }));
    expect(err).toMatchObject({ code: 403, reason: 'Forbidden', message: ATTACK });
  });

  it('refuses a body that is not JSON in its own words too', async () => {
    const err = await failure(client().get(ConfigMaps, { namespace: 'ns', name: 'html' }));
    expect(err.message).toMatch(/answered with something other than JSON/);
    expect(err.message).not.toContain(ATTACK);
  });
});

describe('KubeClient credentials', () => {
  it('does not pass on what a failing exec plugin wrote', async () => {
    const user = execUser("process.stderr.write('SECRET-TOKEN'); process.exit(1)");
    for (const trusted of [true, false]) {
      const err = await failure(
        client({ trusted, name: 'the target cluster' }, port, user).get(ConfigMaps, { namespace: 'ns', name: 'x' }),
      );
      expect(err).toBeInstanceOf(CredentialPluginError);
      expect(reasonOf(err)).toBe('CredentialPluginFailed');
      expect(err.message).toBe(
        'the credential plugin of the target cluster failed; its output is not shown because it may contain secrets',
      );
      expect(err.message).not.toContain('SECRET-TOKEN');
    }
  });
});

describe('KubeClient credential refreshes', () => {
  it("ends a request at its caller's signal while a credential plugin hangs (a Lease renewal due within its deadline)", async () => {
    // Answers after 3 s: an identity provider that is slow to answer.
    const user = execUser(
      `setTimeout(() => process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: 't' } })), 3000)`,
    );
    const c = client({}, port, user);
    const started = performance.now();
    const err = await failure(c.get(ConfigMaps, { namespace: 'ns', name: 'gone' }, AbortSignal.timeout(200)));
    expect(err).toBeInstanceOf(UnreachableError);
    expect(performance.now() - started).toBeLessThan(2_000);
    // The plugin's run goes on for the next request, which gets its answer.
    await expect(c.get(ConfigMaps, { namespace: 'ns', name: 'gone' })).resolves.toMatchObject({ metadata: { name: 'gone' } });
  });

  it('leaves no unhandled rejection behind when a plugin its caller gave up on fails later (which would end the process)', async () => {
    const user = execUser('setTimeout(() => process.exit(1), 300)');
    const rejections: unknown[] = [];
    const onRejection = (err: unknown) => void rejections.push(err);
    process.on('unhandledRejection', onRejection);
    try {
      const c = client({}, port, user);
      const given = new AbortController();
      given.abort(new DOMException('deadline', 'TimeoutError'));
      expect(await failure(c.get(ConfigMaps, { namespace: 'ns', name: 'gone' }, given.signal))).toBeInstanceOf(UnreachableError);
      // The next request waits for the same run, and learns of its failure.
      expect(await failure(c.get(ConfigMaps, { namespace: 'ns', name: 'gone' }))).toBeInstanceOf(CredentialPluginError);
      await new Promise((resolve) => setImmediate(resolve));
      expect(rejections).toEqual([]);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });

  it('runs the exec plugin once for a burst of requests, and once only when its expiry does not parse', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'exec-'));
    const runs = path.join(dir, 'runs');
    const user = execUser(
      `require('fs').appendFileSync(${JSON.stringify(runs)}, 'x'); process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: 't', expirationTimestamp: 'not a time' } }))`,
    );
    const c = client({}, port, user);
    await Promise.all(Array.from({ length: 8 }, () => c.get(ConfigMaps, { namespace: 'ns', name: 'gone' })));
    for (let i = 0; i < 3; i++) await c.get(ConfigMaps, { namespace: 'ns', name: 'gone' });
    expect(readFileSync(runs, 'utf8')).toBe('x');
  });
});

describe('KubeClient connections', () => {
  it('keeps one connection for requests one after another', async () => {
    const c = client();
    const before = connections;
    for (let i = 0; i < 5; i++) await c.serverVersion();
    expect(connections - before).toBe(1);
  });

  it('opens a bounded number of connections for a burst of requests, and answers them all', async () => {
    const c = client();
    const before = connections;
    const answers = await Promise.all(Array.from({ length: 100 }, () => c.get(ConfigMaps, { namespace: 'ns', name: 'slow' })));
    expect(answers.every((a) => a?.metadata.name === 'slow')).toBe(true);
    expect(connections - before).toBeLessThanOrEqual(32);
    expect(connections - before).toBeGreaterThan(1);
  });

  it('does not follow a redirect', async () => {
    const hits = versionHits;
    const err = await failure(client().get(ConfigMaps, { namespace: 'ns', name: 'moved' }));
    expect(err).toBeInstanceOf(KubeError);
    expect(err).toMatchObject({ code: 302 });
    expect(versionHits).toBe(hits);
  });
});

describe('KubeClient connections closed under a request', () => {
  it('sends a read again on a fresh connection, up to three times', async () => {
    flakyHits = 0;
    await expect(client().get(ConfigMaps, { namespace: 'ns', name: 'flaky' })).resolves.toMatchObject({ metadata: { name: 'flaky' } });
    expect(flakyHits).toBe(3);
  });

  it('never sends a write twice', async () => {
    flakyHits = 0;
    await expect(client().request('POST', '/api/v1/namespaces/ns/configmaps/flaky', { body: {} })).rejects.toBeInstanceOf(UnreachableError);
    expect(flakyHits).toBe(1);
  });
});

describe('KubeClient deadlines', () => {
  it('ends a request to a server that accepts the connection but never answers (not even the TLS handshake) at its deadline', async () => {
    const sockets: Socket[] = [];
    const silent = createNetServer((socket) => {
      sockets.push(socket);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const c = new KubeClient(
        { server: `https://127.0.0.1:${(silent.address() as AddressInfo).port}`, skipTLSVerify: true, token: 't' },
        { fieldManager: 'test', timeoutMs: 500, trusted: false, name: 'the target cluster' },
      );
      clients.push(c);
      const started = performance.now();
      const err = await failure(c.get(ConfigMaps, { namespace: 'default', name: 'x' }));
      expect(performance.now() - started).toBeLessThan(3_000);
      expect(err).toBeInstanceOf(UnreachableError);
      expect(err.message).toBe('request to the target cluster timed out');
      expect(sockets.length).toBeGreaterThan(0); // it did connect: the handshake is what hung
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('ends a watch that has seen neither an event nor a bookmark within its bound', async () => {
    const events: string[] = [];
    const started = performance.now();
    const err = await failure(
      client({ watchIdleMs: 400 }).watch(
        Secrets,
        { namespace: 'default', resourceVersion: '1', signal: new AbortController().signal },
        (type, obj) => events.push(`${type} ${obj.metadata.name}`),
      ),
    );
    expect(events).toEqual(['ADDED one']);
    expect(err).toBeInstanceOf(WatchStalledError);
    expect(err.message).toMatch(/^the watch of secrets on http:\/\/127\.0\.0\.1:\d+ saw neither an event nor a bookmark for 0\.4 s$/);
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

describe('delete', () => {
  it('says whether the object is gone, held by finalizers (a deletionTimestamp) or was not there (404)', async () => {
    const c = client();
    expect(await c.delete(Secrets, { namespace: 'ns', name: 'gone' }, { uid: 'u', resourceVersion: '5' })).toBe('deleted');
    expect(await c.delete(Secrets, { namespace: 'ns', name: 'held' })).toBe('pending');
    expect(await c.delete(Secrets, { namespace: 'ns', name: 'missing' })).toBe('absent');
  });
});

describe('jsonPatch', () => {
  it('sends RFC 6902 operations as application/json-patch+json, with our field manager', async () => {
    const operations = [
      { op: 'test', path: '/metadata/finalizers/0', value: 'f' },
      { op: 'remove', path: '/metadata/finalizers/0' },
    ];
    const answer = await client().jsonPatch<KubeObjectLike & { seen?: unknown }>(Secrets, { namespace: 'ns', name: 'patched' }, operations);
    expect(answer.seen).toEqual({
      method: 'PATCH',
      contentType: 'application/json-patch+json',
      query: 'fieldManager=test',
      body: operations,
    });
  });
});

describe('ObjectKey', () => {
  it('is "namespace/name", or "name" when cluster-scoped, both ways', () => {
    expect(formatObjectKey(objectKeyOf({ metadata: { namespace: 'ns', name: 'a' } }))).toBe('ns/a');
    expect(formatObjectKey(objectKeyOf({ metadata: { name: 'a' } }))).toBe('a');
    expect(parseObjectKey('ns/a')).toEqual({ namespace: 'ns', name: 'a' });
    expect(parseObjectKey('a')).toEqual({ name: 'a' });
  });
});
