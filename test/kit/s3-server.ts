// A real S3 server on this machine: SeaweedFS's `weed mini` (Apache-2.0), with the AWS IAM API on
// its S3 port, so per-user policies are made and enforced as on AWS. It binds to 127.0.0.1 only,
// every listener on a port we chose (or off), and its telemetry is off: nothing leaves this machine.
// One server, measured here (2 cores): about 120 MiB of RSS idle, 125 MiB after round trips in five
// buckets; it answers 4.3 s after it starts (3.2 s of it the filer's own start) and stops in 0.5 s.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { ensureWeed } from './binaries.ts';
import { stablePort } from './cluster.ts';

export interface S3Credentials {
  accessKey: string;
  secretKey: string;
}

export interface S3Server {
  /** http://127.0.0.1:PORT: S3 and IAM. */
  endpoint: string;
  pid: number;
  /** Runs `weed shell` commands against it (what only the shell does, such as bucket quotas); their output. */
  shell(commands: string[]): Promise<string>;
  /** Kills the server; its folder (the caller's) stays. */
  stop(): Promise<void>;
}

export interface S3ServerOptions {
  /** Where the server keeps its data, config and log (weed.log); the caller owns it. */
  dir: string;
  /** An admin identity the server starts with, that can make buckets and IAM users (none: only `identities`). */
  root?: S3Credentials;
  /** More identities it starts with, as a `-s3.config` file holds them (a Seaweed's spec.s3.configSecret). */
  identities?: unknown[];
  log?: (line: string) => void;
}

const START_TIMEOUT_MS = 60_000;
/**
 * A master that sees a volume server report another topology id than its own freezes volume
 * growth for good ("volume growth is frozen after master state loss"): every PUT into a new bucket
 * then fails with InternalError after the filer's 30 s. It guards a cluster whose master lost its
 * state against reusing volume ids; a test server lives in a fresh folder and goes with it, and the
 * clean-clone CI saw its master freeze all the same, under load. Both guards are off here.
 */
const GROWTH = {
  WEED_MASTER_VOLUME_GROWTH_FREEZE_ON_TOPOLOGY_MISMATCH: 'false',
  WEED_MASTER_VOLUME_GROWTH_ALLOCATION_DEFERRAL: '0s',
};
const running = new Set<ChildProcess>();
/** Each running server's folder (its logs), by its endpoint: what a failed request's message quotes. */
const logs = new Map<string, string>();
// A test process that ends without stopping its servers must not leave them behind.
process.once('exit', () => running.forEach((child) => child.kill('SIGKILL')));

export async function startS3Server({ dir, root, identities = [], log = () => {} }: S3ServerOptions): Promise<S3Server> {
  const weed = await ensureWeed(log);
  mkdirSync(dir, { recursive: true });
  const admin = root ? [{ name: 'root', credentials: [root], actions: ['Admin', 'Read', 'Write', 'List', 'Tagging'] }] : [];
  // With no identity at all, no -s3.config: SeaweedFS then runs with authentication off.
  const all = [...admin, ...identities];
  const config = all.length ? path.join(dir, 's3.json') : undefined;
  if (config) writeFileSync(config, JSON.stringify({ identities: all }), { mode: 0o600 });
  // A port another process took between our choosing and weed's binding (or its own check of the
  // port, "Port allocation failed") fails the start: choose again.
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(weed, dir, config, log);
    } catch (err) {
      if (attempt === 3 || !/address already in use|Port allocation failed/.test(String(err))) throw err;
    }
  }
}

async function start(weed: string, dir: string, config: string | undefined, log: (line: string) => void): Promise<S3Server> {
  // Below the kernel's ephemeral range: one from it may be taken by any outgoing connection before
  // weed binds it, and its admin binds after the S3 port answers; one it fails to bind ends it.
  const port: Record<string, number> = {};
  const taken = new Set<number>();
  for (const name of ['master', 'masterGrpc', 'volume', 'volumeGrpc', 'filer', 'filerGrpc', 's3', 's3Grpc', 'admin', 'adminGrpc'])
    taken.add((port[name] = await stablePort(taken)));
  const args = [
    // Its info log (what growing a bucket's volume did) in its folder, not in the machine's tmp.
    `-logdir=${dir}`,
    'mini',
    `-dir=${dir}`,
    '-ip=127.0.0.1',
    '-ip.bind=127.0.0.1',
    '-master.telemetry=false', // on by default, reporting to a public address
    `-master.port=${port.master}`,
    `-master.port.grpc=${port.masterGrpc}`,
    `-volume.port=${port.volume}`,
    `-volume.port.grpc=${port.volumeGrpc}`,
    '-volume.preStopSeconds=0',
    // Every bucket is a collection with volumes of its own: the default maximum (from free disk
    // space) runs out after about 60 buckets ("no free volumes left"). Volumes are sparse files.
    '-volume.max=2000',
    '-master.volumeSizeLimitMB=64',
    `-filer.port=${port.filer}`,
    `-filer.port.grpc=${port.filerGrpc}`,
    `-filer.localSocket=${path.join(dir, 'filer.sock')}`,
    `-s3.port=${port.s3}`,
    `-s3.port.grpc=${port.s3Grpc}`,
    `-s3.localSocket=${path.join(dir, 's3.sock')}`,
    '-s3.port.iceberg=0',
    '-s3.port.lance=0',
    ...(config ? [`-s3.config=${config}`] : []),
    '-s3.iam.readOnly=false', // serves CreateUser, PutUserPolicy, ... on the S3 port
    '-s3.autoCreateBucket=false', // as S3 and MinIO: a PUT into a missing bucket is NoSuchBucket
    '-admin.ui=false',
    `-admin.port=${port.admin}`,
    `-admin.port.grpc=${port.adminGrpc}`,
    '-admin.port.legacy=0',
    '-webdav=false',
  ];
  const logFile = path.join(dir, 'weed.log');
  const fd = openSync(logFile, 'a');
  const child = spawn(weed, args, { stdio: ['ignore', fd, fd], env: { ...process.env, ...GROWTH } });
  closeSync(fd);
  running.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => running.delete(child));
  const endpoint = `http://127.0.0.1:${port.s3}`;
  logs.set(endpoint, dir);
  void exited.then(() => logs.delete(endpoint));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited.finally(() => clearTimeout(timer));
  };
  const started = Date.now();
  try {
    await ready(endpoint, `http://127.0.0.1:${port.master}`, () => child.exitCode !== null || child.signalCode !== null);
  } catch (err) {
    await stop();
    const lines = existsSync(logFile) ? readFileSync(logFile, 'utf8').trimEnd().split('\n') : [];
    // A fatal error's stack trace fills the last lines: its own line, above them, says why (a port taken).
    const fatal = lines.find((l) => /^F\d{4} /.test(l));
    const tail = lines.slice(-15).join('\n');
    throw new Error(
      `the S3 server in ${dir} did not start: ${(err as Error).message}${fatal ? `; ${fatal}` : ''}; last log lines:\n${tail}`,
      {
        cause: err,
      },
    );
  }
  log(`S3 server ${endpoint} (pid ${child.pid}) ready in ${Date.now() - started} ms`);
  const shell = (commands: string[]): Promise<string> => runShell(weed, port, commands);
  return { endpoint, pid: child.pid!, shell, stop };
}

/**
 * The last warnings and errors the server at endpoint logged (SeaweedFS's W and E lines), for the
 * message of a request it failed with a 5xx: the only trace of why, once its folder is gone.
 */
export function serverComplaints(endpoint: string, count = 12): string {
  const dir = logs.get(endpoint);
  if (!dir) return '';
  const read = (name: string): string[] => (existsSync(path.join(dir, name)) ? readFileSync(path.join(dir, name), 'utf8').split('\n') : []);
  // The info log says what growing a volume did (a failed growth is only an info line).
  const growth = read('weed.INFO').filter((l) => /^I\d{4} .*(grow|assign|allocat)/i.test(l));
  // By their time stamps (MMDD hh:mm:ss.micros after the level letter).
  const lines = [...growth, ...read('weed.log').filter((l) => /^[EWF]\d{4} /.test(l))].sort((a, b) =>
    a.slice(1, 21).localeCompare(b.slice(1, 21)),
  );
  return lines.length ? `; the server's last complaints:\n${lines.slice(-count).join('\n')}` : '';
}

/**
 * Until the S3 port answers a request as S3 does (an anonymous one is refused with 403, or served
 * without authentication), and its master knows a volume server with room. The S3 port answers
 * before the volume server has told the master of itself; on a loaded machine a first PUT could
 * come in between, and find nowhere to write.
 */
async function ready(endpoint: string, master: string, exited: () => boolean): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (let delay = 50; Date.now() < deadline; delay = Math.min(delay * 2, 500)) {
    if (exited()) throw new Error('it exited');
    if ([200, 403].includes((await get(`${endpoint}/`).catch(() => undefined))?.status ?? 0) && (await writable(master))) return;
    await new Promise((r) => setTimeout(r, delay));
  }
  throw new Error(`not ready after ${START_TIMEOUT_MS / 1000} s`);
}

/** Whether the master's topology has an id and a volume server with free volume slots. */
async function writable(master: string): Promise<boolean> {
  const answer = await get(`${master}/dir/status`).catch(() => undefined);
  if (answer?.status !== 200) return false;
  const { Topology, TopologyId } = JSON.parse(answer.body) as { Topology?: { Free?: number }; TopologyId?: string };
  return Boolean(TopologyId) && (Topology?.Free ?? 0) > 0;
}

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: 2_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

const SHELL_TIMEOUT_MS = 30_000;

/** `weed shell` on the server's master and filer, its commands on stdin; rejects on a failure it reports. */
function runShell(weed: string, port: Record<string, number>, commands: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    // Our ports are not SeaweedFS's defaults, so each address names its gRPC port too (host:port.grpcPort).
    const args = ['shell', `-master=127.0.0.1:${port.master}.${port.masterGrpc}`, `-filer=127.0.0.1:${port.filer}.${port.filerGrpc}`];
    const child = spawn(weed, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), SHELL_TIMEOUT_MS);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0 && !/^error:|\berror\b.*:/im.test(out)) resolve(out);
      else reject(new Error(`weed shell ${commands.join('; ')} failed (exit ${code}): ${out.trim().slice(-500)}`));
    });
    child.stdin.end(`${commands.join('\n')}\nexit\n`);
  });
}
