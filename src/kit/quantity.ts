// A resource.Quantity's value in bytes, for the forms sizes take (Kubernetes' binary and decimal
// suffixes, e.g. "10Gi", "2G", "500M", "1024"); undefined for anything else.
const SUFFIX: Record<string, number> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

export function quantityBytes(quantity: string): number | undefined {
  const m = /^([0-9]+(?:\.[0-9]+)?)([kMGTPE]i?|Ki)?$/.exec(quantity.trim());
  const unit = SUFFIX[m?.[2] ?? ''];
  return m && unit !== undefined ? Number(m[1]) * unit : undefined;
}
