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

  /** Per stage: activations that fit on the device, and on device plus host once delegation offloads them. */
  caps(): { device: number[]; host: number[] } {
    const { deviceBytes, activationBytes, hostBytes } = this.registration.memory;
    const n = this.registration.microbatches;
    const activationsIn = (bytes: number, i: number) => (activationBytes[i] > 0 ? Math.max(1, Math.min(n, Math.floor(bytes / activationBytes[i]))) : n);
    return {
      device: deviceBytes.map((bytes, i) => activationsIn(bytes, i)),
      host: deviceBytes.map((bytes, i) => Math.max(activationsIn(bytes, i), activationsIn(bytes + hostBytes, i))),
    };
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
