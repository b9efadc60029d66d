import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { ControlConfig, DEFAULT_CONTROL_CONFIG } from '../../core/control/control-config.type';
import { ControlOutcome } from '../../core/control/control-decision.type';
import { JobControlInput } from '../../core/control/control-input.type';
import { decideControl } from '../../core/control/job-controller';
import { usesMilpSolver } from '../../core/control/pipeline-plans';
import { warmUpDecisions } from '../../core/control/warm-up';
import { MilpSolver } from '../../core/planner/optimal-planner';
import { controlConfigOf } from '../config/control-config-of';
import { PIPEMORPH_CONFIG, PipemorphConfig } from '../config/pipemorph-config.type';
import { MetricsService } from '../metrics/metrics.service';
import { loadMilpSolver } from './load-milp-solver.util';
import { PlanningReady, PlanningRequest, PlanningResponse, PlanningWorkerData } from './planning-message.type';

/** A worker not ready this long after it started (loading hung) counts as crashed and is replaced. */
const WORKER_START_TIMEOUT_MS = 30_000;

/** Why a decision failed; the control step logs it, counts it and tries again later. */
export class PlanningError extends Error {
  constructor(
    message: string,
    readonly reason: 'timeout' | 'crash' | 'error',
  ) {
    super(message);
  }
}

/**
 * Which queue a decision waits in: a reaction (a control step's first phase) before the healthy
 * yardstick gauge, both before a refinement (`control.refinePlanner`, hundreds of ms each). A
 * refinement improves a plan already in force; a straggler just revealed on another job must not
 * wait behind it (bench:chaos-scale: reactions of 100 jobs queued behind refinements on the one
 * worker had a control step p99 of 1.5 s with no fault at all).
 */
export type PlanningLane = 'reaction' | 'gauge' | 'refinement';

const LANE_ORDER: Record<PlanningLane, number> = { reaction: 0, gauge: 1, refinement: 2 };

interface Task {
  lane: PlanningLane;
  request: PlanningRequest;
  resolve(outcome: ControlOutcome): void;
  reject(error: PlanningError): void;
}

interface Slot {
  worker: Worker;
  /** Loaded and listening; decisions are sent (and timed) only from then on. */
  ready: boolean;
  task: Task | null;
  timer: NodeJS.Timeout | null;
}

/** Replicas' worth of `maxCells` a decision made on the event loop may simulate: 8 x 32 x dp 64 at the default 1024. */
export const INLINE_REPLICA_FACTOR = 16;

/**
 * Whether a decision is cheap enough to make on the event loop: a job of at most `maxCells`
 * stages x microbatches (and `INLINE_REPLICA_FACTOR` times that over its replicas) with no data-parallel straggler to re-map (the placement search is not
 * cheap), and either Alg. 2 (or the initial plan) as the planner or no straggling link at all
 * (then no planner runs, whatever the policy: the decision only prices the plans in force). A few
 * generator and simulator runs (about 3 ms at 8 x 32 x 8 replicas): less than the two thread hops
 * a worker costs on a busy machine, so the first reaction to a straggler is faster inline, and a
 * healthy job's step never waits on the worker behind another job's slow plan; the search, the
 * exact planner and large jobs stay on the worker, where they cannot delay ingest.
 */
export function quickDecision(input: JobControlInput, config: ControlConfig, maxCells: number): boolean {
  if (input.stages * input.microbatches > maxCells) return false;
  // Pricing simulates every replica whose delays differ (they all do, by noise): the cost grows
  // with dp. A 16 x 64 x dp 64 job's step took 15-25 ms of the event loop every iteration.
  if (input.stages * input.microbatches * input.dpSize > maxCells * INLINE_REPLICA_FACTOR) return false;
  if (ringStraggling(input)) return false;
  return config.planner === 'adaptive' || !pipelineStraggling(input);
}

const pipelineStraggling = (input: JobControlInput): boolean => input.links.some((l) => l.straggler);
const ringStraggling = (input: JobControlInput): boolean => input.topology?.dataParallelLinks.some((l) => l.straggler) ?? false;

/** Whether a decision reacts to a straggler (a slow pipeline or data-parallel link): those go first. */
export function reacting(input: JobControlInput): boolean {
  return pipelineStraggling(input) || ringStraggling(input);
}

/**
 * The compiled worker: beside this file when the daemon runs from dist; from dist as well when
 * the sources run under Jest (npm test builds first), since a worker thread cannot load TypeScript.
 */
export function planningWorkerPath(): string {
  for (const path of [join(__dirname, 'planning.worker.js'), join(__dirname, '..', '..', '..', 'dist', 'src', 'daemon', 'planning', 'planning.worker.js')]) {
    if (existsSync(path)) return path;
  }
  throw new Error('planning worker not found: run `npm run build` (dist/src/daemon/planning/planning.worker.js)');
}

/**
 * Runs control decisions (detection snapshot in, decision out; the pure core) off the event loop
 * on `control.planningWorkers` worker threads, so that a slow plan cannot delay ingest, lease
 * renewals, handshakes or HTTP. Decisions queue by lane (PlanningLane), in arrival order within one, and go to a worker once it has
 * loaded (HiGHS included when the policy is `optimal`); one that overruns `control.planTimeoutMs`
 * from there is abandoned and its worker replaced, so a cold start is never taken for a slow plan;
 * a worker that dies fails only its own decision. With 0 workers decisions run inline (unit
 * tests, debugging).
 */
@Injectable()
export class PlanningPool implements OnApplicationShutdown {
  private readonly logger = new Logger(PlanningPool.name);
  private readonly slots: Slot[] = [];
  private readonly queue: Task[] = [];
  /** Inline decisions with nothing straggling, waiting for their turn of the event loop (backgroundTurn). */
  private readonly background: Array<() => void> = [];
  private nextId = 1;
  private closed = false;
  private solver: Promise<MilpSolver> | null = null;
  /** Overridable for tests (a worker that crashes or hangs). */
  workerPath: () => string = planningWorkerPath;

  constructor(
    @Inject(PIPEMORPH_CONFIG) private readonly config: PipemorphConfig,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * `lane` (PlanningLane): work no reaction waits for (the healthy yardstick gauge, a refinement) is
   * never decided on the event loop while there are workers, however quick: 100 jobs refreshing
   * the gauge made bursts of 20-50 ms on the event loop that a straggler revealed meanwhile waited
   * behind (bench:scale). On the workers it waits behind every queued reaction.
   */
  async decide(input: JobControlInput, config: ControlConfig, lane: PlanningLane = 'reaction'): Promise<ControlOutcome> {
    if (this.closed) throw new PlanningError('planning pool is shut down', 'error');
    const inline = this.config.control.planningWorkers === 0 || (lane === 'reaction' && quickDecision(input, config, this.config.control.inlinePlanMaxCells));
    if (inline && (lane !== 'reaction' || !reacting(input))) await this.backgroundTurn();
    if (inline) return this.decideInline(input, config);
    return new Promise<ControlOutcome>((resolve, reject) => {
      this.enqueue({ lane, request: { id: this.nextId++, input, config }, resolve, reject });
      this.dispatch();
    });
  }

  /** After every queued task of its lane and of the lanes before it; arrival order within a lane. */
  private enqueue(task: Task): void {
    const rank = LANE_ORDER[task.lane];
    const at = this.queue.findIndex((t) => LANE_ORDER[t.lane] > rank);
    if (at < 0) this.queue.push(task);
    else this.queue.splice(at, 0, task);
  }

  /**
   * Makes control.warmUpRounds synthetic decisions on the event loop, where quick decisions run
   * (core warmUpDecisions: so the first real straggler is not decided in unoptimised code), and
   * returns how long that took, ms. The daemon calls it once, before it reads reports; workers
   * warm themselves up before they say they are ready.
   */
  warmUp(): number {
    const rounds = this.config.control.planningWorkers === 0 || this.config.control.inlinePlanMaxCells > 0 ? this.config.control.warmUpRounds : 0;
    const started = performance.now();
    warmUpDecisions({ ...controlConfigOf(this.config), planner: 'adaptive' }, rounds);
    return performance.now() - started;
  }

  /**
   * Waits for this decision's turn among the event loop's decisions with nothing straggling (a
   * healthy job's step only prices the plans in force, a recovery): one per turn of the event
   * loop, so reads (a straggler's reports) and reactions run between them. Why: jobs' iterations
   * line up (every job reporting every 2.5 or 5 s reports at the same instants), and 40 such steps
   * of 1-6 ms each ran back to back; a straggler revealed in that burst waited for all of them
   * (bench:scale: one 8 x 32 reaction in every run at 26-49 ms; 12-18 ms with this). Slices of
   * several decisions per turn (1 and 4 ms) were tried: 29 and 32 ms.
   */
  private backgroundTurn(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.background.push(resolve);
      if (this.background.length === 1) setImmediate(() => this.nextBackground());
    });
  }

  private nextBackground(): void {
    // The decision runs in this callback's microtasks, before the next immediate.
    this.background.shift()?.();
    // Queued from inside an immediate: it runs on the next turn of the loop, after its I/O.
    if (this.background.length > 0) setImmediate(() => this.nextBackground());
  }

  /** Workers started (they start on the first decision, so a daemon that never plans runs none). */
  get workers(): number {
    return this.slots.length;
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    for (const task of this.queue.splice(0)) task.reject(new PlanningError('planning pool is shut down', 'error'));
    await Promise.all(this.slots.splice(0).map((slot) => this.retire(slot, new PlanningError('planning pool is shut down', 'error'))));
    this.metrics.planningQueue.set(0);
  }

  private async decideInline(input: JobControlInput, config: ControlConfig): Promise<ControlOutcome> {
    const milp = usesMilpSolver(config) ? await (this.solver ??= loadMilpSolver()) : undefined;
    try {
      return decideControl(input, config, milp);
    } catch (error) {
      this.metrics.planningFailures.inc({ reason: 'error' });
      throw new PlanningError((error as Error).message, 'error');
    }
  }

  private dispatch(): void {
    while (this.queue.length > 0 && !this.closed) {
      const slot = this.slots.find((s) => s.ready && s.task === null);
      if (!slot) {
        if (this.slots.length < this.config.control.planningWorkers) this.spawn();
        if (!this.slots.some((s) => s.ready && s.task === null)) break;
        continue;
      }
      const task = this.queue.shift()!;
      slot.task = task;
      slot.timer = setTimeout(() => {
        this.metrics.planningFailures.inc({ reason: 'timeout' });
        this.logger.error(`planning took longer than control.planTimeoutMs (${this.config.control.planTimeoutMs} ms): worker replaced`);
        void this.replace(slot, new PlanningError(`planning took longer than ${this.config.control.planTimeoutMs} ms`, 'timeout'));
      }, this.config.control.planTimeoutMs);
      slot.worker.postMessage(task.request);
    }
    this.metrics.planningQueue.set(this.queue.length);
  }

  private spawn(): Slot {
    const { planner, refinePlanner, optimalMaxCells } = this.config.control;
    const preloadMilp = [planner, refinePlanner].some((p) => p !== 'none' && usesMilpSolver({ ...DEFAULT_CONTROL_CONFIG, planner: p, optimalMaxCells }));
    const workerData: PlanningWorkerData = { preloadMilp, nice: this.config.control.planningWorkerNice, warmUpRounds: this.config.control.warmUpRounds };
    const worker = new Worker(this.workerPath(), { workerData });
    const slot: Slot = { worker, ready: false, task: null, timer: null };
    slot.timer = setTimeout(() => {
      this.metrics.planningFailures.inc({ reason: 'crash' });
      this.logger.error(`planning worker not ready after ${WORKER_START_TIMEOUT_MS} ms: replaced`);
      void this.replace(slot, new PlanningError('planning worker did not start', 'crash'));
    }, WORKER_START_TIMEOUT_MS);
    worker.on('message', (message: PlanningResponse | PlanningReady) => {
      if ('ready' in message) {
        if (!message.ready) this.logger.error(`planning worker could not load the MILP solver: ${message.error.split('\n')[0]}`);
        this.finish(slot);
        slot.ready = true;
        this.dispatch();
        return;
      }
      const response = message;
      const task = slot.task;
      if (!task || task.request.id !== response.id) return; // the answer to a decision already abandoned
      this.finish(slot);
      if ('error' in response) {
        this.metrics.planningFailures.inc({ reason: 'error' });
        task.reject(new PlanningError(response.error, 'error'));
      } else task.resolve(response.outcome);
      this.dispatch();
    });
    worker.on('error', (error) => {
      this.logger.error(`planning worker failed: ${error.message}`);
    });
    worker.on('exit', (code) => {
      if (!this.slots.includes(slot)) return; // retired on purpose
      this.metrics.planningFailures.inc({ reason: 'crash' });
      this.logger.error(`planning worker exited (code ${code}): replaced`);
      void this.replace(slot, new PlanningError(`planning worker exited with code ${code}`, 'crash'));
    });
    worker.unref(); // an idle pool does not keep the process alive
    this.slots.push(slot);
    return slot;
  }

  private finish(slot: Slot): Task | null {
    const task = slot.task;
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = null;
    slot.task = null;
    return task;
  }

  /** Fails the slot's decision, terminates its worker and lets a new one start on demand. */
  private async replace(slot: Slot, error: PlanningError): Promise<void> {
    const index = this.slots.indexOf(slot);
    if (index < 0) return;
    this.slots.splice(index, 1);
    await this.retire(slot, error);
    this.dispatch();
  }

  private async retire(slot: Slot, error: PlanningError): Promise<void> {
    this.finish(slot)?.reject(error);
    await slot.worker.terminate();
  }
}
