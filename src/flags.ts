// The process's flags: each with its default and how to read it. Written out rather than in zod,
// which the running process does not load (zod defines our APIs; see hack/gen.ts).

import { LOG_LEVELS } from './kit/logger.ts';

/** Reads a flag's text, or throws what to write instead. */
type Read<T> = (text: string) => T;

const UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
const duration: Read<number> = (text) => {
  const m = /^(\d+)(ms|s|m|h)$/.exec(text);
  if (!m) throw new Error('use a duration like 30s, 1m or 1h');
  return Number(m[1]) * UNITS[m[2] as keyof typeof UNITS];
};
const oneOf =
  <T extends string>(...values: T[]): Read<T> =>
  (text) => {
    if (!values.includes(text as T)) throw new Error(`use one of ${values.join(', ')}`);
    return text as T;
  };
const bool: Read<boolean> = (text) => oneOf('true', 'false')(text) === 'true';
const listOf =
  <T extends string>(...values: T[]): Read<T[]> =>
  (text) => {
    const items = text ? text.split(',') : [];
    if (items.some((i) => !values.includes(i as T))) throw new Error(`use a comma-separated list of ${values.join(', ')}, or nothing`);
    return items as T[];
  };
const number =
  (min: number, max = Infinity, whole = false): Read<number> =>
  (text) => {
    const n = Number(text);
    if (text.trim() === '' || !Number.isFinite(n) || n < min || n > max || (whole && !Number.isInteger(n))) {
      throw new Error(`use a${whole ? ' whole' : ''} number ${max === Infinity ? `of at least ${min}` : `from ${min} to ${max}`}`);
    }
    return n;
  };
const matching =
  (pattern: RegExp, hint: string): Read<string> =>
  (text) => {
    if (!pattern.test(text)) throw new Error(hint);
    return text;
  };
const text: Read<string> = (t) => t;

interface Flag<T, D extends string | undefined = string | undefined> {
  read: Read<T>;
  default: D;
}
function flag<T>(read: Read<T>): Flag<T, undefined>;
function flag<T>(read: Read<T>, fallback: string): Flag<T, string>;
function flag<T>(read: Read<T>, fallback?: string): Flag<T> {
  return { read, default: fallback };
}

export const FLAGS = {
  kubeconfig: flag(text),
  'control-plane-id': flag(text),
  'ownership-key-secret': flag(
    matching(/^([a-z0-9]([-a-z0-9]*[a-z0-9])?\/)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'use NAME or NAMESPACE/NAME of a Secret'),
    'provider-rook-ownership-key',
  ),
  namespace: flag(matching(/^[a-z0-9-]+(,[a-z0-9-]+)*$/, 'use one namespace or a comma-separated list')),
  poll: flag(duration, '10m'),
  'leak-interval': flag(duration, '5m'),
  'leak-mode': flag(oneOf('delete', 'report'), 'delete'),
  'leak-grace': flag(duration, '5m'),
  'waiting-after': flag(duration, '5m'),
  'allow-exec-credentials': flag(bool, 'false'),
  'allow-plain-http': flag(bool, 'false'),
  'refuse-endpoint-ranges': flag(listOf('loopback', 'private'), ''),
  workers: flag(number(1, 64, true), '8'),
  'max-reconcile-rate': flag(number(1), '50'),
  'metrics-addr': flag(text, ':8080'),
  'log-level': flag(oneOf(...LOG_LEVELS), 'info'),
  'leader-elect': flag(bool, 'false'),
  'leader-election-namespace': flag(text),
  'leader-election-id': flag(text, 'provider-rook'),
  'leader-election-lease-duration': flag(duration, '15s'),
  'leader-election-renew-deadline': flag(duration, '10s'),
  'leader-election-retry-period': flag(duration, '2s'),
};

type Flags = typeof FLAGS;
/** A flag with a default always has a value. */
export type Options = { [K in keyof Flags]: Flags[K] extends Flag<infer T, infer D> ? (D extends string ? T : T | undefined) : never };

/** The flags' values (a missing one takes its default), or an error naming every bad flag. */
export function parseFlags(given: Record<string, string | undefined>): Options {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, f] of Object.entries(FLAGS) as [string, Flag<unknown>][]) {
    const value = given[name] ?? f.default;
    if (value === undefined) continue;
    try {
      out[name] = f.read(value);
    } catch (err) {
      problems.push(`--${name}: ${(err as Error).message}`);
    }
  }
  // A leader that cannot renew steps down before its lease can pass to anyone else: two never lead at once.
  const [lease, renew, retry] = ['lease-duration', 'renew-deadline', 'retry-period'].map((f) => out[`leader-election-${f}`] as number);
  if (renew !== undefined && lease !== undefined && renew >= lease)
    problems.push('--leader-election-renew-deadline: use a duration shorter than --leader-election-lease-duration');
  if (retry !== undefined && renew !== undefined && retry >= renew)
    problems.push('--leader-election-retry-period: use a duration shorter than --leader-election-renew-deadline');
  if (problems.length) throw new Error(problems.join('; '));
  return out as Options;
}
