import Redis from 'ioredis';
import { Clock } from '../core/clock/clock.type';
import { DecisionRecord } from '../core/control/decision-record.type';
import { parseSchedule } from '../core/pipeline/schedule';
import { detectionCorpus } from '../corpus/corpus';
import { CorpusScenario } from '../corpus/corpus.type';
import { GroundTruth } from '../corpus/ground-truth';
import { NoiseSource } from '../corpus/noise';
import { initialLayout, JobTelemetry, Layout, PlanInForce, registrationOf } from '../corpus/telemetry';
import { controlConfigOf } from '../daemon/config/control-config-of';
import { PipemorphConfig } from '../daemon/config/pipemorph-config.type';
import { ControlService } from '../daemon/control/control.service';
import { IngestService } from '../daemon/ingest/ingest.service';
import { JobRegistry } from '../daemon/jobs/job-registry.service';
import { startDaemon } from '../daemon/start-daemon.util';
import { MaintenanceService } from '../daemon/tasks/maintenance.service';
import { ControlEvent, PublishedSchedule } from '../protocol/protocol-v1.type';
import { jobKeys, REGISTRATIONS_STREAM } from '../protocol/redis-keys';
import { REPLAY_EPOCH_MS, ScenarioReplay, scenarioJobId, SwitchEvent } from './run-scenario';

/**
 * The daemon's clock while a scenario is fed to it: set by the driver to the replayed time of each
 * iteration (as ReplayJob's `now`), never moved by the wall clock. Timers are held and never fire:
 * the daemon's periodic tasks (discovery, the 100 ms handshake/deferred-decision tick) do not run,
 * as ReplayJob has no equivalent of them; maintenance is run by the driver at ReplayJob's points.
 */
export class ReplayedClock implements Clock {
  private held = 0;

  constructor(private current: number) {}

  now(): number {
    return this.current;
  }

  monotonicMs(): number {
    return this.current;
  }

  setTimeout(): unknown {
    this.held++;
    return this.held;
  }

  clearTimeout(): void {
    // Nothing fires anyway.
  }

  /** Timers the daemon asked for (none of them fires). */
  get heldTimers(): number {
    return this.held;
  }

  set(ms: number): void {
    if (ms < this.current) throw new Error(`the replayed clock does not go back (${ms} < ${this.current})`);
    this.current = ms;
  }
}

/** A switch the live daemon committed: decided after the reports of `iteration`, run from `effectiveIteration`. */
export interface LiveSwitch extends SwitchEvent {
  version: number;
}

/** What the live daemon did with a scenario's job (runScenarioLive). */
export interface LiveScenarioRun {
  /** GET /jobs/:id/decisions: the newest decisions (oldest first) and how many were judged in all. */
  records: DecisionRecord[];
  total: number;
  /** Switches after the initial schedule, from the job's control stream (commit events). */
  switches: LiveSwitch[];
  /** Handshakes aborted (none expected: the driver's ranks accept every prepare at once). */
  aborts: number;
  /** Steps the ingest loop triggered on report batches, and on the ranks' acknowledgements (after a commit). */
  triggeredSteps: number;
  ackTriggeredSteps: number;
  /** Maintenance runs the driver made (ReplayJob's 5 s rule). */
  maintenanceRuns: number;
  /** The iteration after which each decision was judged (repeats included; the initial one at -1). */
  judgedAfter: number[];
  daemonMs: number;
  wallMs: number;
  /** Real time the run took, ms. */
  elapsedMs: number;
}

export interface LiveScenarioOptions {
  /** A Redis database the driver owns: it is flushed before the run. */
  redisUrl: string;
  /** Daemon logs on stderr. */
  logs?: boolean;
  /** ReplayJob's maintenance interval (replayed ms): a step when none ran for this long. */
  maintenanceMs?: number;
  /** Real-time limit on waiting for the daemon to take one batch, ms. */
  waitMs?: number;
  /**
   * Iterations between a prepare and the ranks' acknowledgements: 0 (default) acknowledges at once,
   * before the next iteration's reports (ReplayJob's assumption); k > 0 sends them with the reports
   * of the iteration k later, ahead of them in the stream, as ranks that read the control stream at
   * each iteration's start do (protocol sec. 4), refused as late once at the effective iteration.
   */
  ackLagIterations?: number;
}

/** A never-firing maintenance cron in practice (00:00:00 on January 1st, wall clock): the driver runs maintenance itself. */
const NO_CRON = '0 0 0 1 1 *';

/** `config` as the live daemon runs it for the driver: the same control, detection and handshake settings; plumbing only changed. */
export function liveDaemonConfig(config: PipemorphConfig, redisUrl: string): PipemorphConfig {
  const c = structuredClone(config);
  c.redis = { ...c.redis, url: redisUrl };
  c.http = { ...c.http, host: '127.0.0.1', port: 0 };
  // A BLOCKed read returns as soon as an entry arrives; short, so shutdown does not wait for it.
  c.ingest = { ...c.ingest, blockMs: 20, claimIdleMs: 600000 };
  // Leases expire on Redis's (real) clock, and discovery, which renews them, does not run.
  c.jobs = { ...c.jobs, leaseMs: 600000, maintenanceCron: NO_CRON };
  return c;
}

function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(BigInt);
  const [bm, bs] = b.split('-').map(BigInt);
  return am !== bm ? (am < bm ? -1 : 1) : as === bs ? 0 : as < bs ? -1 : 1;
}

function planOf(schedule: PublishedSchedule, stages: number, microbatches: number): PlanInForce {
  return {
    version: schedule.version,
    pipelines: schedule.pipelines.map((p) => ({ dpReplicas: p.dpReplicas, warmup: p.warmup, schedule: parseSchedule(p.stages, stages, microbatches) })),
    delegation: schedule.delegation,
  };
}

function layoutOf(schedule: PublishedSchedule, stages: number): Layout | null {
  const t = schedule.topology;
  if (!t) return null;
  const rankAt = new Array<number>(t.ranks.length);
  for (const r of t.ranks) rankAt[r.dp * stages + r.pp] = r.rank;
  return { rankAt, rings: t.rings as number[][] };
}

/**
 * One corpus scenario's job fed to a live daemon (in this process, on real Redis), in the closed
 * loop replayScenario runs: each iteration the ranks run the schedule and layout the daemon
 * committed (from its effective iteration) and report, with the corpus telemetry and noise, at the
 * replayed time (the daemon's clock is set to it first). The driver waits for the daemon to have
 * ingested and decided on each iteration's reports (the consumer group has delivered them and
 * nothing is pending) before going on; when no step ran for `maintenanceMs` of replayed time it runs
 * the daemon's maintenance, as ReplayJob steps; it answers every prepare at once for every rank
 * (accepted, at the iteration just reported) and waits for the commit. The handshake's round trips
 * take no replayed time, as ReplayJob assumes.
 */
export async function runScenarioLive(sc: CorpusScenario, config: PipemorphConfig, options: LiveScenarioOptions): Promise<LiveScenarioRun> {
  const started = Date.now();
  const maintenanceMs = options.maintenanceMs ?? 5000;
  const waitMs = options.waitMs ?? 20000;
  const ackLag = options.ackLagIterations ?? 0;
  const jobId = scenarioJobId(sc);
  const keys = jobKeys(jobId);
  const { stages: S, dp: D, microbatches: M } = sc.shape;
  const ranks = Array.from({ length: S * D }, (_, r) => r);
  const redis = new Redis(options.redisUrl, { maxRetriesPerRequest: 3 });
  await redis.flushdb();
  const clock = new ReplayedClock(REPLAY_EPOCH_MS);
  const daemon = await startDaemon(liveDaemonConfig(config, options.redisUrl), { logs: options.logs, clock });
  try {
    const control = daemon.app.get(ControlService);
    const ingest = daemon.app.get(IngestService);
    const maintenance = daemon.app.get(MaintenanceService);
    const registry = daemon.app.get(JobRegistry);
    // Counts the steps ingest triggers (a batch that changed a straggler, or a deferred decision).
    let triggered = 0;
    const trigger = control.trigger.bind(control);
    control.trigger = (job) => {
      triggered++;
      return trigger(job);
    };

    const until = async <T>(what: string, check: () => Promise<T | null | undefined | false>): Promise<T> => {
      const deadline = Date.now() + waitMs;
      for (let k = 0; ; k++) {
        const value = await check();
        if (value !== null && value !== undefined && value !== false) return value;
        if (Date.now() > deadline) throw new Error(`${sc.name}: timed out after ${waitMs} ms waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, k < 20 ? 0 : 1));
      }
    };
    /** The daemon has read every entry up to `lastId` of the reports stream and acknowledged them all (decided on them). */
    const drained = async (lastId: string, what: string): Promise<void> => {
      await until(what, async () => {
        const groups = (await redis.xinfo('GROUPS', keys.reports)) as unknown[][];
        for (const g of groups) {
          const f = new Map<string, unknown>();
          for (let i = 0; i + 1 < g.length; i += 2) f.set(String(g[i]), g[i + 1]);
          if (f.get('name') !== 'pipemorph') continue;
          return Number(f.get('pending')) === 0 && compareIds(String(f.get('last-delivered-id')), lastId) >= 0;
        }
        return false;
      });
      await control.settled();
      await ingest.acknowledged();
    };
    let controlCursor = '0-0';
    const controlEvents = async (): Promise<ControlEvent[]> => {
      const reply = (await redis.xread('COUNT', 1000, 'STREAMS', keys.control, controlCursor)) as Array<[string, Array<[string, string[]]>]> | null;
      const out: ControlEvent[] = [];
      for (const [, entries] of reply ?? []) {
        for (const [id, fields] of entries) {
          controlCursor = id;
          out.push(JSON.parse(fields[1]) as ControlEvent);
        }
      }
      return out;
    };
    const committedSchedule = async (version: number): Promise<PublishedSchedule> => {
      const raw = await redis.get(keys.schedule);
      const schedule = raw ? (JSON.parse(raw) as PublishedSchedule) : null;
      if (!schedule || schedule.version !== version) throw new Error(`${sc.name}: committed schedule is version ${schedule?.version}, the commit event said ${version}`);
      return schedule;
    };

    // Registration; the daemon takes the job and decides its first schedule at the epoch.
    await redis.xadd(REGISTRATIONS_STREAM, '*', 'm', JSON.stringify(registrationOf(sc, jobId)));
    const initialEvent = await until('the initial schedule', async () => (await controlEvents()).find((e) => e.type === 'commit'));
    await control.settled();
    const initial = await committedSchedule(initialEvent.version);
    const job = registry.get(jobId);
    if (!job) throw new Error(`${sc.name}: the daemon did not take the job`);
    const initialSteps = triggered;

    const telemetry = new JobTelemetry(sc, jobId, controlConfigOf(config).transport);
    const truth = new GroundTruth(sc);
    const noise = new NoiseSource(sc.noise, sc.seed, ranks);
    let plan = planOf(initial, S, M);
    let layout = layoutOf(initial, S) ?? initialLayout(sc);
    const pending: Array<{ effectiveIteration: number; schedule: PublishedSchedule }> = [];
    /** Prepares the ranks answer later (ackLagIterations), and the iteration each prepare came after. */
    const answers: Array<{ at: number; event: ControlEvent }> = [];
    const preparedAfter = new Map<number, number>();
    const ackOf = (e: ControlEvent, rank: number, running: number) => {
      const accepted = running < e.effectiveIteration;
      return JSON.stringify({ type: 'ack', protocol: 1, jobId, rank, version: e.version, epoch: e.epoch, iteration: running, accepted, ...(accepted ? {} : { reason: 'late' }) });
    };
    const switches: LiveSwitch[] = [];
    let aborts = 0;
    let ackTriggered = 0;
    let maintenanceRuns = 0;
    const judgedAfter: number[] = new Array(job.decisions.count).fill(-1);
    let lastStepAt = REPLAY_EPOCH_MS;
    let daemonMs = 0;
    let wallMs = 0;
    const at = (ms: number) => REPLAY_EPOCH_MS + ms;

    for (let t = 0; t < sc.iterations; t++) {
      while (pending.length > 0 && pending[0].effectiveIteration <= t) {
        const s = pending.shift()!.schedule;
        plan = planOf(s, S, M);
        daemonMs += config.control.switchCostMs;
        const moved = s.topology && s.topology.sinceVersion === s.version ? layoutOf(s, S) : null;
        if (moved) {
          layout = moved;
          daemonMs += config.remap.migrationMsPerNode;
        }
      }
      const state = truth.at(t);
      const itMs = telemetry.iterationMs(plan, layout, state);
      const n = noise.iteration(t);
      daemonMs += itMs;
      wallMs += itMs + n.iterationExtraMs;
      const now = at(wallMs);
      clock.set(now);
      const reports = telemetry.reports(t, plan, layout, state, itMs, noise, n);
      // One transaction: the daemon reads the iteration's reports in one batch, as ReplayJob takes them.
      const tx = redis.multi();
      // Acknowledgements due now go first: a rank reads the control stream at the iteration's start.
      while (answers.length > 0 && answers[0].at <= t) {
        const e = answers.shift()!.event;
        for (const rank of ranks) tx.xadd(keys.reports, '*', 'm', ackOf(e, rank, t));
      }
      for (const r of reports) tx.xadd(keys.reports, '*', 'm', JSON.stringify({ ...r, sentAt: now }));
      // Counted from before the write: the daemon (in this process) may take the batch before exec's reply is handled.
      const before = triggered;
      const written = (await tx.exec()) ?? [];
      const lastId = String(written[written.length - 1]?.[1] ?? '0-0');
      await drained(lastId, `iteration ${t}'s reports`);
      if (triggered > before) {
        lastStepAt = now;
      } else if (now - lastStepAt >= maintenanceMs) {
        await maintenance.run(now);
        await control.settled();
        maintenanceRuns++;
        lastStepAt = now;
      }
      for (let k = judgedAfter.length; k < job.decisions.count; k++) judgedAfter.push(t);
      // The handshake: every rank accepts a prepare at once (at iteration t, before running t + 1).
      for (let events = await controlEvents(); events.length > 0; events = await controlEvents()) {
        for (const e of events) {
          if (e.type === 'abort') aborts++;
          if (e.type === 'commit') {
            const schedule = await committedSchedule(e.version);
            pending.push({ effectiveIteration: e.effectiveIteration, schedule });
            switches.push({ iteration: preparedAfter.get(e.version) ?? t, effectiveIteration: e.effectiveIteration, kind: schedule.reason.kind, version: e.version });
          }
          if (e.type !== 'prepare') continue;
          preparedAfter.set(e.version, t);
          if (ackLag > 0) {
            answers.push({ at: t + ackLag, event: e });
            continue;
          }
          const acks = redis.multi();
          for (const rank of ranks) acks.xadd(keys.reports, '*', 'm', ackOf(e, rank, t + 1));
          const beforeAcks = triggered;
          const sent = (await acks.exec()) ?? [];
          await drained(String(sent[sent.length - 1]?.[1] ?? '0-0'), `the acknowledgements of version ${e.version}`);
          ackTriggered += triggered - beforeAcks;
        }
      }
    }
    const response = await fetch(`${daemon.url}/jobs/${encodeURIComponent(jobId)}/decisions`);
    if (!response.ok) throw new Error(`${sc.name}: GET /jobs/${jobId}/decisions: ${response.status}`);
    const body = (await response.json()) as { total: number; decisions: DecisionRecord[] };
    return {
      records: body.decisions,
      total: body.total,
      switches,
      aborts,
      triggeredSteps: triggered - initialSteps - ackTriggered,
      ackTriggeredSteps: ackTriggered,
      maintenanceRuns,
      judgedAfter,
      daemonMs,
      wallMs,
      elapsedMs: Date.now() - started,
    };
  } finally {
    await daemon.app.close();
    redis.disconnect();
  }
}

/** How a replay and a live run of one scenario compare (compareRuns). */
export interface Agreement {
  agree: boolean;
  /** Decision records compared field by field (every field of the decision log's entries). */
  decisions: number;
  /** Decisions judged in all (repeats included): the replay's and the live daemon's. */
  judged: { replay: number; live: number };
  /** Switches after the initial schedule compared (iteration decided, effective iteration, kind, version). */
  switches: number;
  differences: string[];
}

const show = (v: unknown) => JSON.stringify(v);

/**
 * Compares what the replay and the live daemon decided on one scenario: every decision record
 * (all fields: replayed time, iteration, first iteration and repeats, kind, verdict, reason,
 * evidence, prediction, cost, schedule version, overrides) in order, the switches (iteration,
 * effective iteration, kind and version), how many decisions were judged in all, and the job's
 * pipeline time and wall time (equal only if the same plans ran the same iterations). Differences
 * are named; none means they agree exactly.
 */
export function compareRuns(replay: ScenarioReplay, live: LiveScenarioRun): Agreement {
  const differences: string[] = [];
  const n = Math.max(replay.records.length, live.records.length);
  for (let i = 0; i < n; i++) {
    const a = replay.records[i] as unknown as Record<string, unknown> | undefined;
    const b = live.records[i] as unknown as Record<string, unknown> | undefined;
    if (!a || !b) {
      const r = (a ?? b) as unknown as DecisionRecord;
      differences.push(`decision ${i}: only the ${a ? 'replay' : 'live daemon'} has ${r.kind} ${r.verdict} at iteration ${r.iteration}`);
      continue;
    }
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      if (show(a[key]) !== show(b[key])) differences.push(`decision ${i} (${String(a.kind)} ${String(a.verdict)} at ${String(a.iteration)}): ${key} ${show(a[key])} (replay) vs ${show(b[key])} (live)`);
    }
  }
  const versions = replay.records.filter((r) => r.verdict === 'taken' && r.kind !== 'initial').map((r) => r.scheduleVersion);
  const replaySwitches = replay.switches.map((s, k) => ({ ...s, version: versions[k] ?? null }));
  const m = Math.max(replaySwitches.length, live.switches.length);
  for (let k = 0; k < m; k++) {
    const a = replaySwitches[k];
    const b = live.switches[k];
    const key = (s: typeof a | undefined) => (s ? `${s.kind} v${s.version} decided at ${s.iteration}, effective ${s.effectiveIteration}` : 'none');
    if (key(a) !== key(b)) differences.push(`switch ${k}: ${key(a)} (replay) vs ${key(b)} (live)`);
  }
  const judged = { replay: replay.declined + replay.switches.length + 1, live: live.total };
  if (judged.replay !== judged.live) differences.push(`decisions judged: ${judged.replay} (replay) vs ${judged.live} (live)`);
  if (live.aborts > 0) differences.push(`live: ${live.aborts} handshakes aborted`);
  if (replay.daemonMs !== live.daemonMs) differences.push(`pipeline time: ${replay.daemonMs} ms (replay) vs ${live.daemonMs} ms (live)`);
  if (replay.wallMs !== live.wallMs) differences.push(`wall time: ${replay.wallMs} ms (replay) vs ${live.wallMs} ms (live)`);
  return { agree: differences.length === 0, decisions: Math.min(replay.records.length, live.records.length), judged, switches: Math.min(replaySwitches.length, live.switches.length), differences };
}

/**
 * The scenarios the live daemon and the replay are compared on (docs/detection.md, "the live
 * daemon and the replay agree"): short variants of corpus scenarios, a few hundred iterations each.
 * A constant 30 ms link (4x12 dp2, the straggler over iterations 150-250 of 300), a flapping link
 * (8x32 dp4, 40 ms 3 on 7 off from iteration 200, cut at 360), healthy noisy traffic with short
 * congestion bursts (8x32 dp4, 250 iterations), slow ring links across racks, re-mapped (4x12 dp4,
 * from iteration 150 of 320), a NIC failure (8x32 dp2, iterations 150-250 of 320).
 */
export function liveAgreementScenarios(): CorpusScenario[] {
  const corpus = detectionCorpus(0.01);
  const byName = (name: string) => {
    const sc = corpus.find((s) => s.name === name);
    if (!sc) throw new Error(`no corpus scenario named ${JSON.stringify(name)}`);
    return sc;
  };
  const constant = byName('4x12 dp2, 30 ms on link 2');
  const flapping = byName('8x32 dp4, 40 ms flapping (3 on, 7 off)');
  const bursts = byName('healthy 8x32 dp4, short bursts');
  const ring = byName('4x12 dp4, 30 ms ring link across racks');
  const nic = byName('8x32 dp2, NIC failure on link 5');
  return [
    { ...constant, name: `${constant.name} (300 it)`, iterations: 300, stragglers: constant.stragglers.map((s) => ({ ...s, start: 150, end: 250 })) },
    { ...flapping, name: `${flapping.name} (360 it)`, iterations: 360 },
    // The corpus at scale 0.01 has 200 iterations of bursts (one becomes a straggler, declined at 88), then 50 without.
    { ...bursts, name: `${bursts.name} (250 it)`, iterations: 250 },
    { ...ring, name: `${ring.name} (320 it)`, iterations: 320, stragglers: ring.stragglers.map((s) => ({ ...s, start: 150 })) },
    { ...nic, name: `${nic.name} (320 it)`, iterations: 320, stragglers: nic.stragglers.map((s) => ({ ...s, start: 150, end: 250 })) },
  ];
}
