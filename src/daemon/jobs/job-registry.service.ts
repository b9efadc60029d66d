import { Inject, Injectable, Logger } from '@nestjs/common';
import { hostname } from 'node:os';
import { Clock } from '../../core/clock/clock.type';
import { PublishedSchedule, Registration } from '../../protocol/protocol-v1.type';
import { jobKeys } from '../../protocol/redis-keys';
import { CLOCK } from '../clock/clock.token';
import { PIPEMORPH_CONFIG, PipemorphConfig } from '../config/pipemorph-config.type';
import { MetricsService } from '../metrics/metrics.service';
import { OverridesService } from '../overrides/overrides.service';
import { SchedulePublisher } from '../publish/schedule-publisher.service';
import { JOB_STORE, JobStore } from '../store/job-store.repository';
import { fleetLinkPrior } from '../../core/fleet/fleet-link-prior';
import { fleetSlowGroups } from '../../core/fleet/fleet-slow-groups';
import { FleetView } from '../../core/fleet/fleet-view.type';
import { JobRuntime } from './job-runtime';

/** Whether a schedule covers exactly this job's replicas, stages and microbatches. */
function fitsShape(schedule: PublishedSchedule, spec: Registration): boolean {
  const replicas = schedule.pipelines.flatMap((p) => p.dpReplicas).sort((a, b) => a - b);
  return (
    replicas.length === spec.dp &&
    replicas.every((dp, i) => dp === i) &&
    schedule.pipelines.every((p) => p.warmup.length === spec.stages && p.stages.length === spec.stages && p.stages.every((ops) => ops.length === 3 * spec.microbatches))
  );
}

/** Jobs renewed or taken at once by a discovery: bounded, so a thousand jobs do not open a thousand requests at a time. */
const DISCOVERY_CONCURRENCY = 32;
/** How many times as often discovery runs while jobs change hands (JobRegistry.discoveryDelayMs). */
const CATCH_UP_FACTOR = 4;

/**
 * How far above its fair share (ceil(jobs / live replicas)) a replica may be before it hands jobs
 * back: a replica takes jobs only up to its share, and sheds down to it only once it owns more than
 * share x (1 + SHARE_SLACK), so a job registered or expired does not move jobs back and forth.
 */
export const SHARE_SLACK = 0.1;

/** A replica's fair share of `jobs` among `replicas` live ones: what it takes up to. */
export function fairShare(jobs: number, replicas: number): number {
  return replicas <= 1 ? Number.POSITIVE_INFINITY : Math.max(1, Math.ceil(jobs / replicas));
}

/** Above this many jobs a replica hands the excess back (down to its fair share). */
export function shedAbove(jobs: number, replicas: number): number {
  const share = fairShare(jobs, replicas);
  return Number.isFinite(share) ? Math.max(share, Math.floor(share * (1 + SHARE_SLACK))) : share;
}

/** Runs `task` over `items`, at most `limit` at a time; resolves when all have settled, rejects with the first error. */
async function inParallel<T>(items: readonly T[], limit: number, task: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  let failure: unknown = null;
  const lane = async () => {
    while (next < items.length) {
      const item = items[next++];
      try {
        await task(item);
      } catch (error) {
        failure ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  if (failure !== null) throw failure;
}

/**
 * The jobs this replica owns. A job is owned through a lease in Redis; taking a job bumps its
 * fencing epoch, so the previous owner can no longer publish for it. Replicas share the work
 * by taking unowned jobs as they discover them, each up to its fair share: every discovery marks
 * the replica live in Redis (REPLICAS_INDEX, on Redis's clock, for a lease) and reads how many are
 * live; a replica takes jobs only while it owns fewer than ceil(jobs / live replicas), and hands
 * back the excess (offered, and led here until a replica under its share takes the lease over in
 * one step between switches: shedExcess) once it owns more than that share x (1 + SHARE_SLACK),
 * e.g. when a replica joins. Before (issue 23, item 3) the
 * first replica to discover took every job and one that joined later took none.
 */
@Injectable()
export class JobRegistry {
  /**
   * The owner id written into leases: `jobs.ownerId` (e.g. the pod name, stable across container
   * restarts, so a restarted daemon takes its own jobs back at once), else unique per process.
   */
  readonly replicaId: string;
  private readonly owned = new Map<string, JobRuntime>();
  /** Led jobs offered to the replicas under their share (shedExcess): still led here until one takes them. */
  private readonly offered = new Set<string>();
  /** The newest fleet view (FleetService), handed to each job this replica starts to lead as its prior (fleet.prior). */
  private fleetView: FleetView | null = null;
  private readonly byReportsStream = new Map<string, JobRuntime>();
  /** Jobs just taken: their idle pending entries must be claimed before new ones are read. */
  private readonly adoptedSinceClaim = new Set<string>();
  private readonly logger = new Logger(JobRegistry.name);
  /** The discovery running, if any (discover). */
  private discovering: Promise<void> | null = null;
  /** Jobs being taken (take): one adoption per job, whoever asks. */
  private readonly taking = new Map<string, Promise<JobRuntime | undefined>>();
  /** Live replicas (this one included) at the last heartbeat, and jobs registered as last listed (plus registrations seen since). */
  private liveReplicas = 1;
  private jobsKnown = 0;
  /** Until then (clock ms) discovery runs CATCH_UP_FACTOR times as often (discoveryDelayMs). */
  private catchUpUntil = Number.NEGATIVE_INFINITY;

  constructor(
    @Inject(JOB_STORE) private readonly store: JobStore,
    @Inject(PIPEMORPH_CONFIG) private readonly config: PipemorphConfig,
    private readonly publisher: SchedulePublisher,
    private readonly metrics: MetricsService,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly overrides: OverridesService,
  ) {
    this.replicaId = config.jobs.ownerId || `${hostname()}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    // A replica joining takes its share while the others hand it back: at the faster pace too.
    this.catchUp();
  }

  /**
   * How long until the next discovery: jobs.discoveryIntervalMs, or a CATCH_UP_FACTOR-th of it for
   * one lease after the live replicas changed or a lease was lost here. Jobs change hands then (a
   * replica's jobs freed, a share handed back); each waits, unled, for the next discovery of the
   * replica that takes it, so that wait is cut where it occurs, not on every pass (bench:chaos-scale:
   * a job handed back after a SIGSTOP waited 1.1 s for it).
   */
  get discoveryDelayMs(): number {
    const interval = this.config.jobs.discoveryIntervalMs;
    return this.clock.now() < this.catchUpUntil ? Math.ceil(interval / CATCH_UP_FACTOR) : interval;
  }

  private catchUp(): void {
    this.catchUpUntil = this.clock.now() + this.config.jobs.leaseMs;
  }

  /**
   * The newest fleet view: every led job takes it as its prior now (fleet.prior), and each job
   * this replica starts to lead from now on. Returns the links known slow across the led jobs.
   */
  setFleetView(view: FleetView): number {
    this.fleetView = view;
    if (!this.config.fleet.prior) return 0;
    let slow = 0;
    for (const job of this.owned.values()) {
      if (job.released) continue;
      job.setFleetPrior(fleetLinkPrior(view, job.jobId, job.spec.ranks), fleetSlowGroups(view, job.jobId, job.spec.ranks));
      slow += job.detector.fleetPriorLinks();
    }
    return slow;
  }

  get(jobId: string): JobRuntime | undefined {
    return this.owned.get(jobId);
  }

  forStream(stream: string): JobRuntime | undefined {
    return this.byReportsStream.get(stream);
  }

  all(): JobRuntime[] {
    return [...this.owned.values()];
  }

  /** The jobs taken since the last call, each handed out once: ingest replays their history and claims their pending entries. */
  takeAdopted(): string[] {
    const taken = [...this.adoptedSinceClaim];
    this.adoptedSinceClaim.clear();
    return taken;
  }

  /** Hands adopted jobs whose claim failed out again at the next pass (those still led here). */
  returnAdopted(jobIds: readonly string[]): void {
    for (const jobId of jobIds) if (this.owned.has(jobId)) this.adoptedSinceClaim.add(jobId);
  }

  reportStreams(): string[] {
    return [...this.byReportsStream.keys()];
  }

  /**
   * Takes unowned jobs, renews leases of owned ones and lets go of jobs whose lease was lost; then
   * reads the per-job overrides of the jobs it leads (in the background, between their control steps).
   * One discovery at a time (a call during one gets that one). Jobs are renewed and taken
   * DISCOVERY_CONCURRENCY at a time, not one round trip after the other: with a thousand jobs a
   * sequential pass took a round trip per job and lease (issue 23, item 6).
   */
  discover(): Promise<void> {
    return (this.discovering ??= this.discoverOnce().finally(() => (this.discovering = null)));
  }

  /** Live replicas (this one included) as last read from Redis. */
  get replicas(): number {
    return this.liveReplicas;
  }

  /** How many jobs this replica takes up to now: its fair share among the live replicas. */
  get share(): number {
    return fairShare(this.jobsKnown, this.liveReplicas);
  }

  private async discoverOnce(): Promise<void> {
    const ttl = this.config.jobs.leaseMs;
    await inParallel(this.all(), DISCOVERY_CONCURRENCY, async (job) => {
      if (job.fenced && (await this.retakeFenced(job))) return;
      if (await this.store.renewLease(job.jobId, this.replicaId, ttl)) return;
      if (await this.restoreLost(job)) return;
      if (this.offered.has(job.jobId)) {
        // Offered and taken: the taker leads it since it moved the lease (shedExcess).
        this.logger.log(`job ${job.jobId}: handed to a replica under its share`);
        this.metrics.jobsHandedOff.inc();
      } else {
        this.logger.warn(`job ${job.jobId}: lease lost to another replica`);
        this.metrics.leaseLosses.inc();
      }
      this.drop(job.jobId);
      this.catchUp();
    });
    // Liveness for a lease, as the jobs' leases: a replica killed is counted until its jobs are free.
    const before = this.liveReplicas;
    this.liveReplicas = Math.max(1, await this.store.replicaHeartbeat(this.replicaId, ttl).catch(() => this.liveReplicas));
    if (this.liveReplicas !== before) this.catchUp();
    const jobIds = await this.store.listJobs();
    this.jobsKnown = jobIds.length;
    this.metrics.jobsRegistered.set(jobIds.length);
    await this.shedExcess();
    // No more takes in flight than the room left under the share: a take refused (another replica's
    // lease) frees its lane for the next job, so the share fills up whichever jobs are free. In a
    // random order, so replicas that discover at the same time mostly try different jobs.
    const unowned = jobIds.filter((jobId) => !this.owned.has(jobId));
    for (let k = unowned.length - 1; k > 0; k--) {
      const j = Math.floor(Math.random() * (k + 1));
      [unowned[k], unowned[j]] = [unowned[j], unowned[k]];
    }
    const room = this.share - this.owned.size - this.taking.size;
    if (room > 0) {
      // Only a free lease (or one under this owner id), or one its holder offers, can be taken: the
      // leases are read at once first. Tried blind, every job held elsewhere cost a refused take, one
      // lane's round trip after another: a survivor of a replica's loss with room for its last 2 jobs
      // tried 52 held ones and took 4 s more, under load, to lead every job again (bench:chaos-scale).
      // Free jobs first: they have no leader; an offered one still has its holder's.
      const leases = await Promise.all(unowned.map((jobId) => this.store.leaseOf(jobId).catch(() => null)));
      const free: Array<[string, string | null]> = [];
      const offered: Array<[string, string | null]> = [];
      unowned.forEach((jobId, k) => {
        const lease = leases[k];
        if (lease === null) return;
        if (lease.owner === null || lease.owner === this.replicaId) free.push([jobId, null]);
        else if (lease.offeredBy === lease.owner) offered.push([jobId, lease.owner]);
      });
      await inParallel([...free, ...offered], Math.min(DISCOVERY_CONCURRENCY, room), ([jobId, from]) => this.take(jobId, false, from));
    }
    this.metrics.jobsOwned.set(this.owned.size);
    for (const job of this.all()) this.overrides.poll(job);
  }

  /**
   * Takes one job that is not owned here, if its lease is free (a new registration, or discovery):
   * O(1) round trips, whatever the number of jobs owned. A job is taken once even when discovery
   * and a registration ask for it at the same time (two adoptions would bump its epoch twice and
   * leave a runtime behind). `from`: the replica offering it (shedExcess), whose lease moves here
   * in one step; else only a free lease is taken.
   */
  take(jobId: string, registered = false, from: string | null = null): Promise<JobRuntime | undefined> {
    const owned = this.owned.get(jobId);
    if (owned) return Promise.resolve(owned);
    let taking = this.taking.get(jobId);
    if (!taking) {
      if (registered) this.jobsKnown++;
      // Up to the fair share only (jobs being taken count): the rest is left to the other live replicas.
      if (this.owned.size + this.taking.size >= this.share) return Promise.resolve(undefined);
      const ttl = this.config.jobs.leaseMs;
      const lease = () => (from === null ? this.store.acquireLease(jobId, this.replicaId, ttl) : this.store.takeOffered(jobId, from, this.replicaId, ttl));
      taking = (async () => ((await lease()) ? this.adopt(jobId) : undefined))().finally(() => this.taking.delete(jobId));
      this.taking.set(jobId, taking);
    }
    return taking;
  }

  /**
   * A job this replica leads whose spec and lease are both gone: Redis lost its data (restart
   * without persistence, FLUSHALL, failover to an empty replica). The replica still knows the job,
   * so it writes it back and takes it again under an epoch and with versions above every one it
   * knew (protocol §5.6): ranks keep the schedule they run, and no version number is reused.
   */
  private async restoreLost(job: JobRuntime): Promise<boolean> {
    if ((await this.store.loadSpec(job.jobId)) || (await this.store.ownerOf(job.jobId))) return false;
    await this.store.saveSpec(job.spec.registration, job.registrationId);
    // The overrides in force go back too (only into an absent key: an operator may have written since).
    const overrides = job.overrides.inForce ? job.overrides.lastText : null;
    if (overrides !== null) await this.store.replaceOverrides(job.jobId, null, overrides);
    if (!(await this.store.acquireLease(job.jobId, this.replicaId, this.config.jobs.leaseMs))) return false;
    this.logger.warn(`job ${job.jobId}: Redis lost the job's keys; restoring it from this replica's memory`);
    this.metrics.jobsRestored.inc();
    return (await this.adopt(job.jobId)) !== undefined;
  }

  /**
   * A job whose schedule writes Redis refused as fenced (JobRuntime.fenced): the job's epoch is no
   * longer this runtime's. Normally another replica took the lease and the epoch with it; but the
   * epoch key can also change behind a lease this replica still holds (a client with write access,
   * an operator's INCR, the late bump of a replica that lost the job), and then every publish of this
   * runtime would be refused for ever while discovery renews its lease. So, at the discovery after
   * the refused write (within jobs.discoveryIntervalMs, so within a lease): if the lease is still
   * this replica's, take the job again under an epoch above the one found, re-reading the committed
   * schedule and replaying history as any adoption does, and count it
   * (pipemorph_job_refenced_total); the lease check and the new epoch are one atomic step, so a
   * replica that lost the lease can never take the epoch back. False when the lease is no longer
   * this replica's: the caller lets the job go as any lost lease.
   */
  async retakeFenced(job: JobRuntime): Promise<boolean> {
    if (job.released) return false;
    const taken = await this.store.retakeEpoch(job.jobId, this.replicaId, this.config.jobs.leaseMs, job.epoch, Math.max(job.epoch, job.knownEpoch));
    if (taken === 'lost') return false;
    if (taken === 'held') {
      job.clearFenced(); // the epoch in Redis is ours (again): the lease is renewed, nothing to take
      return true;
    }
    this.logger.warn(`job ${job.jobId}: writes under epoch ${job.epoch} fenced although this replica holds the lease (the epoch key changed behind it); taking the job again under epoch ${taken}`);
    if (!(await this.adopt(job.jobId, taken))) return false;
    this.metrics.jobRefenced.inc({ job: job.jobId });
    return true;
  }

  /**
   * A rank reports an epoch above this runtime's: if Redis's epoch is still ours and the lease is
   * ours, Redis lost the counter (the ranks would ignore every event of ours): take the job again
   * above the ranks' epoch. If Redis's epoch moved on, our next write is fenced and discovery lets
   * go, or takes the job again if the lease is still ours (retakeFenced).
   */
  async reconcileEpoch(job: JobRuntime, reported: number): Promise<JobRuntime | undefined> {
    job.noteReportedEpoch(reported);
    if (job.released || reported <= job.epoch) return undefined;
    if ((await this.store.readEpoch(job.jobId)) !== job.epoch) return undefined;
    if (!(await this.store.renewLease(job.jobId, this.replicaId, this.config.jobs.leaseMs))) return undefined;
    this.logger.warn(`job ${job.jobId}: ranks hold epoch ${reported} above Redis's ${job.epoch}; taking the job again above it`);
    return this.adopt(job.jobId);
  }

  /**
   * Rebuilds a job from Redis under a new epoch (after taking its lease, or after a re-registration);
   * `taken`: the epoch already taken for it (retakeFenced), else one is bumped here.
   */
  async adopt(jobId: string, taken?: number): Promise<JobRuntime | undefined> {
    const stored = await this.store.loadSpec(jobId);
    if (!stored) {
      await this.store.releaseLease(jobId, this.replicaId);
      return undefined;
    }
    const spec = stored.registration;
    const previous = this.owned.get(jobId);
    // Epochs and versions never go back, also when Redis lost its counters: an earlier runtime of the
    // job and the ranks' reports know the highest ones handed out (protocol §5.6).
    const epoch = taken ?? (await this.store.bumpEpoch(jobId, Math.max(previous?.epoch ?? 0, previous?.knownEpoch ?? 0)));
    const job = new JobRuntime(spec, epoch, this.config.detection, {
      registrationId: stored.registrationId,
      adoptedAt: this.clock.now(),
      knownVersion: previous?.versionFloor() ?? 0,
      knownEpoch: previous?.knownEpoch ?? 0,
    }, { priorIterations: this.config.control.stragglerPriorIterations, priorWeight: this.config.control.stragglerPriorWeight });
    const keys = jobKeys(jobId);
    await this.store.keepJobKeys(jobId);
    await this.store.ensureGroup(keys.reports, this.config.ingest.consumerGroup);
    const schedules = await this.store.readSchedules(jobId);
    const pending = schedules.pending;
    let committed = schedules.committed;
    if (!committed && previous?.committed && fitsShape(previous.committed, spec) && (await this.store.restoreSchedule(jobId, previous.committed))) {
      // Redis lost the schedule the ranks run: write it back rather than deciding a new initial plan.
      committed = previous.committed;
    }
    // A committed schedule of an older registration (other shape) is replaced by a new initial plan.
    if (committed && fitsShape(committed, spec)) job.noteCommitted(committed, true);
    if (previous) {
      previous.release();
      this.metrics.forgetJob(jobId, previous.spec.stages, true);
    }
    this.metrics.initJob(jobId, epoch);
    // Before the runtime can decide anything: the job's overrides survive a failover.
    await this.overrides.adopt(job, previous);
    if (job.committed) this.metrics.scheduleInForce(jobId, job.committed);
    if (pending) await this.publisher.abandonPending(job, pending);
    if (this.fleetView && this.config.fleet.prior) job.setFleetPrior(fleetLinkPrior(this.fleetView, jobId, spec.ranks), fleetSlowGroups(this.fleetView, jobId, spec.ranks));
    this.owned.set(jobId, job);
    this.byReportsStream.set(keys.reports, job);
    this.adoptedSinceClaim.add(jobId);
    this.metrics.jobsOwned.set(this.owned.size);
    this.logger.log(`job ${jobId}: owned under epoch ${epoch} (${spec.stages} stages x ${spec.dp} replicas, ${job.reporting.length} reporting ranks)`);
    return job;
  }

  /**
   * Offers the jobs above the fair share to the others once this replica owns more than shedAbove
   * (a replica joined, jobs expired): down to the share, jobs with no handshake open. It goes on
   * leading each until a replica under its share moves the lease to itself in one step
   * (JobStore.takeOffered, only between switches) and adopts it; this replica lets it go at its
   * next renewal. So a job handed back waits unled for no discovery, only for its adoption.
   * Released instead, each waited unled for the taker's next discovery (bench:chaos-scale: 32 jobs
   * for up to 1.1 s after a replica's SIGSTOP, past the 15 s goal whatever the fault's own length).
   * Offers last a lease and are renewed at every discovery while the excess lasts, withdrawn when
   * it is gone.
   */
  private async shedExcess(): Promise<void> {
    const above = this.owned.size > shedAbove(this.jobsKnown, this.liveReplicas);
    const excess = above ? this.owned.size - this.share : 0;
    // The usual case, at every discovery: nothing to offer and nothing offered.
    if (excess === 0 && this.offered.size === 0) return;
    const offer = this.all()
      .filter((job) => job.handshake === null && !job.fenced && !job.released)
      .slice(0, excess)
      .map((job) => job.jobId);
    const keep = new Set(offer);
    const withdraw = [...this.offered].filter((jobId) => !keep.has(jobId));
    for (const jobId of withdraw) this.offered.delete(jobId);
    await inParallel(withdraw, DISCOVERY_CONCURRENCY, (jobId) => this.store.withdrawOffer(jobId, this.replicaId));
    const fresh = offer.filter((jobId) => !this.offered.has(jobId)).length;
    await inParallel(offer, DISCOVERY_CONCURRENCY, async (jobId) => {
      if (await this.store.offerLease(jobId, this.replicaId, this.config.jobs.leaseMs)) this.offered.add(jobId);
    });
    if (fresh > 0) this.logger.log(`offering ${fresh} more jobs above this replica's share (${this.share} of ${this.jobsKnown} jobs, ${this.liveReplicas} replicas live; ${this.offered.size} offered)`);
  }

  drop(jobId: string): void {
    const job = this.owned.get(jobId);
    if (!job) return;
    job.release();
    this.owned.delete(jobId);
    this.offered.delete(jobId);
    this.byReportsStream.delete(jobKeys(jobId).reports);
    this.adoptedSinceClaim.delete(jobId);
    this.metrics.forgetJob(jobId, job.spec.stages);
    this.metrics.jobsOwned.set(this.owned.size);
  }

  /** Forgets a job whose ranks have all been silent too long; its keys expire after a day. */
  async expire(jobId: string): Promise<void> {
    this.drop(jobId);
    await this.store.forgetJob(jobId, 24 * 3600 * 1000);
    await this.store.releaseLease(jobId, this.replicaId);
    this.logger.log(`job ${jobId}: expired (all ranks silent)`);
  }

  async releaseAll(): Promise<void> {
    await Promise.allSettled(this.all().map((job) => this.store.releaseLease(job.jobId, this.replicaId)));
    // Gone at once, not a lease later: the others' shares grow to take the jobs released.
    await this.store.replicaHeartbeat(this.replicaId, 0).catch(() => undefined);
  }
}
