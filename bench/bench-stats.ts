/** Small statistics the benchmarks share. */

/** The p-th percentile (nearest rank) of `values`; null when there are none. */
export function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Least-squares slope of y over x (0 with fewer than two points or no spread in x). */
export function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  if (n < 2) return 0;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  const sxy = xs.reduce((a, x, k) => a + (x - mx) * (ys[k] - my), 0);
  const sxx = xs.reduce((a, x) => a + (x - mx) ** 2, 0);
  return sxx === 0 ? 0 : sxy / sxx;
}
