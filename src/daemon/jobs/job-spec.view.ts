import { RankPosition } from '../../core/detect/detection.type';
import { AllReduceModel } from '../../core/topology/topology.type';
import { Registration } from '../../protocol/protocol-v1.type';

/** Defaults of the all-reduce model where the registration leaves them out. */
const DEFAULT_CHUNK_BYTES = 4 << 20;
const DEFAULT_INFLIGHT_CHUNKS = 8;
const DEFAULT_RING_GBPS = 25;

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/**
 * The registration a runtime was built from, frozen (no service can change it), with what the
 * daemon derives from it alone: reporting ranks, memory caps, the all-reduce, localities.
 */
export class JobSpecView {
  /** The registration as stored (a frozen copy). */
  readonly registration: Readonly<Registration>;
  /** The ranks that report (tp 0) at their registered (dp, pp). */
  readonly reportingPositions: readonly RankPosition[];
  /** Locality of each reporting rank that names one. */
  readonly localityOf: ReadonlyMap<number, string>;

  constructor(registration: Registration) {
    this.registration = deepFreeze(structuredClone(registration));
    this.reportingPositions = Object.freeze(this.registration.ranks.filter((r) => r.tp === 0).map(({ rank, dp, pp }) => ({ rank, dp, pp })));
    const localities = new Map<number, string>();
    for (const r of this.registration.ranks) if (r.tp === 0 && r.locality !== undefined) localities.set(r.rank, r.locality);
    this.localityOf = localities;
  }

  get jobId(): string {
    return this.registration.jobId;
  }

  get stages(): number {
    return this.registration.stages;
  }

  get microbatches(): number {
    return this.registration.microbatches;
  }

  get dp(): number {
    return this.registration.dp;
  }

  get tp(): number {
    return this.registration.tp;
  }

  get ranks(): Registration['ranks'] {
    return this.registration.ranks;
  }

  /**
   * Per stage: activations that fit on the device, and on device plus host once delegation offloads
   * them, for the registered split of the layers or for `split` (a re-balance's; docs/rebalancing.md):
   * a stage given more layers holds more state and more activations per microbatch, so fewer fit.
   * The moved split is priced exactly as decideRebalance priced it, so the plan it published is the
   * plan the control step finds right, not one it undoes with a "recovery" a few iterations later.
   */
  caps(split?: readonly number[] | null): { device: number[]; host: number[] } {
    const { deviceBytes, activationBytes, hostBytes } = this.registration.memory;
    const n = this.registration.microbatches;
    const activationsIn = (bytes: number, acts: number) => (acts > 0 ? Math.max(1, Math.min(n, Math.floor(bytes / acts))) : n);
    const layers = this.registration.layers;
    const moved = layers && split && split.length === this.stages && split.join(',') !== layers.perStage.join(',');
    if (!moved) {
      return {
        device: deviceBytes.map((bytes, i) => activationsIn(bytes, activationBytes[i])),
        host: deviceBytes.map((bytes, i) => Math.max(activationsIn(bytes, activationBytes[i]), activationsIn(bytes + hostBytes, activationBytes[i]))),
      };
    }
    const sum = (values: readonly number[], perStage: readonly number[], s: number) => {
      const first = perStage.slice(0, s).reduce((a, b) => a + b, 0);
      let total = 0;
      for (let l = first; l < first + perStage[s]; l++) total += values[l];
      return total;
    };
    const device: number[] = [];
    const host: number[] = [];
    for (let s = 0; s < this.stages; s++) {
      // The registered room plus the state of the registered layers is the device; the moved split's state comes off it.
      const room = Math.max(0, deviceBytes[s] + sum(layers.stateBytes, layers.perStage, s) - sum(layers.stateBytes, split, s));
      const acts = sum(layers.activationBytes, split, s);
      device.push(activationsIn(room, acts));
      host.push(Math.max(device[s], activationsIn(room + hostBytes, acts)));
    }
    return { device, host };
  }

  /** The all-reduce as the registration describes it (null without `dataParallel`). */
  allReduce(): AllReduceModel | null {
    const { dataParallel: dp, network } = this.registration;
    if (!dp) return null;
    return {
      gradientBytes: dp.gradientBytes,
      latencyMs: dp.latencyMs ?? network?.latencyMs ?? 0,
      gbps: dp.gbps ?? network?.nominalGBps ?? DEFAULT_RING_GBPS,
      chunkBytes: dp.chunkBytes ?? DEFAULT_CHUNK_BYTES,
      inflight: dp.inflightChunks ?? DEFAULT_INFLIGHT_CHUNKS,
    };
  }
}
