import { InputError } from '../input-error';
import { formatOp, OP_B, OP_F, opKind, parseOp } from './op';
import { Schedule, ScheduleText } from './schedule.type';

export function formatSchedule(schedule: Schedule): ScheduleText {
  return schedule.map((ops) => Array.from(ops, formatOp));
}

/**
 * Parses an untrusted per-stage op list and checks that each stage lists every op of
 * every microbatch exactly once. Dependencies across stages are checked by replaying it
 * (a schedule that violates them deadlocks in the simulator).
 */
export function parseSchedule(value: unknown, stages: number, microbatches: number): Schedule {
  if (!Array.isArray(value)) throw new InputError('schedule must be an array with one op list per stage');
  if (value.length !== stages) throw new InputError(`schedule has ${value.length} stages, the profile has ${stages}`);
  const opsPerStage = 3 * microbatches;
  return value.map((list, stage) => {
    if (!Array.isArray(list)) throw new InputError(`schedule stage ${stage} must be an array of ops`);
    const seen = new Uint8Array(opsPerStage);
    const ops = new Int32Array(list.length);
    list.forEach((token, k) => {
      const code = parseOp(token, microbatches, `schedule stage ${stage} position ${k}`);
      if (seen[code]) throw new InputError(`schedule stage ${stage}: ${formatOp(code)} appears more than once`);
      seen[code] = 1;
      ops[k] = code;
    });
    const missing = seen.indexOf(0);
    if (missing >= 0) {
      throw new InputError(`schedule stage ${stage} misses ${formatOp(missing)} (each stage must list F, B and W of all ${microbatches} microbatches)`);
    }
    return ops;
  });
}

/** Warm-up forward count x_i of each stage: the Fs a stage runs before its first B. */
export function warmupOf(schedule: Schedule): number[] {
  return schedule.map((ops) => {
    let count = 0;
    for (const code of ops) {
      const kind = opKind(code);
      if (kind === OP_B) break;
      if (kind === OP_F) count++;
    }
    return count;
  });
}
