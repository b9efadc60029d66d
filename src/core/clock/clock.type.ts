/**
 * The one source of time for the daemon: services take it injected, so timing behaviour (prepare
 * deadlines, back-off, re-plan interval, stale ranks) is tested by moving a manual clock instead of
 * sleeping on the wall clock.
 */
export interface Clock {
  /** Wall-clock time, ms since the Unix epoch (written into schedules and compared across replicas). */
  now(): number;
  /** A monotonic reading in ms, for measuring how long something took (never compared with now()). */
  monotonicMs(): number;
  /** Runs `task` once after `ms`; the returned handle cancels it (clearTimeout). */
  setTimeout(task: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}
