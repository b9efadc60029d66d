import { InputError } from '../../core/input-error';
import { warmupOf } from '../../core/pipeline/schedule';
import { linkTolerance } from '../../core/planner/link-tolerance';
import { validateWarmup } from '../../core/engine/generator';
import { expectOnly, integerListOption, requiredOption, stringOption } from '../cli-args';
import { loadProfile } from '../load-profile';
import { loadSchedule } from './simulate.command';

export const TOLERANCE_OPTIONS = ['profile', 'warmup', 'schedule'];

/** `tolerance`: which links a schedule's slackness absorbs under the profile's delays (Eq. 1), and how much each tolerates. */
export function toleranceCommand(options: Map<string, string | true>): unknown {
  expectOnly(options, TOLERANCE_OPTIONS, 'tolerance');
  const { model } = loadProfile(requiredOption(options, 'profile'));
  let warmup = integerListOption(options, 'warmup');
  const schedulePath = stringOption(options, 'schedule');
  if ((warmup === undefined) === (schedulePath === undefined)) throw new InputError('give exactly one of --warmup or --schedule');
  if (schedulePath !== undefined) {
    warmup = warmupOf(loadSchedule(schedulePath, model.stages, model.microbatches));
  }
  validateWarmup(warmup!, model.stages, model.microbatches);
  return { warmup, links: linkTolerance(model, warmup!) };
}
