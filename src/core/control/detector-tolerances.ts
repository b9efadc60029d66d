import { linkTolerance } from '../planner/link-tolerance';
import { JobControlInput } from './control-input.type';
import { modelOf } from './pipeline-plans';

/** What one replica's pipeline link absorbs beyond its learned baseline under the schedule in force, ms. */
export interface DetectorTolerance {
  dp: number;
  link: number;
  toleranceMs: number;
}

/**
 * The extra delay each link absorbs under the warm-up counts in force (Eq. 1 via linkTolerance),
 * less the link's learned baseline (the detector measures the extra on top of it).
 */
export function detectorTolerances(input: JobControlInput, pipelines: ReadonlyArray<{ dpReplicas: readonly number[]; warmup: readonly number[] }>): DetectorTolerance[] {
  const model = modelOf(input, new Array<number>(Math.max(0, input.stages - 1)).fill(0));
  const baseline = new Map(input.links.map((l) => [`${l.dp},${l.link}`, Number.isFinite(l.baselineMs) ? l.baselineMs : 0]));
  const result: DetectorTolerance[] = [];
  for (const pipeline of pipelines) {
    const tolerances = linkTolerance(model, pipeline.warmup);
    for (const dp of pipeline.dpReplicas) {
      for (const t of tolerances) result.push({ dp, link: t.link, toleranceMs: Math.max(0, t.toleranceMs - (baseline.get(`${dp},${t.link}`) ?? 0)) });
    }
  }
  return result;
}
