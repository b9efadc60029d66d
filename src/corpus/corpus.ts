import { seededRandom } from '../core/planner/seeded-random';
import { PAPER_TRACES } from '../emulator/delay/dynamic-delay';
import { CorpusScenario, CorpusShape, NoiseSpec, ScenarioClass, StragglerSpec } from './corpus.type';

/** The paper's 4-stage example (Fig. 4): every op 10 ms, 12 microbatches. */
function uniform4(dp: number): CorpusShape {
  const t = [10, 10, 10, 10];
  return { stages: 4, dp, microbatches: 12, fMs: t, bMs: t, wMs: t, linkMs: 0.1, gradientBytes: new Array(4).fill(1 << 28), deviceActivations: 8 };
}

/** The real 8-stage Megatron profile (bench/profiles) scaled by 0.2, as the emulator's scenarios use it: about 766 ms healthy. */
function megatron8(dp: number): CorpusShape {
  return {
    stages: 8, dp, microbatches: 32,
    fMs: [6.143, 5.847, 5.821, 5.816, 5.77, 5.784, 5.785, 8.336],
    bMs: [6.262, 5.869, 5.871, 5.891, 5.843, 5.877, 5.871, 7.746],
    wMs: [3.749, 3.758, 3.812, 3.873, 3.891, 3.993, 4.019, 6.567],
    linkMs: 0.095, gradientBytes: new Array(8).fill(1 << 28), deviceActivations: 16,
  };
}

/** A 16-stage job of 32 microbatches (5/6/4 ms ops). */
function deep16(dp: number): CorpusShape {
  return {
    stages: 16, dp, microbatches: 32, fMs: new Array(16).fill(5), bMs: new Array(16).fill(6), wMs: new Array(16).fill(4),
    linkMs: 0.1, gradientBytes: new Array(16).fill(1 << 27), deviceActivations: 32,
  };
}

/**
 * Noise every scenario carries (docs/detection.md, "Noise models", gives the sources): lognormal
 * link jitter of 10% with a Pareto tail on 2% of samples, 3% compute jitter, a GC pause on 0.5% of
 * rank-iterations, a checkpoint every 500 iterations.
 */
function baseNoise(): NoiseSpec[] {
  return [
    { type: 'link-jitter', sigma: 0.1, tailProbability: 0.02, tailScaleMs: 2, tailAlpha: 1.5 },
    { type: 'compute-jitter', sigma: 0.03 },
    { type: 'gc-pause', probability: 0.005, minMs: 20, maxMs: 1500 },
    { type: 'checkpoint', every: 500, durationMs: 8000, linkFactor: 4 },
  ];
}

/**
 * Congestion bursts, as labeled stragglers rather than noise (they are real, just mostly too short
 * to be worth a switch): per iteration a burst starts on a random pipeline link with probability
 * `perIteration`, lasting 1-3 iterations at 5-40 ms.
 */
function bursts(shape: CorpusShape, iterations: number, seed: number, perIteration: number): StragglerSpec[] {
  const random = seededRandom(seed ^ 0x9e3779b9);
  const out: StragglerSpec[] = [];
  for (let t = 50; t < iterations - 10; t++) {
    if (random() >= perIteration) continue;
    const length = 1 + Math.floor(random() * 3);
    out.push({
      target: { kind: 'pipeline', dp: Math.floor(random() * shape.dp), link: Math.floor(random() * (shape.stages - 1)) },
      shape: { type: 'constant', ms: 5 + random() * 35 },
      start: t,
      end: t + length - 1,
    });
    t += length;
  }
  return out;
}

/**
 * The job an outside rank model ran (issue 29): 4 stages x 12 microbatches x dp 2 whose links run
 * 1.7 ms healthy while the registration promises 0.69 ms.
 */
function outside4(): CorpusShape {
  return { ...uniform4(2), linkMs: 1.7, nominalLinkMs: 0.69 };
}

/**
 * That model's noise: a Pareto(1.3) excess on every direction's per-iteration median, GC pauses of
 * 50-300 ms, a job-wide 500 ms checkpoint stall every 100 iterations.
 */
function outsideNoise(): NoiseSpec[] {
  return [
    { type: 'pareto-median', scaleMs: 0.3, alpha: 1.3 },
    { type: 'compute-jitter', sigma: 0.03 },
    { type: 'gc-pause', probability: 0.01, minMs: 50, maxMs: 300 },
    { type: 'checkpoint', every: 100, durationMs: 500, linkFactor: 1 },
  ];
}

/** A link flapping +30 ms for 1-2 iterations at a time (labeled: never worth a switch). */
function flap(dp: number, link: number, from: number, to: number): StragglerSpec[] {
  const out: StragglerSpec[] = [];
  for (let t = from, k = 0; t < to; t += 37, k++) out.push({ target: { kind: 'pipeline', dp, link }, shape: { type: 'constant', ms: 30 }, start: t, end: t + (k % 2) });
  return out;
}

function scenario(name: string, cls: ScenarioClass, seed: number, iterations: number, shape: CorpusShape, noise: NoiseSpec[], stragglers: StragglerSpec[], localities?: string[]): CorpusScenario {
  return { name, class: cls, seed, iterations, shape, noise, stragglers, ...(localities ? { localities } : {}) };
}

/**
 * The corpus: healthy jobs under each noise model and all of them at once (long, for false
 * switches per job-day), and labeled stragglers of every kind, on job shapes from 4 to 16 stages
 * and dp 1 to 16. `scale` multiplies the healthy scenarios' length (1: about 2 simulated job-days
 * of healthy traffic in all). `superpodTrace`: the text of the paper's superpod trace, for its scenario.
 */
export function detectionCorpus(scale = 1, superpodTrace?: string): CorpusScenario[] {
  const H = Math.max(200, Math.round(20000 * scale));
  const list: CorpusScenario[] = [];
  const healthy = (name: string, cls: ScenarioClass, seed: number, shape: CorpusShape, extra: NoiseSpec[], stragglers: StragglerSpec[] = []) =>
    list.push(scenario(name, cls, seed, H, shape, [...baseNoise(), ...extra], stragglers));
  healthy('healthy 8x32 dp4, jitter only', 'healthy-jitter', 11, megatron8(4), [{ type: 'link-jitter', sigma: 0.15, tailProbability: 0.05, tailScaleMs: 3, tailAlpha: 1.2 }]);
  healthy('healthy 4x12 dp2, GC pauses', 'healthy-gc', 12, uniform4(2), [{ type: 'gc-pause', probability: 0.03, minMs: 50, maxMs: 2000 }]);
  healthy('healthy 8x32 dp2, dataloader stalls on rank 0', 'healthy-dataloader', 13, megatron8(2), [{ type: 'dataloader-stall', rank: 0, probability: 0.05, minMs: 50, maxMs: 3000 }]);
  healthy('healthy 16x32 dp2, checkpoint every 100', 'healthy-checkpoint', 14, deep16(2), [{ type: 'checkpoint', every: 100, durationMs: 20000, linkFactor: 10 }]);
  const b8 = megatron8(4);
  healthy('healthy 8x32 dp4, short bursts', 'healthy-bursts', 15, b8, [], bursts(b8, H, 15, 0.004));
  healthy('healthy 8x32 dp1, rank 3 restarts', 'healthy-restart', 16, megatron8(1), [
    { type: 'rank-restart', rank: 3, at: 1000, downIterations: 30, warmupIterations: 5, warmupFactor: 3 },
    { type: 'rank-restart', rank: 5, at: 9000, downIterations: 10, warmupIterations: 3, warmupFactor: 2 },
  ]);
  healthy('healthy 4x12 dp4, clock steps', 'healthy-clock', 17, uniform4(4), [
    { type: 'clock-step', rank: 2, at: 500, stepMs: 1000 },
    { type: 'clock-step', rank: 9, at: 3000, stepMs: -400 },
    { type: 'clock-step', rank: 14, at: 7000, stepMs: 250 },
  ]);
  const a16 = deep16(16);
  list.push(scenario('healthy 16x32 dp16, every noise', 'healthy-all-noise', 18, Math.max(200, Math.round(3000 * scale)), a16, [
    ...baseNoise(),
    { type: 'gc-pause', probability: 0.01, minMs: 50, maxMs: 2000 },
    { type: 'dataloader-stall', rank: 0, probability: 0.02, minMs: 50, maxMs: 2000 },
    { type: 'checkpoint', every: 200, durationMs: 15000, linkFactor: 6 },
    { type: 'rank-restart', rank: 40, at: 700, downIterations: 20, warmupIterations: 5, warmupFactor: 3 },
    { type: 'clock-step', rank: 100, at: 1500, stepMs: 800 },
  ], bursts(a16, Math.max(200, Math.round(3000 * scale)), 18, 0.004)));

  const o4 = outside4();
  list.push(scenario('healthy 4x12 dp2, outside noise and a flapping link', 'healthy-outside', 19, H, o4, outsideNoise(), flap(1, 0, 100, H - 10)));

  const noisy = baseNoise();
  const O = (name: string, cls: ScenarioClass, seed: number, iterations: number, stragglers: StragglerSpec[]) => list.push(scenario(name, cls, seed, iterations, outside4(), outsideNoise(), stragglers));
  // Two mild samples, then one 150 ms spike, then healthy (the outside's false switch): a 3-iteration label, never worth acting on.
  O('outside 4x12 dp2, a spike after mild wobble', 'constant', 191, 600, [{ target: { kind: 'pipeline', dp: 0, link: 1 }, shape: { type: 'steps', steps: [[0, 7.2], [1, 4.5], [2, 149.3]] }, start: 300, end: 302 }]);
  O('outside 4x12 dp2, flapping history, then 30 ms on link 2', 'constant', 192, 900, [...flap(1, 0, 100, 880), { target: { kind: 'pipeline', dp: 0, link: 2 }, shape: { type: 'constant', ms: 30 }, start: 500, end: 800 }]);
  O('outside 4x12 dp2, 25 ms on link 2 for 60 iterations', 'constant', 193, 600, [{ target: { kind: 'pipeline', dp: 0, link: 2 }, shape: { type: 'constant', ms: 25 }, start: 300, end: 359 }]);
  O('outside 4x12 dp2, 30 ms ring link', 'dp-ring', 194, 800, [...flap(1, 0, 100, 780), { target: { kind: 'node-pair', a: 1, b: 5 }, shape: { type: 'constant', ms: 30 }, start: 400, end: 780 }]);
  const S = (name: string, cls: ScenarioClass, seed: number, iterations: number, shape: CorpusShape, stragglers: StragglerSpec[], localities?: string[]) =>
    list.push(scenario(name, cls, seed, iterations, shape, noisy, stragglers, localities));
  for (const [ms, seed] of [[5, 21], [10, 22], [20, 23], [30, 24], [60, 25], [120, 26]] as const) {
    S(`8x32 dp4, ${ms} ms on link 6`, 'constant', seed, 900, megatron8(4), [{ target: { kind: 'pipeline', dp: 1, link: 6 }, shape: { type: 'constant', ms }, start: 300, end: 700 }]);
  }
  // A lasting straggler on a job whose history is all short bursts: it must outlive them, then be acted on.
  const bb = megatron8(4);
  S('8x32 dp4, bursts, then 30 ms on link 4', 'constant', 29, 1500, bb, [...bursts(bb, 1000, 29, 0.01), { target: { kind: 'pipeline', dp: 2, link: 4 }, shape: { type: 'constant', ms: 30 }, start: 1100, end: 1400 }]);
  S('4x12 dp2, 30 ms on link 2', 'constant', 27, 700, uniform4(2), [{ target: { kind: 'pipeline', dp: 0, link: 2 }, shape: { type: 'constant', ms: 30 }, start: 200, end: 500 }]);
  S('16x32 dp2, 40 ms on link 11', 'constant', 28, 700, deep16(2), [{ target: { kind: 'pipeline', dp: 1, link: 11 }, shape: { type: 'constant', ms: 40 }, start: 200, end: 500 }]);
  S('8x32 dp4, ramp 0 -> 60 ms over 100 iterations', 'ramp', 31, 900, megatron8(4), [{ target: { kind: 'pipeline', dp: 2, link: 3 }, shape: { type: 'ramp', fromMs: 0, toMs: 60, rampIterations: 100 }, start: 300, end: 700 }]);
  S('4x12 dp1, ramp 0 -> 40 ms over 50 iterations', 'ramp', 32, 700, uniform4(1), [{ target: { kind: 'pipeline', dp: 0, link: 1 }, shape: { type: 'ramp', fromMs: 0, toMs: 40, rampIterations: 50 }, start: 200, end: 500 }]);
  S('8x32 dp4, 40 ms intermittent (100 on, 150 off)', 'intermittent', 41, 1500, megatron8(4), [{ target: { kind: 'pipeline', dp: 0, link: 4 }, shape: { type: 'periodic', ms: 40, onIterations: 100, offIterations: 150 }, start: 200, end: 1300 }]);
  S('8x32 dp4, 40 ms flapping (3 on, 7 off)', 'flapping', 42, 1500, megatron8(4), [{ target: { kind: 'pipeline', dp: 3, link: 2 }, shape: { type: 'periodic', ms: 40, onIterations: 3, offIterations: 7 }, start: 200, end: 1300 }]);
  S('4x12 dp2, 25 ms flapping (2 on, 2 off)', 'flapping', 43, 1500, uniform4(2), [{ target: { kind: 'pipeline', dp: 1, link: 1 }, shape: { type: 'periodic', ms: 25, onIterations: 2, offIterations: 2 }, start: 200, end: 1300 }]);
  // Two racks; rings cross the boundary: every replica's ring has a slow rack uplink (re-map it onto a pipeline edge).
  const racks8 = Array.from({ length: 4 * 4 }, (_, r) => (Math.floor(r / 4) < 2 ? 'rack-a' : 'rack-b'));
  S('4x12 dp4, 30 ms ring link across racks', 'dp-ring', 51, 900, uniform4(4), [
    { target: { kind: 'node-pair', a: 4 + 1, b: 8 + 1 }, shape: { type: 'constant', ms: 30 }, start: 200, end: 900 },
    { target: { kind: 'node-pair', a: 12 + 1, b: 0 + 1 }, shape: { type: 'constant', ms: 30 }, start: 200, end: 900 },
  ], racks8);
  S('8x32 dp8, 20 ms on one ring link', 'dp-ring', 52, 900, megatron8(8), [{ target: { kind: 'node-pair', a: 2 * 8 + 5, b: 3 * 8 + 5 }, shape: { type: 'constant', ms: 20 }, start: 300, end: 900 }]);
  // A ring link that flaps: each spell is long enough to re-map for, none long enough to pay for the handoff.
  S('8x32 dp8, 20 ms flapping ring link (10 on, 30 off)', 'flapping', 53, 1500, megatron8(8), [{ target: { kind: 'node-pair', a: 2 * 8 + 5, b: 3 * 8 + 5 }, shape: { type: 'periodic', ms: 20, onIterations: 10, offIterations: 30 }, start: 200, end: 1300 }]);
  S('8x32 dp4, rank 13 1.5x slower', 'compute', 61, 900, megatron8(4), [{ target: { kind: 'compute', rank: 13 }, shape: { type: 'slowdown', factor: 1.5 }, start: 300, end: 700 }]);
  S('4x12 dp1, rank 2 1.3x slower', 'compute', 62, 700, uniform4(1), [{ target: { kind: 'compute', rank: 2 }, shape: { type: 'slowdown', factor: 1.3 }, start: 200, end: 500 }]);
  S('8x32 dp2, NIC failure on link 5', 'nic-failure', 71, 700, megatron8(2), [{ target: { kind: 'pipeline', dp: 0, link: 5 }, shape: { type: 'nic-failure' }, start: 200, end: 450 }]);
  for (const [t, seed] of [['A', 81], ['B', 82], ['C', 83]] as const) {
    const [lo, hi] = PAPER_TRACES[t];
    // The traces change every lo-hi ms of a 766 ms iteration's worth of sends: at iteration granularity, a new delay per iteration.
    S(`8x32 dp2, dynamic trace ${t} on every link`, `dynamic-${t}`, seed, 600, megatron8(2), Array.from({ length: 7 }, (_, link) => ({
      target: { kind: 'pipeline' as const, dp: 0, link },
      shape: { type: 'dynamic' as const, meanMs: 30, stdMs: 10, minInterval: Math.max(1, Math.round(lo / 50)), maxInterval: Math.max(1, Math.round(hi / 50)), seed: seed * 16 + link },
      start: 100,
      end: 599,
    })));
  }
  if (superpodTrace) {
    // The superpod trace (bench/traces/superpod-link-delays.trace): "iteration;a_b,c_d;seconds" lines, a step per line.
    const steps = new Map<number, Array<[number, number]>>();
    let last = 0;
    for (const line of superpodTrace.split('\n')) {
      const [at, links, seconds] = line.trim().split(';');
      const ms = Number(seconds) * 1000;
      if (!links || !Number.isFinite(ms) || !(Number(at) >= 0)) continue;
      last = Math.max(last, Number(at));
      for (const pair of links.split(',')) {
        const link = Number(pair.split('_')[0]);
        steps.set(link, [...(steps.get(link) ?? []), [Number(at), ms]]);
      }
    }
    S('8x32 dp1, superpod trace', 'superpod', 91, 100 + last + 100, megatron8(1), [...steps].map(([link, st]) => ({
      target: { kind: 'pipeline' as const, dp: 0, link },
      shape: { type: 'steps' as const, steps: st },
      start: 100,
      end: 100 + last + 99,
    })));
  }
  return list;
}
