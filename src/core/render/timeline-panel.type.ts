import { MessageLog } from '../engine/engine-run.type';
import { Schedule } from '../pipeline/schedule.type';

/**
 * Per-op times of one iteration: the engine's EngineRun has this shape, and so can measured op
 * times of an emulated or real iteration. Times are indexed by stage * 3N + op code.
 */
export interface TimelineRun {
  readonly stages: number;
  readonly microbatches: number;
  /** Per stage, the ops in the order they ran. */
  readonly order: Schedule;
  readonly start: Float64Array;
  readonly end: Float64Array;
  readonly iterationMs: number;
  /** Messages; only those on `slowLinks` are drawn. */
  readonly messages?: MessageLog;
}

/** One timeline of a picture (e.g. the schedule before a switch, or after it). */
export interface TimelinePanel {
  /** Shown above the rows with the iteration time and bubble rate, e.g. "before: v1 initial". */
  title: string;
  run: TimelineRun;
  /** Links (i joins stage i and i+1) whose messages are drawn as arrows between rows. */
  slowLinks?: readonly number[];
  /** Optional label per slow link drawn beside the rows, e.g. "+60 ms". */
  linkNotes?: Readonly<Record<number, string>>;
  /**
   * The data-parallel gradient all-reduce after the pipeline, one entry per stage: its ring runs
   * from `startMs` (all the stage's replicas done with their last op) to `endMs`, and the iteration
   * ends with the last ring. `slow` marks a ring with a slow link; `note` labels the bar (e.g. "+30 ms").
   */
  allReduce?: ReadonlyArray<TimelineAllReduce>;
}

/** One stage's ring all-reduce in a timeline, ms from the iteration start. */
export interface TimelineAllReduce {
  startMs: number;
  endMs: number;
  slow: boolean;
  note?: string;
}

export interface TimelineOptions {
  /** Heading of the whole picture. */
  title?: string;
  /** Width of the time axis in px (default 1100). */
  plotWidth?: number;
}
