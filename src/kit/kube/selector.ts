// Kubernetes label selectors (metav1.LabelSelector): matching, the AND of two, and a short text for
// messages. A selector with nothing in it matches everything, as in Kubernetes.

export interface SelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: SelectorRequirement[];
}

/** A selector as matching reads it: a cached, read-only one will do. */
interface SelectorView {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly Readonly<Omit<SelectorRequirement, 'values'> & { values?: readonly string[] }>[];
}

export function matchesSelector(selector: SelectorView, labels: Readonly<Record<string, string>> = {}): boolean {
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (labels[key] !== value) return false;
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, key);
    const ok =
      operator === 'In'
        ? has && values.includes(labels[key]!)
        : operator === 'NotIn'
          ? !has || !values.includes(labels[key]!)
          : operator === 'Exists'
            ? has
            : !has;
    if (!ok) return false;
  }
  return true;
}

/**
 * A selector matching what both match. A key both pin to different values stays pinned twice (as
 * an In requirement beside the label), so the result matches nothing rather than either one.
 */
export function bothSelectors(a: LabelSelector, b: LabelSelector | undefined): LabelSelector {
  if (!b) return a;
  const matchLabels = { ...a.matchLabels };
  const matchExpressions = [...(a.matchExpressions ?? []), ...(b.matchExpressions ?? [])];
  for (const [key, value] of Object.entries(b.matchLabels ?? {})) {
    if (matchLabels[key] === undefined) matchLabels[key] = value;
    else if (matchLabels[key] !== value) matchExpressions.push({ key, operator: 'In', values: [value] });
  }
  return {
    ...(Object.keys(matchLabels).length ? { matchLabels } : {}),
    ...(matchExpressions.length ? { matchExpressions } : {}),
  };
}

/** "region=eu, tier in (gold,silver), !legacy": what kubectl's -l would take. */
export function describeSelector(selector: LabelSelector): string {
  const parts = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    parts.push(
      operator === 'In'
        ? `${key} in (${values.join(',')})`
        : operator === 'NotIn'
          ? `${key} notin (${values.join(',')})`
          : operator === 'Exists'
            ? key
            : `!${key}`,
    );
  }
  return parts.join(', ') || 'everything';
}
