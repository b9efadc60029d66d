import fc from 'fast-check';
import { DEFAULT_CONTROL_CONFIG } from './control-config.type';
import { JobControlInput, PipelineLinkView } from './control-input.type';
import { decideControl } from './job-controller';
import { initialPipelines } from './pipeline-plans';

/** One replica of `stages` x `microbatches`, link `slow` slower by `extraMs`, running its initial plan. */
function job(stages: number, microbatches: number, f: number, b: number, w: number, slow: number, extraMs: number): JobControlInput {
  const links: PipelineLinkView[] = Array.from({ length: stages - 1 }, (_, link) => ({
    dp: 0, link, upRank: link, downRank: link + 1, baselineMs: 0.1, extraMs: link === slow ? extraMs : 0, straggler: link === slow, nicFailure: false,
  }));
  const base: JobControlInput = {
    stages, microbatches, dpSize: 1,
    fMs: new Array(stages).fill(f), bMs: new Array(stages).fill(b), wMs: new Array(stages).fill(w),
    deviceCaps: new Array(stages).fill(microbatches), hostCaps: new Array(stages).fill(microbatches),
    links, current: null,
  };
  return { ...base, current: { pipelines: initialPipelines(base), delegation: [] } };
}

/** The job once the first phase's decision is in force, and the first phase decided again on it. */
function afterFirstPhase(input: JobControlInput) {
  const adaptive = { ...DEFAULT_CONTROL_CONFIG, planner: 'adaptive' as const };
  const first = decideControl(input, adaptive).decision;
  const inForce: JobControlInput = first ? { ...input, current: { pipelines: first.pipelines, delegation: first.delegation } } : input;
  return { inForce, again: decideControl(inForce, adaptive) };
}

describe('refinementHeadroom (through decideControl)', () => {
  it('is sound: where it says no refinement could gain, the search (the refining planner) switches to nothing', () => {
    let bounded = 0;
    let refined = 0;
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 4 }), fc.integer({ min: 4, max: 10 }), fc.integer({ min: 1, max: 10 }), fc.integer({ min: 1, max: 10 }), fc.integer({ min: 0, max: 10 }),
        fc.nat(), fc.integer({ min: 1, max: 200 }),
        (stages, microbatches, f, b, w, slowPick, extraMs) => {
          const { inForce, again } = afterFirstPhase(job(stages, microbatches, f, b, w, slowPick % (stages - 1), extraMs));
          if (again.decision !== null) return; // the first phase still switches: no refinement runs
          const search = decideControl(inForce, { ...DEFAULT_CONTROL_CONFIG, planner: 'search' });
          if (again.refinable === false) {
            bounded++;
            expect(search.decision).toBeNull();
          } else if (search.decision) refined++;
        },
      ),
      { numRuns: 150, seed: 29 },
    );
    // Both sides are exercised: refinements left out, and refinements that did find a better plan.
    expect(bounded).toBeGreaterThan(10);
    expect(refined).toBeGreaterThan(0);
  });

  it('twin: a refinement that finds a plan worth switching to is never bounded out (120 ms on a 4 x 12 job)', () => {
    const { inForce, again } = afterFirstPhase(job(4, 12, 10, 10, 10, 1, 120));
    expect(again.decision).toBeNull();
    expect(decideControl(inForce, { ...DEFAULT_CONTROL_CONFIG, planner: 'search' }).decision).not.toBeNull();
    expect(again.refinable).not.toBe(false);
  });
});
