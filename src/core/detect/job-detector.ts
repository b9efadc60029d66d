import { InputError } from '../input-error';
import { DataParallelLinkTracker } from './data-parallel-link-tracker';
import { ComputeObservation, DetectionNoise, DetectionSnapshot, FleetLinkPrior, JobTopology, LinkObservation, ObserveResult } from './detection.type';
import { DetectorConfig, validateDetectorConfig } from './detector-config.type';
import { BACKWARD, FORWARD, NominalNetwork, PipelineLinkTracker } from './pipeline-link-tracker';
import { RankComputeTracker } from './rank-compute-tracker';

export * from './detection.type';

function checkTopology(t: JobTopology): void {
  if (!Number.isInteger(t.stages) || t.stages < 1) throw new InputError(`topology: stages must be a positive integer, got ${t.stages}`);
  if (!Number.isInteger(t.dpSize) || t.dpSize < 1) throw new InputError(`topology: dpSize must be a positive integer, got ${t.dpSize}`);
  const ranks = new Set<number>();
  const positions = new Set<number>();
  for (const { rank, dp, pp } of t.ranks) {
    if (!Number.isInteger(rank) || rank < 0) throw new InputError(`topology: rank must be an integer >= 0, got ${rank}`);
    if (!Number.isInteger(dp) || dp < 0 || dp >= t.dpSize) throw new InputError(`topology: rank ${rank} has dp ${dp}, outside 0..${t.dpSize - 1}`);
    if (!Number.isInteger(pp) || pp < 0 || pp >= t.stages) throw new InputError(`topology: rank ${rank} has pp ${pp}, outside 0..${t.stages - 1}`);
    if (ranks.has(rank)) throw new InputError(`topology: rank ${rank} listed twice`);
    if (positions.has(dp * t.stages + pp)) throw new InputError(`topology: two reporting ranks at dp ${dp}, pp ${pp}`);
    ranks.add(rank);
    positions.add(dp * t.stages + pp);
  }
}

/**
 * Iterations without a report after which a rank is taken to have restarted (RankComputeTracker.resumed):
 * more than a few lost reports, as a restart's downtime is (tens of iterations to rebuild communicators).
 */
const RESUMED_AFTER = 5;

/**
 * Straggler detection for one job: per-iteration rank reports in, straggler states out.
 * Pipeline links are judged against their own healthy baseline and the Eq. 1 tolerance of
 * the schedule in force, data-parallel links against their peers, ranks' compute against the
 * same stage elsewhere. Memory is O((links + ranks) x windowSize); observe() does no sorting.
 */
export class JobDetector {
  private readonly stages: number;
  private readonly indexOf = new Map<number, number>();
  private readonly rankOf: Float64Array;
  private readonly dpOf: Int32Array;
  private readonly ppOf: Int32Array;
  /** Rank index at (dp * stages + pp), -1 when none reports there. */
  private readonly indexAt: Int32Array;
  /** Rank indices in rank-number order and in (dp, pp) order, for sorted snapshots without sorting. */
  private readonly byRankNumber: Int32Array;
  private readonly byPosition: Int32Array;
  private readonly lastIteration: Float64Array;
  private readonly pipeline: PipelineLinkTracker;
  private readonly dataParallel: DataParallelLinkTracker;
  private readonly compute: RankComputeTracker;
  private knobs: DetectorConfig;
  private suspended = false;
  private priorLinks = 0;

  constructor(topology: JobTopology, config: DetectorConfig, nominal?: { latencyMs?: number; gbps?: number }) {
    const problems = validateDetectorConfig(config);
    if (problems.length > 0) throw new InputError(`detector config: ${problems.join('; ')}`);
    this.knobs = { ...config };
    config = this.knobs;
    checkTopology(topology);
    const { stages, dpSize, ranks } = topology;
    this.stages = stages;
    this.rankOf = Float64Array.from(ranks, (r) => r.rank);
    this.dpOf = Int32Array.from(ranks, (r) => r.dp);
    this.ppOf = Int32Array.from(ranks, (r) => r.pp);
    this.indexAt = new Int32Array(stages * dpSize).fill(-1);
    ranks.forEach((r, i) => {
      this.indexOf.set(r.rank, i);
      this.indexAt[r.dp * stages + r.pp] = i;
    });
    this.byRankNumber = Int32Array.from(ranks.keys()).sort((a, b) => ranks[a].rank - ranks[b].rank);
    this.byPosition = this.indexAt.filter((i) => i >= 0);
    this.lastIteration = new Float64Array(ranks.length).fill(-Infinity);
    const latencyMs = nominal?.latencyMs ?? 0;
    const gbps = nominal?.gbps ?? Number.NaN;
    const network: NominalNetwork | null = nominal && gbps > 0 && latencyMs >= 0 ? { latencyMs, gbps } : null;
    this.pipeline = new PipelineLinkTracker(config, stages, dpSize, network);
    const localityOf = topology.localityOf;
    const locality = localityOf && localityOf.size > 0 ? ranks.map((r) => localityOf.get(r.rank) ?? '') : null;
    this.dataParallel = new DataParallelLinkTracker(config, this.rankOf, this.ppOf, network, locality);
    this.compute = new RankComputeTracker(config, stages, dpSize, this.ppOf);
  }

  /** The knobs in force (a copy). */
  get config(): DetectorConfig {
    return { ...this.knobs };
  }

  /** Whether flagging is suspended (suspend). */
  get flaggingSuspended(): boolean {
    return this.suspended;
  }

  /**
   * New knobs at run time, without losing what was learned: every window keeps its newest samples
   * (as many as the new window size holds; none is made up when it grows), baselines, EWMAs,
   * sample counts, straggler states and the streaks counted towards a flip are kept. New
   * thresholds (enterAfter, leaveAfter, severeEnterAfter, ratios, floors) judge each link's or
   * rank's next sample; a state does not flip at the reconfiguration itself. Invalid knobs
   * (validateDetectorConfig) throw an InputError and change nothing.
   */
  reconfigure(config: DetectorConfig): void {
    const problems = validateDetectorConfig(config);
    if (problems.length > 0) throw new InputError(`detector config: ${problems.join('; ')}`);
    this.knobs = { ...config };
    this.pipeline.reconfigure(this.knobs);
    this.dataParallel.reconfigure(this.knobs);
    this.compute.reconfigure(this.knobs);
  }

  /**
   * Suspends (true) or resumes (false) flagging stragglers. While suspended the detector goes on
   * measuring and judging every sample as usual (windows, baselines, hysteresis), but a link or
   * rank that becomes a straggler is held back: the snapshot reports it as healthy
   * (`straggler: false`), activeStragglerCount leaves it out and observe() does not say `changed`
   * for it. Exceptions: a failed NIC is always reported (a failed link without delegation stalls
   * the job), and stragglers flagged before the suspension stay flagged until they recover.
   * Resuming reports at once every held-back one that still straggles. True when what the
   * detector reports changed.
   */
  suspend(suspended: boolean): boolean {
    this.suspended = suspended;
    const a = this.pipeline.suspend(suspended);
    const b = this.dataParallel.suspend(suspended);
    const c = this.compute.suspend(suspended);
    return a || b || c;
  }

  /**
   * One rank's report for one iteration. Idempotent: a (rank, iteration) at or below the last
   * iteration seen from that rank is a duplicate and changes nothing (accepted false, duplicate
   * true). Unknown rank -> accepted false. Links to a peer that is not a neighbour of the right
   * kind, or with unusable timing, are ignored and counted.
   */
  observe(rank: number, iteration: number, compute: ComputeObservation, links: readonly LinkObservation[]): ObserveResult {
    const i = this.indexOf.get(rank);
    if (i === undefined || !Number.isFinite(iteration)) return { accepted: false, duplicate: false, ignoredLinks: links.length, changed: false };
    if (iteration <= this.lastIteration[i]) return { accepted: false, duplicate: true, ignoredLinks: 0, changed: false };
    // A rank silent for RESUMED_AFTER iterations or more has restarted: its first samples are a warm-up.
    if (iteration - this.lastIteration[i] > RESUMED_AFTER) this.compute.resumed(i);
    this.lastIteration[i] = iteration;
    const { f, b, w } = compute;
    let changed = false;
    if (f >= 0 && b >= 0 && w >= 0 && f + b + w < Infinity) changed = this.compute.observe(i, f, b, w);
    const dp = this.dpOf[i];
    const pp = this.ppOf[i];
    let ignored = 0;
    for (let k = 0; k < links.length; k++) {
      const link = links[k];
      const peer = this.indexOf.get(link.peer);
      // A clean sample must carry a time; a failed one is useful without.
      if (peer === undefined || (link.error === null && !(link.medianMs >= 0 && link.medianMs < Infinity))) {
        ignored++;
        continue;
      }
      const peerDp = this.dpOf[peer];
      const peerPp = this.ppOf[peer];
      if (link.kind === 'pipeline' && peerDp === dp && peerPp === pp + 1) {
        if (this.pipeline.observe(dp, pp, FORWARD, link)) changed = true;
      } else if (link.kind === 'pipeline' && peerDp === dp && peerPp === pp - 1) {
        if (this.pipeline.observe(dp, peerPp, BACKWARD, link)) changed = true;
      } else if (link.kind === 'data-parallel' && peerPp === pp && peerDp !== dp) {
        if (this.dataParallel.observe(i, peer, link)) changed = true;
      } else {
        ignored++;
      }
    }
    return { accepted: true, duplicate: false, ignoredLinks: ignored, changed };
  }

  /**
   * Eq. 1 tolerance of pipeline link `link` in replica `dp` under the schedule in force (ms):
   * extra delay beyond it is bad even below the delegation threshold. Default Infinity until
   * set; negative counts as 0; NaN and out-of-range links are ignored.
   */
  setTolerance(dp: number, link: number, toleranceMs: number): void {
    this.pipeline.setTolerance(dp, link, toleranceMs);
  }

  /**
   * What the fleet knows of the job's links (fleetLinkPrior), by rank numbers; null forgets it.
   * A link the fleet names slow becomes a straggler on its first bad sample. Judged from each
   * link's next sample.
   */
  setFleetPrior(prior: ((fromRank: number, toRank: number) => FleetLinkPrior | null) | null): void {
    const S = this.stages;
    const dpSize = this.indexAt.length / S;
    this.priorLinks = 0;
    for (let dp = 0; dp < dpSize; dp++) {
      for (let link = 0; link + 1 < S; link++) {
        const up = this.indexAt[dp * S + link];
        const down = this.indexAt[dp * S + link + 1];
        const told = prior && up >= 0 && down >= 0 ? prior(this.rankOf[up], this.rankOf[down]) : null;
        if (told) this.priorLinks++;
        this.pipeline.setFleetPrior(dp, link, told);
      }
    }
    this.dataParallel.setFleetPrior(prior ? (from, to) => prior(this.rankOf[from], this.rankOf[to]) : null);
    if (!prior) return;
    // Rings: each rank to the same stage of the next replica, as rank reports name them.
    for (let dp = 0; dpSize > 1 && dp < dpSize; dp++) {
      for (let pp = 0; pp < S; pp++) {
        const from = this.indexAt[dp * S + pp];
        const to = this.indexAt[((dp + 1) % dpSize) * S + pp];
        const told = from >= 0 && to >= 0 ? prior(this.rankOf[from], this.rankOf[to]) : null;
        if (told) this.priorLinks++;
      }
    }
  }

  /** Links the fleet prior last set names slow (pipeline links, and ring links one per direction). */
  fleetPriorLinks(): number {
    return this.priorLinks;
  }

  snapshot(): DetectionSnapshot {
    const stages = this.stages;
    const indexAt = this.indexAt;
    return {
      pipelineLinks: this.pipeline.states((dp, pp) => this.rankOf[indexAt[dp * stages + pp]]),
      dataParallelLinks: this.dataParallel.states(this.byRankNumber),
      compute: this.compute.states(this.byPosition, this.rankOf, this.dpOf),
      stageTimes: this.compute.stageTimes(),
    };
  }

  /** The job's tail rate and the severe-entry rule it sets (DetectorConfig.severeChanceRate). */
  noise(): DetectionNoise {
    return { tailRate: this.pipeline.tailRate, severeEnterAfter: this.pipeline.severeEnterAfter };
  }

  /** Stragglers only, cheap: pipeline links + data-parallel links + ranks that straggle now. */
  activeStragglerCount(): number {
    return this.pipeline.activeCount + this.dataParallel.activeCount + this.compute.activeCount;
  }

  /** Tracked links (pipeline link directions plus directed data-parallel links), the unit of the memory benchmark. */
  linkCount(): number {
    return this.pipeline.directionCount + this.dataParallel.linkCount;
  }
}
