import { ControlDecision } from '../../core/control/control-decision.type';
import { PipemorphConfig } from '../config/pipemorph-config.type';
import { JobRuntime } from '../jobs/job-runtime';

/**
 * Iterations between the ranks' newest report and the effective iteration of a switch to
 * `decision` (after the first read that can see the prepare): enough for every rank to hear of
 * it at the measured iteration time, doubled after each consecutive abort so a rank that heard
 * late ("late") gets there, plus `remap.extraLeadIterations` for a re-map (moved ranks load
 * another stage first), and `rebalance.extraLeadIterations` for a re-balance. The publisher, the cost gate and `pipemorph replay` count it alike.
 */
export function switchLead(job: JobRuntime, decision: Pick<ControlDecision, 'topology' | 'layers'>, config: Pick<PipemorphConfig, 'handshake' | 'remap'> & Partial<Pick<PipemorphConfig, 'rebalance'>>): number {
  const { minLeadIterations, leadMs } = config.handshake;
  const iterationMs = job.progress.iterationMs;
  const base = iterationMs > 0 ? Math.max(minLeadIterations, Math.ceil(leadMs / iterationMs)) : minLeadIterations;
  return Math.min(1000, base * 2 ** Math.min(job.switching.abortStreak, 6)) + (decision.topology ? config.remap.extraLeadIterations : 0) + (decision.layers ? (config.rebalance?.extraLeadIterations ?? 0) : 0);
}
