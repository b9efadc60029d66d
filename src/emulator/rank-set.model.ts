import { Ack, ControlEvent, PublishedSchedule, Registration } from '../protocol/protocol-v1.type';
import { EmulatedJob, IterationResult, ReplicaPlan } from './emulated-job';
import { replicaPlans } from './replica-plans';
import { RankView } from './rank-view';

/** One iteration as the ranks recorded it. */
export interface RankIteration {
  iteration: number;
  /** The version each rank itself recorded running (index = rank). */
  versions: number[];
  /** The k_local each rank brought to the agreement. */
  local: number[];
  iterationMs: number;
  topologyVersion: number;
  /** Split version of the layers in force (0: the registered split). */
  layersVersion: number;
}

/**
 * The rank side of an emulated job without any I/O: every reporting rank's own protocol view, the
 * version agreement (all-reduce MIN of each rank's k_local, docs/protocol.md sec. 5.2), the
 * schedules they learned, and each iteration run in the model (EmulatedJob: ranks, fabric,
 * delays). RankGroup moves its messages over Redis; everything it decides is decided here.
 */
export class RankSet {
  /** Each reporting rank's own protocol state (index = rank). */
  readonly views: RankView[];
  /** Schedule contents by version (identical for every rank that GETs them; the model needs them). */
  private readonly contents = new Map<number, PublishedSchedule>();
  /** Committed schedules in the order any rank learned them. */
  private readonly commits: PublishedSchedule[] = [];
  private readonly plans = new Map<number, ReplicaPlan[]>();
  /** The iteration the ranks run next. */
  iteration = 0;
  /** Per iteration, what each rank recorded: the evidence for "no iteration mixed versions". */
  readonly history: RankIteration[] = [];

  /**
   * `agreement`: `min` (the protocol) or `skip`, which breaks it on purpose for tests of the checks:
   * every rank runs its own k_local, and the per-rank records show the mixed iterations.
   */
  constructor(readonly job: EmulatedJob, private readonly agreement: 'min' | 'skip' = 'min') {
    this.views = Array.from({ length: job.dp * job.stages }, (_, rank) => new RankView(rank));
  }

  /** The registration the job's ranks send; device memory per stage and host memory in activations (1 GB each). */
  registration(deviceActivations: number[], hostActivations: number): Registration {
    const { profile, dp, stages } = this.job;
    const dataParallel = this.job.dataParallelSpec();
    return {
      type: 'register',
      protocol: 1,
      jobId: this.job.jobId,
      stages,
      microbatches: profile.microbatches,
      dp,
      tp: 1,
      ranks: this.views.map(({ rank }) => {
        const locality = this.job.fabric?.locality(rank);
        return { rank, ...this.job.coordinatesOf(rank), tp: 0, node: `emulated-${rank}`, ...(locality !== undefined ? { locality } : {}) };
      }),
      memory: { deviceBytes: deviceActivations.map((a) => a * 1e9), activationBytes: new Array(stages).fill(1e9), hostBytes: hostActivations * 1e9 },
      computeMs: { fMs: profile.fMs, bMs: profile.bMs, wMs: profile.wMs },
      // The fabric's nominal latency: a link slow from the first iteration is still seen as slow.
      network: { latencyMs: Math.min(...profile.linkMs, Number.POSITIVE_INFINITY) === Number.POSITIVE_INFINITY ? 0 : Math.min(...profile.linkMs), nominalGBps: 1000 },
      ...(dataParallel ? { dataParallel } : {}),
      ...(this.job.layers ? { layers: this.job.layers } : {}),
    };
  }

  /** Rank `view` connects (sec. 4): the newest control entry's id and epoch, then the committed schedule. */
  connect(view: RankView, cursor: string, lastEpoch: number, schedule: PublishedSchedule): void {
    view.connect(cursor, lastEpoch, schedule);
    this.keep(schedule);
  }

  /** Committed schedules the ranks learned, oldest first. */
  learned(): readonly PublishedSchedule[] {
    return this.commits;
  }

  /** The schedule the job runs at `iteration` under the MIN agreement: the lowest k_local of all ranks. */
  agreedVersion(iteration: number): PublishedSchedule {
    const k = Math.min(...this.views.map((v) => v.localVersion(iteration)));
    return this.contents.get(k)!;
  }

  /** Iterations in which the ranks' own records disagree (must be none). */
  mixedIterations(): number[] {
    return this.history.filter((h) => new Set(h.versions).size > 1).map((h) => h.iteration);
  }

  /** The ranks agree on a version, switch topology with it if it carries one, and run the iteration in the model. */
  run(): IterationResult {
    const i = this.iteration;
    const local = this.views.map((v) => v.localVersion(i));
    const agreed = Math.min(...local);
    const versions = this.agreement === 'skip' ? local : local.map(() => agreed);
    this.views.forEach((v, r) => v.ran(versions[r]));
    // The engine runs one schedule per replica: the agreed one. Under a broken agreement the ranks'
    // records still say what each would have run; that is what the checks read.
    const schedule = this.contents.get(agreed)!;
    // Every rank runs the agreed version, so all of them switch topology at this same boundary.
    // A schedule without topology keeps the layout in force (the daemon sends one on every
    // schedule once the job has been re-mapped).
    if (schedule.topology && schedule.topology.version !== this.job.topologyVersion) this.job.applyTopology(schedule.topology);
    // Likewise the split of the layers (sec. 5.7): moved at this boundary, after a re-map of the same schedule.
    if (schedule.layers && schedule.layers.version !== this.job.layersVersion) this.job.applyLayers(schedule.layers);
    let plans = this.plans.get(schedule.version);
    if (!plans) {
      plans = replicaPlans(schedule, this.job.dp, this.job.stages, this.job.profile.microbatches);
      this.plans.set(schedule.version, plans);
    }
    const result = this.job.runIteration(i, plans, versions);
    this.history.push({ iteration: i, versions, local, iterationMs: result.iterationMs, topologyVersion: result.topologyVersion, layersVersion: result.layersVersion });
    this.iteration++;
    return result;
  }

  /**
   * A control event rank `view` read. Returns the committed version it learned whose content no
   * rank holds (it did not see the prepare): the caller GETs the schedule and passes it to keep().
   */
  onEvent(view: RankView, id: string, event: ControlEvent): number | null {
    const learned = view.onEvent(id, event);
    if (learned === null) return null;
    const held = this.contents.get(learned);
    if (!held) return learned;
    this.keep({ ...held, state: 'committed' });
    return null;
  }

  /**
   * Rank `view`'s answer to `prepare`, given the pending schedule it GETs: accepted iff the iteration
   * it runs next is before the effective iteration; null when the prepare was aborted or superseded.
   */
  answer(view: RankView, prepare: ControlEvent, pending: PublishedSchedule | null): Ack | null {
    if (!pending || pending.version !== prepare.version || pending.epoch < view.epoch) return null;
    this.contents.set(pending.version, pending);
    const accepted = this.iteration < pending.effectiveIteration;
    return { type: 'ack', protocol: 1, jobId: this.job.jobId, rank: view.rank, version: pending.version, epoch: pending.epoch, iteration: this.iteration, accepted, ...(accepted ? {} : { reason: 'late' }) };
  }

  /** Records a committed schedule's content (and, the first time, that the job learned it). */
  keep(schedule: PublishedSchedule): void {
    this.contents.set(schedule.version, schedule);
    if (!this.commits.some((c) => c.version === schedule.version)) this.commits.push(schedule);
  }
}
