import { JobControlInput } from '../control/control-input.type';
import { initialPipelines } from '../control/pipeline-plans';
import { RebalanceInput } from './rebalance-input.type';

/** A uniform transformer-like job for the re-balancing bench and specs. */
export interface RebalanceScenarioOptions {
  stages: number;
  layersPerStage: number;
  microbatches: number;
  /** The stage whose device is slow, and by how much (1.5 = 50% slower). */
  slowStage: number;
  slowFactor: number;
  /** Per layer, one microbatch, ms (defaults 1, 1, 0.8). */
  fMs?: number;
  bMs?: number;
  wMs?: number;
  /** Per layer state (weights, gradients, optimizer) and activation bytes (defaults 2 GB, 0.1 GB). */
  stateBytes?: number;
  activationBytes?: number;
  /** Device memory per stage, bytes (default 80 GB). */
  deviceBytes?: number;
  /** One-way pipeline link time, ms (default 0.05). */
  linkMs?: number;
  expectedIterations?: number;
}

/**
 * The re-balancing input of a uniform job of `stages` x `layersPerStage` layers, one replica, with
 * stage `slowStage` computing `slowFactor` times slower, running the initial plan made for the
 * healthy job (what runs when the straggler is confirmed).
 */
export function rebalanceScenario(o: RebalanceScenarioOptions): RebalanceInput {
  const S = o.stages;
  const L = S * o.layersPerStage;
  const layer = { f: o.fMs ?? 1, b: o.bMs ?? 1, w: o.wMs ?? 0.8, state: o.stateBytes ?? 2e9, acts: o.activationBytes ?? 1e8 };
  const device = o.deviceBytes ?? 80e9;
  const room = device - o.layersPerStage * layer.state;
  const caps = new Array<number>(S).fill(Math.max(1, Math.min(o.microbatches, Math.floor(room / (o.layersPerStage * layer.acts)))));
  const healthy: JobControlInput = {
    stages: S,
    microbatches: o.microbatches,
    dpSize: 1,
    fMs: new Array<number>(S).fill(o.layersPerStage * layer.f),
    bMs: new Array<number>(S).fill(o.layersPerStage * layer.b),
    wMs: new Array<number>(S).fill(o.layersPerStage * layer.w),
    deviceCaps: caps,
    hostCaps: caps,
    links: Array.from({ length: S - 1 }, (_, link) => ({ dp: 0, link, upRank: link, downRank: link + 1, baselineMs: o.linkMs ?? 0.05, extraMs: 0, straggler: false, nicFailure: false })),
    current: null,
  };
  const initial = initialPipelines(healthy);
  const speed = Array.from({ length: S }, (_, s) => (s === o.slowStage ? o.slowFactor : 1));
  return {
    control: { ...healthy, fMs: healthy.fMs.map((t, s) => t * speed[s]), bMs: healthy.bMs.map((t, s) => t * speed[s]), wMs: healthy.wMs.map((t, s) => t * speed[s]), current: { pipelines: initial, delegation: [] } },
    layers: { fMs: new Array<number>(L).fill(layer.f), bMs: new Array<number>(L).fill(layer.b), wMs: new Array<number>(L).fill(layer.w), stateBytes: new Array<number>(L).fill(layer.state), activationBytes: new Array<number>(L).fill(layer.acts) },
    split: new Array<number>(S).fill(o.layersPerStage),
    speed,
    deviceBytes: new Array<number>(S).fill(device),
    hostBytes: 0,
    expectedIterations: o.expectedIterations ?? 100,
  };
}
