import { Schedule } from '../pipeline/schedule.type';

/**
 * Everything one exact run of a pipeline produced. Op times are indexed by
 * stage * opsPerStage + opCode (opsPerStage = 3 * microbatches).
 */
export interface EngineRun {
  readonly stages: number;
  readonly microbatches: number;
  /** Per stage, the ops in the order they ran. */
  readonly order: Schedule;
  readonly start: Float64Array;
  readonly end: Float64Array;
  /** Time 0 to the end of the last op, ms. */
  readonly iterationMs: number;
  readonly messages: MessageLog;
  /** Highest ZeroBubble memory per stage (null when the model has no memory profile). */
  readonly peakMemory: Float64Array | null;
  /** Highest number of microbatches whose F has started and whose B has not, per stage. */
  readonly peakInflight: Int32Array;
}

/**
 * Every activation and gradient message, in the order sent. Forward messages
 * (direction 0) carry F outputs from stage `link` to `link + 1`; backward ones
 * (direction 1) carry B outputs from `link + 1` to `link`.
 */
export interface MessageLog {
  readonly count: number;
  readonly link: Int32Array;
  readonly direction: Uint8Array;
  readonly microbatch: Int32Array;
  readonly sentMs: Float64Array;
  /** When the message started to occupy the link (later than sentMs when it queued behind others). */
  readonly transferStartMs: Float64Array;
  readonly arriveMs: Float64Array;
}
