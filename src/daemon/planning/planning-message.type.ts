import { ControlConfig } from '../../core/control/control-config.type';
import { ControlOutcome } from '../../core/control/control-decision.type';
import { JobControlInput } from '../../core/control/control-input.type';

/** One control decision asked of a planning worker (structured-cloned: plain data and typed arrays). */
export interface PlanningRequest {
  id: number;
  input: JobControlInput;
  config: ControlConfig;
}

export type PlanningResponse = { id: number; outcome: ControlOutcome } | { id: number; error: string };

/** Sent once by a worker when it has loaded what it plans with; decisions are sent to it after that. */
export type PlanningReady = { ready: true } | { ready: false; error: string };

export interface PlanningWorkerData {
  /** Load HiGHS at start-up (the daemon's policy is `optimal`), not on the first decision. */
  preloadMilp: boolean;
  /** Niceness the worker thread adds to the event loop's (control.planningWorkerNice; 0 leaves it as started). */
  nice: number;
  /** Synthetic reactions the worker decides before it says it is ready (control.warmUpRounds; core warmUpDecisions). */
  warmUpRounds: number;
}
