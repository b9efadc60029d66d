/** Hoare partition select: after the call values[k] holds the k-th smallest of values[0, count) and smaller ones lie before it. */
function selectInPlace(values: Float64Array, count: number, k: number): void {
  let lo = 0;
  let hi = count - 1;
  while (lo < hi) {
    // Median of three as pivot: sorted or constant inputs (many healthy links alike) stay linear.
    const mid = (lo + hi) >> 1;
    const a = values[lo];
    const b = values[mid];
    const c = values[hi];
    const pivot = a < b ? (b < c ? b : a < c ? c : a) : a < c ? a : b < c ? c : b;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (values[i] < pivot) i++;
      while (values[j] > pivot) j--;
      if (i <= j) {
        const t = values[i];
        values[i] = values[j];
        values[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return;
  }
}

/**
 * Median of values[0, count) in expected O(count), reordering them; mean of the two middle
 * values when count is even, NaN when count is 0. Values must not be NaN.
 */
export function medianInPlace(values: Float64Array, count: number): number {
  if (count <= 0) return Number.NaN;
  const k = count >> 1;
  selectInPlace(values, count, k);
  const upper = values[k];
  if (count & 1) return upper;
  // values[0, k) are all <= values[k]: the lower middle is their maximum.
  let lower = values[0];
  for (let i = 1; i < k; i++) if (values[i] > lower) lower = values[i];
  return (lower + upper) / 2;
}
