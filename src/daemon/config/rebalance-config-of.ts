import { RebalanceConfig } from '../../core/rebalance/rebalance-config.type';
import { PipemorphConfig } from './pipemorph-config.type';

/** The re-balancing knobs of a daemon config as the core takes them. */
export function rebalanceConfigOf(config: PipemorphConfig): RebalanceConfig {
  const { enabled, minGain, handoffGBps, maxCandidates, refineCandidates } = config.rebalance;
  return { enabled, minGain, handoffGBps, maxCandidates, refineCandidates };
}
