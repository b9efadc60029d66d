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

export type ReasonKind = 'initial' | 'straggler' | 'recovery' | 'nic-failure' | 'compute';

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
