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
