import { priceSplit } from './price-split.util';
import { RebalanceProblem } from './rebalance-problem.type';
import { SplitPrice } from './split-price.type';

/**
 * The fitting split of least objective by enumerating every split (C(layers - 1, stages - 1) of
 * them): the reference bestSplit is checked against, for small jobs only. Null when none fits.
 */
export function bruteForceSplit(problem: RebalanceProblem): SplitPrice | null {
  const L = problem.layers.fMs.length;
  const S = problem.current.length;
  let best: SplitPrice | null = null;
  const split = new Array<number>(S).fill(1);
  const visit = (s: number, left: number): void => {
    if (s === S - 1) {
      split[s] = left;
      const price = priceSplit(problem, split);
      if (price.fits && (best === null || price.objectiveMs < best.objectiveMs)) best = price;
      return;
    }
    for (let n = 1; n <= left - (S - 1 - s); n++) {
      split[s] = n;
      visit(s + 1, left - n);
    }
  };
  if (L >= S) visit(0, L);
  return best;
}
