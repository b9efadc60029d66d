/**
 * What one job contributes to the fleet view, written by the replica that leads it: compact (node
 * names, not ranks), so that every replica can read every job's.
 */
export interface FleetLinkEvidence {
  /** The two nodes, a < b (links inside one node never cross a NIC and are left out). */
  a: string;
  b: string;
  /** Samples of the job's links between a and b, counted healthy or slow by the job's detector. */
  healthy: number;
  slow: number;
  /** Largest extra delay over the baseline among the job's slow links on the pair, ms (0 when none is slow). */
  extraMs: number;
}

export interface FleetComputeEvidence {
  node: string;
  /** Ranks of the job on the node whose compute is healthy, or slow (a confirmed compute straggler). */
  healthy: number;
  slow: number;
  /** Largest f+b+w over the reference among them (1 = as fast as the other replicas; NaN-free: 0 when unknown). */
  ratio: number;
}

export interface JobFleetEvidence {
  jobId: string;
  /** When it was recorded (ms since the epoch). */
  at: number;
  /** Locality of each node of the job that names one. */
  localities: Record<string, string>;
  links: FleetLinkEvidence[];
  compute: FleetComputeEvidence[];
}
