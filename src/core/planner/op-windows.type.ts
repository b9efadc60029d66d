/** Per op, index (stage * 3 + kind) * N + microbatch: earliest start and latest completion, ms. */
export interface OpWindows {
  est: Float64Array;
  lct: Float64Array;
}
