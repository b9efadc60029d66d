import { DecisionKind } from './control-decision.type';
import { CostEstimate } from './switch-gate';
import { RebalanceEvidence } from '../rebalance/rebalance-evidence.type';

/**
 * One entry of a job's decision log (GET /jobs/:id/decisions, `pipemorph replay`): what the control
 * loop saw, what it predicted, what the switch would cost, and whether it was taken. Declined and
 * paused decisions are logged too: they are what an operator tunes thresholds on.
 */
export interface DecisionRecord {
  /** Daemon clock when decided, ms since the epoch (replays: the recorded report's time, else 0). */
  at: number;
  /** The job's newest iteration when decided. */
  iteration: number;
  kind: DecisionKind;
  /** taken: published (or about to be); declined: not worth its cost; paused: switching paused for the job. */
  verdict: 'taken' | 'declined' | 'paused';
  /** One sentence: why. */
  reason: string;
  /** The stragglers the decision answers, as detected. */
  evidence: {
    links: Array<{ dp: number; link: number; extraMs: number; nicFailure: boolean }>;
    dataParallelLinks: Array<{ fromRank: number; toRank: number; extraMs: number }>;
  };
  prediction: { currentMs: number | null; newMs: number; staticMs: number };
  /** Null where no cost applies (the first plan, a NIC failure, cost-aware switching off). */
  cost: CostEstimate | null;
  /** The schedule version a taken decision was published as (null: not published, or not yet known). */
  scheduleVersion: number | null;
  /** Whether per-job detection overrides were in force. */
  overrides: boolean;
  /**
   * How many steps in a row made this same decision with this verdict (the same kind for the same
   * stragglers): a straggler not worth a switch is judged again at every maintenance tick, and the
   * log keeps one entry for the run, with the newest step's iteration, numbers and reason, and the
   * iteration of its first.
   */
  repeats: number;
  firstIteration: number;
  /** Kind 'rebalance' only: the compute stragglers, speeds, splits and predictions (docs/rebalancing.md). */
  rebalance?: RebalanceEvidence;
}
