import { InputError } from '../../core/input-error';
import { simulateSchedule } from '../../core/engine/simulator';
import { summarizeRun } from '../../core/engine/simulation-report';
import { parseSchedule, warmupOf } from '../../core/pipeline/schedule';
import { Schedule } from '../../core/pipeline/schedule.type';
import { linkTolerance } from '../../core/planner/link-tolerance';
import { expectOnly, requiredOption } from '../cli-args';
import { loadProfile } from '../load-profile';
import { readJsonFile } from '../read-json-file';

export const SIMULATE_OPTIONS = ['profile', 'schedule', 'timeline'];

/** Accepts a plan's whole output or just its `stages` array. */
export function scheduleStagesOf(raw: unknown): unknown {
  if (raw !== null && typeof raw === 'object' && !Array.isArray(raw)) {
    if (!('stages' in raw)) throw new InputError('schedule file must be an array of per-stage op lists or an object with a "stages" field');
    return (raw as { stages: unknown }).stages;
  }
  return raw;
}

export function loadSchedule(path: string, stages: number, microbatches: number): Schedule {
  const raw = readJsonFile(path, 'schedule');
  try {
    return parseSchedule(scheduleStagesOf(raw), stages, microbatches);
  } catch (error) {
    if (error instanceof InputError) throw new InputError(`${path}: ${error.message}`);
    throw error;
  }
}

/** `simulate`: replays a fixed schedule under a profile's times and delays. */
export function simulateCommand(options: Map<string, string | true>): unknown {
  expectOnly(options, SIMULATE_OPTIONS, 'simulate');
  const { model } = loadProfile(requiredOption(options, 'profile'));
  const schedulePath = requiredOption(options, 'schedule');
  const schedule = loadSchedule(schedulePath, model.stages, model.microbatches);
  const run = simulateSchedule(model, schedule);
  const warmup = warmupOf(schedule);
  return { ...summarizeRun(run, model.durations, options.has('timeline')), warmup, links: linkTolerance(model, warmup) };
}
