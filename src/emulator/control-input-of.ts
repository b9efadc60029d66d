import { JobControlInput, PipelineLinkView } from '../core/control/control-input.type';
import { deviceInflightCaps } from '../core/planner/initial-planner';
import { toPipelineModel } from '../core/pipeline/pipeline-model';
import { EmulatedJob } from './emulated-job';

/**
 * The daemon's control input for an emulated job as its registration describes it (op times from
 * the profile, device memory as registered), with no link measured yet: what baselines and the
 * oracle plan from, so they get the daemon's inputs.
 */
export function controlInputOf(job: EmulatedJob, deviceActivations?: number[]): JobControlInput {
  const p = job.profile;
  const N = p.microbatches;
  const device = deviceActivations ?? (p.memory ? deviceInflightCaps(toPipelineModel(p)) : new Array<number>(p.stages).fill(N));
  return {
    stages: p.stages,
    microbatches: N,
    dpSize: job.dp,
    fMs: p.fMs,
    bMs: p.bMs,
    wMs: p.wMs,
    deviceCaps: device,
    hostCaps: new Array<number>(p.stages).fill(N),
    links: [],
    current: null,
  };
}

/**
 * Every pipeline link of every replica as a perfect detector would see it at `timeMs` of iteration
 * `iteration`: its true extra delay, the NIC state, straggler when there is any extra delay.
 */
export function linkViewsAt(job: EmulatedJob, iteration: number, timeMs: number, extraOf = (link: number) => job.delays.delayMs(link, timeMs, iteration)): PipelineLinkView[] {
  const views: PipelineLinkView[] = [];
  for (let dp = 0; dp < job.dp; dp++) {
    for (let link = 0; link + 1 < job.stages; link++) {
      const extraMs = extraOf(link);
      const nicFailure = job.delays.nicFailed(link, iteration);
      views.push({
        dp, link, upRank: job.rankOf(dp, link), downRank: job.rankOf(dp, link + 1), baselineMs: job.profile.linkMs[link],
        extraMs, straggler: extraMs > 0 || nicFailure, nicFailure,
      });
    }
  }
  return views;
}
