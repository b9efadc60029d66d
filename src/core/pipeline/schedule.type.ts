/**
 * A pipeline schedule: per stage, the order in which that stage runs its ops
 * (op codes, see op.ts). Every stage runs every F, B and W of every microbatch exactly once.
 */
export type Schedule = Int32Array[];

/** The wire and CLI form: per stage, op names such as `["F0", "F1", "B0", ...]`. */
export type ScheduleText = string[][];
