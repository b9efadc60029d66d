import { FleetLinkPriorOf, fleetNamedKeys } from '../../core/fleet/fleet-link-prior';
import { FleetSlowGroup } from '../../core/fleet/fleet-slow-group.type';
import { JobControlInput, PipelineGroupPlan, TopologyView } from '../../core/control/control-input.type';
import { DetectorConfig } from '../../core/detect/detector-config.type';
import { RankPosition } from '../../core/detect/detection.type';
import { DetectionSnapshot, JobDetector } from '../../core/detect/job-detector';
import { parseSchedule } from '../../core/pipeline/schedule';
import defaults from '../../../config/default.json';
import { LinkObservation } from '../../core/detect/detection.type';
import { StragglerHistory } from '../../core/control/straggler-history';
import { detectorTolerances } from '../../core/control/detector-tolerances';
import { severeKeys, stragglingKeys } from '../../core/control/judge-decision';
import { dataParallelKey, pipelineKey } from '../../core/control/straggler-key';
import { LinkSample, PublishedSchedule, RankReport, Registration } from '../../protocol/protocol-v1.type';
import { IngestCounters } from '../ingest/ingest-counters.model';
import { OpenHandshake, SwitchState } from '../publish/switch-state.model';
import { DecisionLog } from './decision-log';
import { JobHistory } from './job-history';
import { JobOverridesState, OverridesChange } from './job-overrides.model';
import { JobOverrides } from '../../protocol/job-overrides';
import { EffectiveKnobs } from '../overrides/effective-knobs';
import { JobSpecView } from './job-spec.view';
import { LayerSplitHistory } from './layer-split-history.model';
import { LayoutTracker } from './layout-tracker.model';
import { RankProgress } from './rank-progress.model';

export function toObservation(l: LinkSample): LinkObservation {
  return { peer: l.peer, kind: l.kind, bytes: l.bytes, medianMs: l.medianMs, maxMs: l.maxMs, delegated: l.delegated, error: l.error ?? null };
}

/** What taking one valid report into a job did (JobRuntime.observeReport). */
export type ReportOutcome = 'accepted' | 'duplicate' | 'stale-layout';

/** Where a runtime starts from besides the registration (JobRegistry.adopt). */
export interface JobRuntimeOrigin {
  /** The registrations-stream entry this runtime was built from. */
  registrationId?: string;
  /** When this replica took the job: a job that never reports again expires counting from here. */
  adoptedAt?: number;
  /** Highest schedule version and fencing epoch known outside Redis's counters (an earlier runtime of the job). */
  knownVersion?: number;
  knownEpoch?: number;
}

/**
 * Everything one daemon replica keeps in memory about a job it owns, rebuilt from Redis (spec,
 * committed schedule, pending reports) when a replica takes the job over. Each part has one
 * owner (docs/job-state.md): the frozen registration (`spec`), the layout and its detector
 * (`layout`), the ranks' progress (`progress`, ingest and maintenance), the switch in flight
 * (`switching`, the publisher), ingest's counts (`ingestCounts`), the job page's history; what
 * is left here changes through named methods only.
 */
export class JobRuntime {
  readonly jobId: string;
  readonly spec: JobSpecView;
  readonly registrationId: string;
  readonly adoptedAt: number;
  readonly layout: LayoutTracker;
  readonly progress = new RankProgress();
  /** Links the fleet names slow around the job (setFleetPrior). */
  private fleetSlow: readonly FleetSlowGroup[] = [];
  private fleetNamedOf: ((key: string) => boolean) | null = null;
  readonly switching = new SwitchState();
  readonly ingestCounts = new IngestCounters();
  /** Recent link delays, iteration times and versions for the job page, in fixed-size memory. */
  readonly history: JobHistory;
  /** The newest control decisions, taken or not (GET /jobs/:id/decisions). */
  readonly decisions = new DecisionLog();
  /** How long this job's stragglers last (cost-aware switching). */
  readonly stragglers: StragglerHistory;
  /** The job's per-job overrides in force on this replica, and their changes (OverridesService). */
  readonly overrides = new JobOverridesState();
  /** The splits of the job's layers its schedules introduced: compute times compared across re-balances. */
  readonly splits: LayerSplitHistory;
  private inForce: PublishedSchedule | null = null;
  private evaluationWanted = true;
  /** Iteration at which a control step is due (requestEvaluationAt); Infinity: none. */
  private evaluationDueAt = Infinity;
  private letGo = false;
  private replayed = false;
  private fencedWrite = false;
  private heldVersion: number;
  private refinedLinks: string | null = null;
  private reportedEpoch: number;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    spec: Registration,
    readonly epoch: number,
    detection: DetectorConfig,
    origin: JobRuntimeOrigin = {},
    stragglerPrior: { priorIterations: number; priorWeight: number } = { priorIterations: defaults.control.stragglerPriorIterations, priorWeight: defaults.control.stragglerPriorWeight },
  ) {
    this.spec = new JobSpecView(spec);
    this.jobId = this.spec.jobId;
    this.registrationId = origin.registrationId ?? '';
    this.adoptedAt = origin.adoptedAt ?? 0;
    this.heldVersion = origin.knownVersion ?? 0;
    this.reportedEpoch = origin.knownEpoch ?? 0;
    this.history = new JobHistory(this.spec.stages, this.spec.dp);
    this.layout = new LayoutTracker(this.spec, detection);
    this.stragglers = new StragglerHistory({ ...stragglerPrior, holdIterations: detection.leaveAfter });
    this.splits = new LayerSplitHistory(spec);
  }

  /** The detector of the layout in force. */
  get detector(): JobDetector {
    return this.layout.detector;
  }

  /**
   * The fleet's prior on the job's links (fleetLinkPrior), kept for the detectors of later layouts
   * too, and the links it names slow (fleetSlowGroups), which a re-map prices (topologyView).
   */
  setFleetPrior(prior: FleetLinkPriorOf | null, slow: readonly FleetSlowGroup[] = []): void {
    this.layout.setFleetPrior(prior);
    // Read through the slots in force at the time asked, so a later re-map is seen.
    this.fleetNamedOf = prior ? fleetNamedKeys(prior, (dp, pp) => this.rankAt.get(`${dp},${pp}`)) : null;
    // Only reporting ranks are placed: the groups shrink to them (they cross to the planning worker).
    const placed = (ranks: number[]) => ranks.filter((r) => this.positionOf.has(r));
    this.fleetSlow = prior ? slow.map((g) => ({ ...g, from: placed(g.from), to: placed(g.to) })).filter((g) => g.from.length > 0 && g.to.length > 0) : [];
  }

  /** Whether a straggler key runs through a suspect the fleet named (GateContext.fleetNamed); false without a fleet prior. */
  readonly fleetNamed = (key: string): boolean => this.fleetNamedOf !== null && this.fleetNamedOf(key);

  /** The reporting ranks (tp 0) at their current slots. */
  get reporting(): readonly RankPosition[] {
    return this.layout.reporting;
  }

  get positionOf(): ReadonlyMap<number, RankPosition> {
    return this.layout.positionOf;
  }

  get rankAt(): ReadonlyMap<string, number> {
    return this.layout.rankAt;
  }

  /** The committed schedule in force (as far as this replica knows). */
  get committed(): PublishedSchedule | null {
    return this.inForce;
  }

  /** The plan in force as the control decision sees it (its resources are priced by the cost gate); null before the first. */
  planInForce(): JobControlInput['current'] {
    return this.inForce ? this.currentPlan(this.inForce) : null;
  }

  /** The straggler keys (StragglerHistory's names) the schedule in force was made for: none for the first plan and a recovery. */
  answeredKeys(): string[] {
    return (this.inForce?.reason.links ?? []).map((l) => (l.kind === 'pipeline' ? pipelineKey(l.dp ?? 0, l.link ?? 0) : dataParallelKey(l.fromRank, l.toRank)));
  }

  /** The switch in flight (read-only; SwitchState is changed by the publisher alone). */
  get handshake(): OpenHandshake | null {
    return this.switching.handshake;
  }

  /** Whether the next control step should decide (something changed, a decision was deferred, or its iteration came). */
  get needsEvaluation(): boolean {
    return this.evaluationWanted || this.progress.maxIteration >= this.evaluationDueAt;
  }

  /** Set when this replica lets go of the runtime (lease lost, job expired or rebuilt): no more control steps or metrics for it. */
  get released(): boolean {
    return this.letGo;
  }

  /**
   * Redis refused a schedule write of this runtime as fenced: the job's epoch is no longer `epoch`.
   * Discovery then takes the job again under a new epoch while the lease is this replica's, or lets
   * it go (JobRegistry.retakeFenced).
   */
  get fenced(): boolean {
    return this.fencedWrite;
  }

  /** False until the new owner has replayed the job's history: no decision from an empty detector. */
  get historyReplayed(): boolean {
    return this.replayed;
  }

  /**
   * Highest schedule version known outside Redis's counter: reported by ranks, or held by an
   * earlier runtime of this job. A version counter lost with Redis's data restarts above it.
   */
  get knownVersion(): number {
    return this.heldVersion;
  }

  /** Highest fencing epoch a rank has reported (reports' and acks' `epoch`). */
  get knownEpoch(): number {
    return this.reportedEpoch;
  }

  /** Every count of the job's messages and switches (GET /jobs/:id). */
  get counters(): Readonly<{ reports: number; acks: number; duplicates: number; rejected: number; prepares: number; commits: number; aborts: number }> {
    return { ...this.ingestCounts.snapshot(), ...this.switching.counters };
  }

  /**
   * The straggling links the schedule in force was last refined for (`control.refinePlanner`), as
   * a key ("dp:link,..."); null when not refined since the links last changed.
   */
  get refinedFor(): string | null {
    return this.refinedLinks;
  }

  /**
   * Whether the control step should refine the plan for the straggling links `links` now (second
   * phase, ControlService.refine): once per first plan and set of links, and only with that plan
   * in force: not while a first-phase switch is being published (`firstPhase` taken: asked again
   * for the step after it), nor when the first phase proposed one that was declined (what runs is
   * not a plan for these links). Never when `enabled` is false; forgotten once no link straggles.
   */
  refineDue(links: string | null, enabled: boolean, firstPhase: 'none' | 'taken' | 'declined'): boolean {
    if (links === null) {
      this.refinedLinks = null;
      return false;
    }
    if (!enabled || firstPhase === 'declined') return false;
    if (firstPhase === 'taken') {
      this.refinedLinks = null;
      this.requestEvaluation();
      return false;
    }
    if (this.refinedLinks === links) return false;
    this.refinedLinks = links;
    return true;
  }

  /**
   * Puts per-job overrides in force without a restart (`doc` null: cleared, `knobs` are then the
   * configuration's): the detector is reconfigured in place keeping what it learned, the straggler
   * history takes the new prior and hold, and the next control step decides with them.
   */
  applyOverrides(doc: JobOverrides | null, knobs: EffectiveKnobs, text: string | null, change?: OverridesChange): void {
    this.layout.reconfigure(knobs.detection, knobs.pauseDetection);
    this.stragglers.reconfigure({ priorIterations: knobs.switchCost.stragglerPriorIterations, priorWeight: knobs.switchCost.stragglerPriorWeight, holdIterations: knobs.detection.leaveAfter });
    this.overrides.set(doc, doc ? knobs : null, text);
    if (change) this.overrides.record(change);
    this.requestEvaluation();
  }

  requestEvaluation(): void {
    this.evaluationWanted = true;
  }

  /**
   * Asks for a control step once some rank reports `iteration`. For a verdict that can only change
   * as the iterations go by (a straggler declined while it is within the job's history of short
   * ones, a recovery under its bound): asked at once instead, ingest would decide it again at every
   * report batch, dozens of times an iteration on a wide job, each time to the same verdict.
   */
  requestEvaluationAt(iteration: number): void {
    if (iteration < this.evaluationDueAt) this.evaluationDueAt = iteration;
  }

  /** The control step decided on what it saw. */
  evaluated(): void {
    this.evaluationWanted = false;
    this.evaluationDueAt = Infinity;
  }

  release(): void {
    this.letGo = true;
  }

  /** A schedule write under this runtime's epoch was refused as fenced (SchedulePublisher). */
  noteFenced(): void {
    this.fencedWrite = true;
  }

  /** The job's epoch in Redis was found to be this runtime's after all: nothing to take again. */
  clearFenced(): void {
    this.fencedWrite = false;
  }

  markHistoryReplayed(): void {
    this.replayed = true;
  }

  /** A rank holds (reports or acknowledges) schedule version `version`. */
  noteHeldVersion(version: number): void {
    if (version > this.heldVersion) this.heldVersion = version;
  }

  /** A rank reported fencing epoch `epoch`. */
  noteReportedEpoch(epoch: number): void {
    if (epoch > this.reportedEpoch) this.reportedEpoch = epoch;
  }

  /** A committed schedule: its topology becomes pending until the ranks run it (or at once on adoption, `immediately`). */
  noteCommitted(schedule: PublishedSchedule, immediately = false): void {
    this.inForce = schedule;
    this.history.noteCommitted(schedule);
    this.splits.note(schedule);
    if (this.layout.noteCommitted(schedule.topology, immediately)) this.requestEvaluation();
  }

  /** The floor of the next version number: above every version the daemon or a rank has seen. */
  versionFloor(): number {
    return Math.max(this.heldVersion, this.inForce?.version ?? 0, this.switching.handshake?.schedule.version ?? 0);
  }

  /** Runs `task` after every task queued before it for this job: one control step at a time per job. */
  serialize<T>(task: () => Promise<T>): Promise<T> {
    const run = this.chain.then(task, task);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /**
   * Takes one valid, plausible report (ingest and `pipemorph replay` alike): the layout judges its
   * version, the detector its samples, progress its iteration. `changed` when a straggler state
   * flipped or a decision is due.
   */
  observeReport(report: RankReport, now: number): { outcome: ReportOutcome; changed: boolean } {
    const verdict = this.layout.acceptReport(report.scheduleVersion, report.iteration);
    // The first report of a committed re-map switched the detector: decide afresh once it has learned.
    if (verdict === 'switched') this.requestEvaluation();
    if (verdict === 'stale-layout') {
      // Written before the ranks switched to a re-mapped layout: its links name old neighbours.
      this.progress.noteIteration(report.rank, report.iteration, now, true, report.iterationMs);
      return { outcome: 'stale-layout', changed: false };
    }
    // Compute times as under the registered split of the layers, so a re-balance is not taken for a slowdown (docs/rebalancing.md).
    const work = this.splits.workRatio(this.positionOf.get(report.rank)?.pp ?? 0, report.scheduleVersion);
    const computeMs = work === 1 ? report.computeMs : { f: report.computeMs.f / work, b: report.computeMs.b / work, w: report.computeMs.w / work };
    const result = this.detector.observe(report.rank, report.iteration, computeMs, report.links.map(toObservation));
    if (result.duplicate) return { outcome: 'duplicate', changed: false };
    this.progress.noteIteration(report.rank, report.iteration, now, true, report.iterationMs);
    this.recordHistory(report);
    return { outcome: 'accepted', changed: result.changed || (!this.committed && this.needsEvaluation) };
  }

  /**
   * Keeps an accepted report's pipeline link times and the iteration time (the rank's own, else
   * the pace estimate) for the job page; call after progress.noteIteration.
   */
  recordHistory(report: RankReport): void {
    const me = this.positionOf.get(report.rank);
    if (!me) return;
    for (const l of report.links) {
      if (l.kind !== 'pipeline') continue;
      const peer = this.positionOf.get(l.peer);
      if (!peer || peer.dp !== me.dp || Math.abs(peer.pp - me.pp) !== 1) continue;
      this.history.noteLinkDelay(report.iteration, me.dp, Math.min(me.pp, peer.pp), l.medianMs);
    }
    this.history.noteIteration(report.iteration, report.scheduleVersion, report.iterationMs ?? this.progress.iterationMs);
  }

  /**
   * The input of a control step (the daemon's and `pipemorph replay`'s), or null when the step must
   * wait and is asked for again: one switch at a time, a committed re-map the ranks do not run yet
   * (the detector still describes the old layout), a fresh detector still learning, the re-plan
   * interval, except for a NIC failure without delegation, which leaves only the delegated path.
   * Learns the straggler episodes, and tells the detector how much extra delay each link absorbs
   * under the schedule in force (Eq. 1).
   */
  stepInput(snapshot: DetectionSnapshot, now: number, remapMinIntervalMs: number): JobControlInput | null {
    const knobs = this.detector.config;
    this.stragglers.observe(this.progress.maxIteration, stragglingKeys(snapshot), stragglingKeys(snapshot, true), severeKeys(snapshot, knobs.severeExtraMs, knobs.computeSlowRatio));
    if (this.switching.handshake || this.layout.pendingTopology || this.progress.maxIteration < this.layout.holdUntilIteration) {
      this.requestEvaluation();
      return null;
    }
    const inForce = this.inForce;
    const input = this.controlInput(snapshot, inForce ? this.topologyView(snapshot, now, remapMinIntervalMs) : undefined);
    if (!inForce) return input;
    for (const t of detectorTolerances(input, inForce.pipelines)) this.detector.setTolerance(t.dp, t.link, t.toleranceMs);
    const delegated = new Set(inForce.delegation.map((d) => d.rank));
    const urgent = input.links.some((l) => l.nicFailure && (!delegated.has(l.upRank) || !delegated.has(l.downRank)));
    if (now < this.switching.notBefore && !urgent) {
      this.requestEvaluation();
      return null;
    }
    return input;
  }

  /** Placement and data-parallel links for the re-map decision; re-mapping waits `minIntervalMs` after the last one and for it to be applied. */
  topologyView(snapshot: DetectionSnapshot, now: number, minIntervalMs: number): TopologyView {
    const S = this.spec.stages;
    const D = this.spec.dp;
    const rankAt = new Array<number>(S * D).fill(-1);
    for (const r of this.reporting) rankAt[r.dp * S + r.pp] = r.rank;
    return {
      rankAt,
      rings: this.layout.topology?.rings ?? Array.from({ length: S }, () => Array.from({ length: D }, (_, d) => d)),
      localityOf: this.spec.localityOf,
      allReduce: rankAt.includes(-1) ? null : this.spec.allReduce(),
      dataParallelLinks: snapshot.dataParallelLinks.map((l) => ({ fromRank: l.fromRank, toRank: l.toRank, extraMs: l.extraMs, straggler: l.straggler })),
      remapAllowed: !this.layout.pendingTopology && now - this.switching.lastRemapAt >= minIntervalMs,
      ...(this.fleetSlow.length > 0 ? { fleetSlow: this.fleetSlow } : {}),
    };
  }

  /**
   * What the control decision sees. `topology` is given for a decision that may re-map; without it
   * the layout in force is described all the same with re-mapping not allowed, so that every
   * prediction (the initial one too) prices the data-parallel all-reduce on its measured rings.
   */
  controlInput(snapshot: DetectionSnapshot, topology: TopologyView = { ...this.topologyView(snapshot, 0, 0), remapAllowed: false }): JobControlInput {
    const S = this.spec.stages;
    const registered = this.spec.registration.computeMs;
    // Measured (and registered) times are as under the registered split of the layers: scaled to the split in force.
    const pick = (measured: number[], given: readonly number[] | undefined, i: number) => (Number.isFinite(measured[i]) ? measured[i] : given ? given[i] : 1) * this.splits.inForceRatio(i);
    const caps = this.spec.caps(this.splits.inForce);
    return {
      stages: S,
      microbatches: this.spec.microbatches,
      dpSize: this.spec.dp,
      fMs: Array.from({ length: S }, (_, i) => pick(snapshot.stageTimes.fMs, registered?.fMs, i)),
      bMs: Array.from({ length: S }, (_, i) => pick(snapshot.stageTimes.bMs, registered?.bMs, i)),
      wMs: Array.from({ length: S }, (_, i) => pick(snapshot.stageTimes.wMs, registered?.wMs, i)),
      deviceCaps: caps.device,
      hostCaps: caps.host,
      links: snapshot.pipelineLinks.map((l) => ({
        dp: l.dp,
        link: l.link,
        upRank: l.upRank,
        downRank: l.downRank,
        baselineMs: l.baselineMs,
        extraMs: l.extraMs,
        straggler: l.straggler,
        nicFailure: l.reason === 'nic-failure',
      })),
      current: this.inForce ? this.currentPlan(this.inForce) : null,
      topology,
    };
  }

  private currentPlan(schedule: PublishedSchedule): JobControlInput['current'] {
    const pipelines: PipelineGroupPlan[] = schedule.pipelines.map((p) => ({
      dpReplicas: p.dpReplicas,
      warmup: p.warmup,
      schedule: parseSchedule(p.stages, this.spec.stages, this.spec.microbatches),
    }));
    return { pipelines, delegation: schedule.delegation };
  }
}
