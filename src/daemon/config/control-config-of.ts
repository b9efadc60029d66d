import { ControlConfig } from '../../core/control/control-config.type';
import { SwitchCostConfig } from '../../core/control/switch-gate';
import { PipemorphConfig } from './pipemorph-config.type';

/** The control knobs of a daemon config as the core takes them (the daemon's ControlService and `pipemorph replay` alike). */
export function controlConfigOf(config: PipemorphConfig): ControlConfig {
  const { enabled, minGain, migrationMsPerNode, amortizeIterations, searchBudgetMs } = config.remap;
  const {
    gpuSendsInFlight, delegateCopyOverhead, refinePlanner: _refine, costAware: _c, switchCostMs: _s, predictionUncertainty: _u, stragglerPriorIterations: _p, stragglerPriorWeight: _w, delegatedRankMsPerIteration: _d, warmupMsPerIteration: _wu, recoveryWithinIterations: _r, ...control
  } = config.control;
  return { ...control, transport: { gpuSendsInFlight, delegateCopyOverhead }, remap: { enabled, minGain, migrationMsPerNode, amortizeIterations, searchBudgetMs } };
}

/** The cost-aware switching knobs (config section "control"). */
export function switchCostConfigOf(config: PipemorphConfig): SwitchCostConfig {
  const c = config.control;
  return {
    costAware: c.costAware, switchCostMs: c.switchCostMs, predictionUncertainty: c.predictionUncertainty, stragglerPriorIterations: c.stragglerPriorIterations, stragglerPriorWeight: c.stragglerPriorWeight,
    delegatedRankMsPerIteration: c.delegatedRankMsPerIteration, warmupMsPerIteration: c.warmupMsPerIteration, recoveryWithinIterations: c.recoveryWithinIterations,
  };
}
