// Equality of JSON values by content alone: key order and the realm objects were made in do not
// matter (util.isDeepStrictEqual compares prototypes, which differ across vm contexts).
import { byText } from './order.ts';

export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => byText(a, b)))
      : v,
  );
}

export function sameJson(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

/** Fields of `want` that `have` lacks or holds differently (have may carry more). */
export function diffFields(want: unknown, have: unknown, path = ''): string[] {
  if (want !== null && typeof want === 'object' && !Array.isArray(want)) {
    if (have === null || typeof have !== 'object' || Array.isArray(have)) return [path || '.'];
    return Object.entries(want).flatMap(([k, v]) =>
      v === undefined ? [] : diffFields(v, (have as Record<string, unknown>)[k], `${path}.${k}`),
    );
  }
  if (Array.isArray(want)) {
    if (!Array.isArray(have) || have.length !== want.length) return [path];
    return want.flatMap((v, i) => diffFields(v, have[i], `${path}[${i}]`));
  }
  return sameJson(want, have) ? [] : [path];
}

/** The parts of a Kubernetes object that drift is judged on: all but what the server says of it. */
interface ObjectLike {
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
}

/**
 * Where `have` differs from `want`, two Kubernetes objects: the fields of want's body (all but
 * apiVersion, kind, metadata and status) and its labels and annotations that have lacks or holds
 * differently (have may carry more, as servers and other writers add).
 */
export function objectDrift(want: ObjectLike, have: ObjectLike): string[] {
  const { apiVersion: _wa, kind: _wk, metadata: w, status: _ws, ...wantBody } = want as ObjectLike & Record<string, unknown>;
  const { apiVersion: _ha, kind: _hk, metadata: h, status: _hs, ...haveBody } = have as ObjectLike & Record<string, unknown>;
  const marks = (m: ObjectLike['metadata']) => ({ labels: m.labels ?? {}, annotations: m.annotations ?? {} });
  return [...diffFields(wantBody, haveBody), ...diffFields(marks(w), marks(h)).map((p) => `.metadata${p}`)];
}

/** A copy without null or undefined object members ("key:" with no value in YAML means nothing). */
export function withoutNulls<T>(value: T): T {
  if (Array.isArray(value)) return value.map(withoutNulls) as T;
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => v !== null && v !== undefined)
      .map(([k, v]) => [k, withoutNulls(v)]),
  ) as T;
}
