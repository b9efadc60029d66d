import { PublishedSchedule, Registration } from '../../protocol/protocol-v1.type';

/**
 * The splits of a job's layers into stages that its schedules introduced (docs/rebalancing.md),
 * so that compute times measured under one split can be compared with those under another. The
 * detector learns each rank's compute baseline under the registered split; a re-balance changes
 * how much work a stage does, so reported times are scaled to the registered split before the
 * detector sees them (`toRegistered`), and the stage times planned with are scaled back to the
 * split in force (`toInForce`). Without `layers` in the registration every factor is 1.
 */
export class LayerSplitHistory {
  /** Declared F+B+W per layer, prefix sums. */
  private readonly prefix: Float64Array | null;
  private readonly registered: readonly number[] | null;
  /** Splits by the schedule version that introduced them, oldest first (a few: each re-balance adds one). */
  private readonly splits: Array<{ sinceVersion: number; layersVersion: number; perStage: readonly number[] }> = [];
  private static readonly KEPT = 8;

  constructor(registration: Registration) {
    const layers = registration.layers;
    this.registered = layers ? layers.perStage : null;
    if (!layers) {
      this.prefix = null;
      return;
    }
    this.prefix = new Float64Array(layers.fMs.length + 1);
    for (let l = 0; l < layers.fMs.length; l++) this.prefix[l + 1] = this.prefix[l] + layers.fMs[l] + layers.bMs[l] + layers.wMs[l];
  }

  /** A committed schedule: its split, when it introduces one. */
  note(schedule: PublishedSchedule): void {
    const layers = schedule.layers;
    if (!layers || !this.prefix) return;
    const last = this.splits[this.splits.length - 1];
    if (last && last.layersVersion === layers.version) return;
    this.splits.push({ sinceVersion: layers.sinceVersion, layersVersion: layers.version, perStage: layers.perStage.slice() });
    if (this.splits.length > LayerSplitHistory.KEPT) this.splits.shift();
  }

  /** The split in force (the newest noted, else the registered one; null without layers). */
  get inForce(): readonly number[] | null {
    return this.splits[this.splits.length - 1]?.perStage ?? this.registered;
  }

  /** What stage `pp` of a report of schedule `version` did, as a multiple of what it does under the registered split: its times divided by it are comparable. */
  workRatio(pp: number, version: number): number {
    let split: readonly number[] | null = this.registered;
    for (const s of this.splits) if (s.sinceVersion <= version) split = s.perStage;
    return this.ratioOf(split, pp);
  }

  /** The same for the split in force. */
  inForceRatio(pp: number): number {
    return this.ratioOf(this.inForce, pp);
  }

  private ratioOf(split: readonly number[] | null, pp: number): number {
    if (!this.prefix || !this.registered || !split || split === this.registered || pp >= split.length) return 1;
    const work = (p: readonly number[]) => {
      const first = p.slice(0, pp).reduce((a, b) => a + b, 0);
      return this.prefix![first + p[pp]] - this.prefix![first];
    };
    const registered = work(this.registered);
    return registered > 0 ? work(split) / registered : 1;
  }
}
