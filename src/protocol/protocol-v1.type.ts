/**
 * Wire protocol v1 between training ranks and the daemon. The JSON Schemas in /schemas are the
 * normative definition (and what the daemon validates against); these types mirror them.
 * See docs/protocol.md.
 */
export const PROTOCOL_VERSION = 1;

export interface RankCoordinates {
  rank: number;
  dp: number;
  pp: number;
  tp: number;
  node: string;
  /** Failure/network domain of the node (rack, leaf switch or datacenter): a slow link between two domains slows every pair across them. */
  locality?: string;
}

export interface Registration {
  type: 'register';
  protocol: 1;
  jobId: string;
  stages: number;
  microbatches: number;
  dp: number;
  tp: number;
  ranks: RankCoordinates[];
  memory: { deviceBytes: number[]; activationBytes: number[]; hostBytes: number };
  computeMs?: { fMs: number[]; bMs: number[]; wMs: number[] };
  network?: { nominalGBps?: number; latencyMs?: number };
  /** The data-parallel all-reduce, for pricing slow data-parallel links and re-mapping ranks away from them. */
  dataParallel?: DataParallelSpec;
}

export interface DataParallelSpec {
  /** Per stage: gradient bytes each rank all-reduces per iteration. */
  gradientBytes: number[];
  /** Bytes per ring message (default 4 MiB). */
  chunkBytes?: number;
  /** Ring messages in flight per link (default 8). */
  inflightChunks?: number;
  /** Healthy ring link bandwidth, GB/s, and one-way latency, ms (default: `network`, else 25 GB/s and 0). */
  gbps?: number;
  latencyMs?: number;
}

export type LinkKind = 'pipeline' | 'data-parallel';
export type LinkError = 'nic-failure' | 'timeout';

export interface LinkSample {
  peer: number;
  kind: LinkKind;
  bytes: number;
  medianMs: number;
  maxMs: number;
  count?: number;
  delegated: boolean;
  error?: LinkError | null;
}

export interface RankReport {
  type: 'report';
  protocol: 1;
  jobId: string;
  rank: number;
  iteration: number;
  scheduleVersion: number;
  /** Highest fencing epoch the rank has seen (optional; lets the daemon keep epochs monotonic across a Redis data loss, protocol §5.6). */
  epoch?: number;
  iterationMs?: number;
  computeMs: { f: number; b: number; w: number };
  memory?: { devicePeakBytes?: number; hostPeakBytes?: number };
  links: LinkSample[];
  delegation?: { enabled?: boolean; sendQueues?: number; recvQueues?: number };
  sentAt?: number;
}

export interface Ack {
  type: 'ack';
  protocol: 1;
  jobId: string;
  rank: number;
  version: number;
  epoch: number;
  iteration: number;
  accepted: boolean;
  reason?: string;
}

/** What ranks append to their job's reports stream. */
export type RankMessage = RankReport | Ack;

export interface PipelineAssignment {
  dpReplicas: number[];
  warmup: number[];
  stages: string[][];
}

export interface DelegationToggle {
  rank: number;
  sendQueues: number;
  recvQueues: number;
}

export type ReasonKind = 'initial' | 'straggler' | 'recovery' | 'nic-failure' | 'compute' | 'remap';

/** Where every rank sits once a schedule is in force, when that differs from the registration (docs/protocol.md sec. 5.5). */
export interface TopologyAssignment {
  /** Topology version: 1 for the first re-mapping, +1 for each one after; a rank rebuilds its communicators when it changes. */
  version: number;
  /** Schedule version that introduced this topology version: reports of earlier schedule versions describe the old layout. */
  sinceVersion: number;
  /** Every rank of the job with its (dp, pp); the TP ranks of a node move with it. */
  ranks: Array<{ rank: number; dp: number; pp: number }>;
  /** Per stage, the data-parallel ring order as dp indices. */
  rings: number[][];
  /** Ranks whose stage changes with this topology version: they load that stage's weights and optimizer state first. */
  moved: number[];
}

export interface ReasonLink {
  kind: LinkKind;
  fromRank: number;
  toRank: number;
  dp?: number;
  link?: number;
  extraMs: number;
  error?: string | null;
}

export interface PublishedSchedule {
  protocol: 1;
  jobId: string;
  version: number;
  epoch: number;
  state: 'prepared' | 'committed';
  effectiveIteration: number;
  createdAt: number;
  pipelines: PipelineAssignment[];
  delegation: DelegationToggle[];
  reason: { kind: ReasonKind; links: ReasonLink[]; detail: string };
  prediction: { previousMs: number | null; newMs: number; staticMs?: number };
  traceId?: string;
  /** Present once the job has been re-mapped away from its registration layout. */
  topology?: TopologyAssignment;
}

export interface ControlEvent {
  type: 'prepare' | 'commit' | 'abort';
  protocol: 1;
  jobId: string;
  version: number;
  epoch: number;
  effectiveIteration: number;
  reason?: string;
}
