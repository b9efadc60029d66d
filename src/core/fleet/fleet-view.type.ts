/** Healthy and slow links (one job's evidence on one node pair each) and their samples. */
export interface FleetLinkTally {
  healthyLinks: number;
  slowLinks: number;
  healthySamples: number;
  slowSamples: number;
  /** Largest extra delay of a slow link, ms. */
  extraMs: number;
  /** Jobs with a slow link here, sorted. */
  slowJobs: string[];
}

export interface FleetNodeEvidence extends FleetLinkTally {
  node: string;
  locality: string | null;
  /** Distinct other nodes it has a slow link to. */
  slowPeers: number;
  /** Jobs with any evidence on the node, sorted. */
  jobs: string[];
  compute: { healthy: number; slow: number; ratio: number; slowJobs: string[] };
}

export interface FleetPairEvidence extends FleetLinkTally {
  a: string;
  b: string;
}

/** Links between two localities (a < b), or inside one (a === b). */
export interface FleetBoundaryEvidence extends FleetLinkTally {
  a: string;
  b: string;
}

export type FleetSuspectKind = 'nic' | 'uplink' | 'boundary' | 'node-pair' | 'compute';

export interface FleetSuspect {
  /** Stable name: `nic:<node>`, `uplink:<locality>`, `boundary:<a>|<b>`, `node-pair:<a>|<b>`, `compute:<node>`. */
  id: string;
  kind: FleetSuspectKind;
  nodes: string[];
  localities: string[];
  /** In (0, 1]: how much of the evidence there is and how consistent it is. */
  confidence: number;
  slowLinks: number;
  slowSamples: number;
  /** Healthy links that vouch for the rest (the peers elsewhere, the inside of the localities). */
  healthyLinks: number;
  extraMs: number;
  jobs: string[];
  /** Why, in words an operator can read. */
  reason: string;
  /** What to do about it (the runbook's first step). */
  action: string;
}

export interface FleetView {
  /** Jobs whose evidence the view is built from, sorted. */
  jobs: string[];
  /** Newest evidence (ms since the epoch; 0 without any). */
  asOf: number;
  /** Ranked: most confident first. */
  suspects: FleetSuspect[];
  nodes: FleetNodeEvidence[];
  /** Node pairs with at least one slow link. */
  pairs: FleetPairEvidence[];
  boundaries: FleetBoundaryEvidence[];
}
