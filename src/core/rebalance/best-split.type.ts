import { SplitPrice } from './split-price.type';

/** What bestSplit found. */
export interface BestSplit {
  /** The split of least objective (priceSplit's objectiveMs). */
  best: SplitPrice;
  /** Every distinct split the scan produced, best first: the ones worth pricing with the planner. */
  candidates: SplitPrice[];
  /** True when the scan ran to its bound: `best` is optimal for priceSplit's objective. */
  exact: boolean;
  /** Dynamic programmes run (one per bottleneck value tried, plus two). */
  evaluations: number;
}
