import { ScheduleText } from '../pipeline/schedule.type';

/** What the simulator reports about one schedule run (JSON-friendly). */
export interface SimulationReport {
  iterationMs: number;
  /** Idle stage-time over total stage-time, S * iterationMs (0 when the iteration takes no time). */
  bubbleRate: number;
  stageBusyMs: number[];
  stageIdleMs: number[];
  /** Peak in-flight microbatches (F started, B not) per stage. */
  peakInflight: number[];
  /** Peak ZeroBubble activation memory per stage, when the profile models memory. */
  peakMemory?: number[];
  timeline?: Timeline;
}

export interface Timeline {
  ops: TimelineOp[];
  messages: TimelineMessage[];
}

export interface TimelineOp {
  stage: number;
  op: string;
  startMs: number;
  endMs: number;
}

export interface TimelineMessage {
  link: number;
  direction: 'forward' | 'backward';
  microbatch: number;
  sentMs: number;
  transferStartMs: number;
  arriveMs: number;
}

/** A schedule together with how it runs. */
export interface PlannedSchedule {
  warmup: number[];
  stages: ScheduleText;
  report: SimulationReport;
}
