import { MilpSolver } from '../../core/planner/optimal-planner';

/** Loads HiGHS (WebAssembly, no network) for the optimal policy; only when that policy is asked for. */
export async function loadMilpSolver(): Promise<MilpSolver> {
  const { default: loadHighs } = await import('highs');
  const highs: MilpSolver = await loadHighs();
  return highs;
}
