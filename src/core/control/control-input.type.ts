import { Schedule } from '../pipeline/schedule.type';

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
  /** What runs now (null before the first schedule). */
  current: { pipelines: PipelineGroupPlan[]; delegation: DelegationPlan[] } | null;
}
