import { FleetConfig } from '../../core/fleet/fleet-config.type';
import { PipemorphConfig } from './pipemorph-config.type';

/** The localisation thresholds of a daemon config as the core takes them. */
export function fleetConfigOf(config: PipemorphConfig): FleetConfig {
  const f = config.fleet;
  return {
    minLinkSamples: f.minLinkSamples,
    minSlowFraction: f.minSlowFraction,
    nicMinPeers: f.nicMinPeers,
    nicMinJobs: f.nicMinJobs,
    peerHealthyFraction: f.peerHealthyFraction,
    boundaryMinNodes: f.boundaryMinNodes,
    boundaryMinJobs: f.boundaryMinJobs,
    insideHealthyFraction: f.insideHealthyFraction,
    uplinkMinBoundaries: f.uplinkMinBoundaries,
    pairMinJobs: f.pairMinJobs,
    computeMinJobs: f.computeMinJobs,
  };
}
