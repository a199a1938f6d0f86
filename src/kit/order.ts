// Orderings by UTF-16 code unit, never by locale. String.prototype.localeCompare loads ICU's collation
// data: 3 MiB of an idle process's memory. Kubernetes names (lowercase letters, digits, '-', '.') sort
// alike either way.

/** Text in code-unit order, for Array.prototype.sort. */
export const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Versions as people read them, numbers by value: v7.1.9 before v7.1.10. */
export function byVersion(a: string, b: string): number {
  const [as, bs] = [a.match(/\d+|\D+/g) ?? [], b.match(/\d+|\D+/g) ?? []];
  for (let i = 0; i < Math.min(as.length, bs.length); i++) {
    const [x, y] = [as[i]!, bs[i]!];
    const order = /^\d/.test(x) && /^\d/.test(y) ? Number(x) - Number(y) || byText(x, y) : byText(x, y);
    if (order) return Math.sign(order);
  }
  return Math.sign(as.length - bs.length);
}
