import { Schedule } from '../pipeline/schedule.type';
import { AllReduceModel } from '../topology/topology.type';
import { FleetSlowGroup } from '../fleet/fleet-slow-group.type';

/** One pipeline link of one data-parallel replica, as the detector sees it now. */
export interface PipelineLinkView {
  dp: number;
  link: number;
  /** Rank of stage `link` and of stage `link + 1` in that replica. */
  upRank: number;
  downRank: number;
  /** Healthy one-way time of one message, ms (NaN when not learned yet). */
  baselineMs: number;
  /** Current extra delay over the baseline, ms. */
  extraMs: number;
  straggler: boolean;
  nicFailure: boolean;
}

/** The schedule a group of replicas runs. */
export interface PipelineGroupPlan {
  dpReplicas: number[];
  warmup: number[];
  schedule: Schedule;
}

export interface DelegationPlan {
  rank: number;
  sendQueues: number;
  recvQueues: number;
}

/** One directed data-parallel ring link, as the detector sees it now. */
export interface DataParallelLinkView {
  fromRank: number;
  toRank: number;
  /** Extra delay over the link's healthy level, ms. */
  extraMs: number;
  straggler: boolean;
}

/** Where the job's nodes sit now and what their data-parallel links do: what a re-map needs. */
export interface TopologyView {
  /** Reporting rank at slot (dp, pp): rankAt[dp * stages + pp]. */
  rankAt: number[];
  /** Per stage, the data-parallel ring order (dp indices). */
  rings: number[][];
  /** Locality (rack, datacenter) of reporting ranks, where known. */
  localityOf: ReadonlyMap<number, string>;
  /** The all-reduce; null when the job did not describe it (then it is never re-mapped). */
  allReduce: AllReduceModel | null;
  dataParallelLinks: DataParallelLinkView[];
  /** False while the last re-map is too recent. */
  remapAllowed: boolean;
  /** Links the fleet names slow around the job (fleetSlowGroups; absent: the job's own measurements only). */
  fleetSlow?: readonly FleetSlowGroup[];
}

export interface JobControlInput {
  stages: number;
  microbatches: number;
  dpSize: number;
  /** Per stage op times to plan with (measured, max over replicas), ms. */
  fMs: number[];
  bMs: number[];
  wMs: number[];
  /** Per stage: microbatches of activations that fit on the device, and on the host once delegated. */
  deviceCaps: number[];
  hostCaps: number[];
  /** Every pipeline link of every replica that has been measured; missing ones count as healthy with no delay. */
  links: PipelineLinkView[];
  /** Placement and data-parallel links (absent: never re-map). */
  topology?: TopologyView;
  /** What runs now (null before the first schedule). */
  current: { pipelines: PipelineGroupPlan[]; delegation: DelegationPlan[] } | null;
}
