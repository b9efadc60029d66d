/**
 * Thresholds of fleet localisation (config section "fleet", docs/fleet.md). A "link" below is one
 * job's evidence on one node pair (all the ranks of that job on those two nodes, pipeline and
 * data-parallel together); it is slow when most of its samples are.
 */
export interface FleetConfig {
  /** A job's link with fewer samples than this is still learning and is left out. */
  minLinkSamples: number;
  /** Fraction of a suspect's links (or compute records) that must be slow. */
  minSlowFraction: number;
  /** NIC: distinct peers the node is slow to, each healthy on its other links. */
  nicMinPeers: number;
  /** NIC: distinct jobs the node's slow links come from. */
  nicMinJobs: number;
  /** A peer is healthy elsewhere when at least this fraction of its links without the suspect are healthy. */
  peerHealthyFraction: number;
  /** Boundary: distinct nodes on each side of the slow links across it (one node alone is its NIC, not the boundary). */
  boundaryMinNodes: number;
  /** Boundary: distinct jobs the slow links across it come from. */
  boundaryMinJobs: number;
  /** Boundary: fraction of the links inside either locality that must be healthy (when any are known). */
  insideHealthyFraction: number;
  /** A locality on at least this many suspect boundaries is named as its uplink instead. */
  uplinkMinBoundaries: number;
  /** Node pair: distinct jobs slow on the pair (one job's slow link is that job's own business). */
  pairMinJobs: number;
  /** Compute: distinct jobs that saw the node's GPU slow. */
  computeMinJobs: number;
}

/** The shipped thresholds (config/default.json's "fleet" section carries the same). */
export const DEFAULT_FLEET_CONFIG: Readonly<FleetConfig> = Object.freeze({
  minLinkSamples: 3,
  minSlowFraction: 0.5,
  nicMinPeers: 2,
  nicMinJobs: 2,
  peerHealthyFraction: 0.8,
  boundaryMinNodes: 2,
  boundaryMinJobs: 1,
  insideHealthyFraction: 0.8,
  uplinkMinBoundaries: 2,
  pairMinJobs: 2,
  computeMinJobs: 1,
});
