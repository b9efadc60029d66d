import { DecisionRecord } from '../core/control/decision-record.type';
import { MilpSolver } from '../core/planner/optimal-planner';
import { PipemorphConfig } from '../daemon/config/pipemorph-config.type';
import { parseReportStreamMessage } from '../protocol/message-parser';
import { ProtocolError } from '../protocol/protocol-error';
import { RankReport, Registration } from '../protocol/protocol-v1.type';
import { ReplayChartCollector } from './replay-chart';
import { ReplayJob, ReplaySwitch } from './replay-job';
import { REPLAY_EPOCH_MS } from './run-scenario';

/** One recorded message and where it came from ("line 17", "entry 1732262400123-0"). */
export interface RecordedMessage {
  raw: string | null;
  where: string;
}

/** A decision of the replay: a decision-log entry (a run of the same declined decision is one), and when a taken one is in force. */
export interface ReplayedDecision extends DecisionRecord {
  /** Taken: the iteration its schedule is in force from; else null. */
  effectiveIteration: number | null;
}

export interface ReplaySummary {
  /** Reports taken into the detector, and from which iterations. */
  reports: number;
  iterations: { first: number | null; last: number | null; count: number };
  /** Reports of a (rank, iteration) already taken. */
  duplicates: number;
  /** Reports written under a layout older than the one a replayed re-map put in force. */
  staleLayout: number;
  /** Reports that arrived after their iteration was replayed (taken all the same, as the daemon does). */
  late: number;
  /** Acks and the daemon's registered markers: valid, nothing to replay. */
  skipped: number;
  rejected: { total: number; byReason: Record<string, number>; first: Array<{ where: string; reason: string }> };
  /** Switches taken besides the job's first plan, by kind. */
  switches: number;
  switchesByKind: Record<string, number>;
  /** Decisions judged and declined (each judgement counted), and as decision-log entries (runs). */
  declined: number;
  declinedRuns: number;
}

export interface ReplayResult {
  decisions: ReplayedDecision[];
  summary: ReplaySummary;
}

/** Rejections listed one by one (the rest are counted). */
const REJECTIONS_LISTED = 20;
/** A replayed iteration waits for this many later iterations at most for a missing rank's report. */
const REORDER_WINDOW = 8;
/** Time of an iteration when neither `sentAt` nor `iterationMs` says, ms. */
const DEFAULT_ITERATION_MS = 1000;

/** The lower median (an element of the list, not a mean of two). */
function lowerMedian(values: number[]): number {
  const sorted = values.slice().sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/** A reason to count rejections by: the parser's reason without its numbers (JSON errors by their kind). */
function reasonClass(reason: string): string {
  if (reason.startsWith('not valid JSON')) return 'not valid JSON';
  return reason.replace(/\d+(\.\d+)?/g, 'N');
}

function stragglerKey(r: DecisionRecord): string {
  return [...r.evidence.links.map((l) => `p:${l.dp}:${l.link}${l.nicFailure ? '!' : ''}`), ...r.evidence.dataParallelLinks.map((l) => `d:${l.fromRank}>${l.toRank}`)].sort().join(',');
}

/**
 * A recorded job (its registration, then what its ranks wrote on the reports stream, in any order
 * close to arrival) through the daemon's control loop in process (ReplayJob), with any config.
 * Reports are replayed in iteration order: an iteration is replayed once every reporting rank's
 * report of it is in, or once REORDER_WINDOW later iterations are (a silent rank), so memory holds
 * a few iterations whatever the recording's length. Each report is taken as its rank would have
 * run the replay's own decisions: its `scheduleVersion` becomes the version the replay has in
 * force at its iteration (link send times do not depend on the schedule, protocol §3.2). Time: the
 * median `sentAt` of an iteration's reports, else the previous iteration's time plus the median
 * `iterationMs` (1 s when no report says); it never runs backwards. Messages that do not parse,
 * fail the schema or name a rank that does not report are counted with the parser's reason and
 * skipped, as ingest refuses them.
 */
export class RecordingReplay {
  private readonly replay: ReplayJob;
  private readonly decisions: ReplayedDecision[] = [];
  private readonly buffer = new Map<number, RankReport[]>();
  private readonly pending: ReplaySwitch[] = [];
  private released = -Infinity;
  private started = false;
  private clock = REPLAY_EPOCH_MS;
  /** The newest time a report said (`sentAt`), or the start, and the iteration time summed since. */
  private anchor = REPLAY_EPOCH_MS;
  private sinceAnchorMs = 0;
  private lastDurationMs = DEFAULT_ITERATION_MS;
  private version = 0;
  private readonly summary: ReplaySummary = {
    reports: 0,
    iterations: { first: null, last: null, count: 0 },
    duplicates: 0,
    staleLayout: 0,
    late: 0,
    skipped: 0,
    rejected: { total: 0, byReason: {}, first: [] },
    switches: 0,
    switchesByKind: {},
    declined: 0,
    declinedRuns: 0,
  };

  constructor(readonly registration: Registration, private readonly config: PipemorphConfig, solver?: MilpSolver, private readonly chart?: ReplayChartCollector) {
    this.replay = new ReplayJob(registration, config, solver);
    this.replay.onDecision = (record) => this.noteDecision(record);
  }

  /** Reporting ranks: one per (dp, pp), tp 0. */
  private get reportingRanks(): number {
    return this.replay.job.reporting.length;
  }

  /** One recorded message, in recorded order. */
  take(message: RecordedMessage): void {
    let report: RankReport;
    try {
      const parsed = parseReportStreamMessage(message.raw, this.registration.jobId);
      if (parsed.type !== 'report') {
        this.summary.skipped++;
        return;
      }
      report = parsed;
      const job = this.replay.job;
      if (!job.positionOf.has(report.rank)) throw new ProtocolError(`rank ${report.rank} is not a reporting rank (tp 0) of job ${job.jobId}`);
      if (!job.progress.plausibleIteration(report.iteration, this.clock, this.config.ingest.maxIterationJump)) {
        throw new ProtocolError(`report: iteration ${report.iteration} is implausible: the job is at iteration ${job.progress.maxIteration} (at most ${this.config.ingest.maxIterationJump} ahead)`);
      }
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      this.reject(message.where, error.message);
      return;
    }
    if (report.iteration <= this.released) {
      // Its iteration was replayed already: taken now, as the daemon takes a late report.
      this.summary.late++;
      this.observe([report]);
      return;
    }
    const list = this.buffer.get(report.iteration);
    if (list) list.push(report);
    else this.buffer.set(report.iteration, [report]);
    this.releaseReady(false);
  }

  /** The end of the recording: the iterations still waiting, then the result. */
  finish(): ReplayResult {
    this.releaseReady(true);
    if (!this.started) this.start(this.clock);
    return { decisions: this.decisions, summary: this.summary };
  }

  private reject(where: string, reason: string): void {
    const r = this.summary.rejected;
    r.total++;
    const key = reasonClass(reason);
    r.byReason[key] = (r.byReason[key] ?? 0) + 1;
    if (r.first.length < REJECTIONS_LISTED) r.first.push({ where, reason });
  }

  private releaseReady(all: boolean): void {
    while (this.buffer.size > 0) {
      let oldest = Infinity;
      let newest = -Infinity;
      for (const it of this.buffer.keys()) {
        if (it < oldest) oldest = it;
        if (it > newest) newest = it;
      }
      const reports = this.buffer.get(oldest)!;
      const complete = new Set(reports.map((r) => r.rank)).size >= this.reportingRanks;
      if (!all && !complete && newest - oldest < REORDER_WINDOW) return;
      this.buffer.delete(oldest);
      this.released = oldest;
      this.replayIteration(oldest, reports);
    }
  }

  /** The job's first plan, decided before its first report at `at` (as the daemon commits it at registration). */
  private start(at: number): void {
    this.started = true;
    this.clock = at;
    this.anchor = at;
    const first = this.replay.endIteration(at);
    if (first) this.switched(first);
  }

  private replayIteration(iteration: number, reports: RankReport[]): void {
    const sent = reports.map((r) => r.sentAt).filter((t): t is number => typeof t === 'number' && Number.isFinite(t));
    const measured = reports.map((r) => r.iterationMs).filter((t): t is number => typeof t === 'number' && Number.isFinite(t) && t >= 0);
    const durationMs = measured.length > 0 ? lowerMedian(measured) : this.lastDurationMs;
    this.lastDurationMs = durationMs;
    if (!this.started) this.start(sent.length > 0 ? lowerMedian(sent) - durationMs : REPLAY_EPOCH_MS);
    if (sent.length > 0) {
      this.anchor = lowerMedian(sent);
      this.sinceAnchorMs = 0;
    } else {
      this.sinceAnchorMs += durationMs;
    }
    this.clock = Math.max(this.clock, this.anchor + this.sinceAnchorMs);
    // The schedule the replay's ranks run at this iteration.
    while (this.pending.length > 0 && this.pending[0].effectiveIteration <= iteration) this.version = this.pending.shift()!.version;
    this.observe(reports);
    const s = this.replay.endIteration(this.clock);
    if (s) this.switched(s);
    const it = this.summary.iterations;
    it.count++;
    if (it.first === null || iteration < it.first) it.first = iteration;
    if (it.last === null || iteration > it.last) it.last = iteration;
    this.chart?.sample(iteration, this.replay.job.detector.snapshot());
  }

  private observe(reports: RankReport[]): void {
    for (const report of reports) {
      const r = report.scheduleVersion === this.version ? report : { ...report, scheduleVersion: this.version };
      const outcome = this.replay.observe(r, this.clock);
      if (outcome === 'accepted') this.summary.reports++;
      else if (outcome === 'duplicate') this.summary.duplicates++;
      else this.summary.staleLayout++;
    }
  }

  private switched(s: ReplaySwitch): void {
    this.pending.push(s);
    for (let k = this.decisions.length - 1; k >= 0; k--) {
      if (this.decisions[k].scheduleVersion !== s.version) continue;
      this.decisions[k].effectiveIteration = s.effectiveIteration;
      break;
    }
    if (s.decision.kind !== 'initial') {
      this.summary.switches++;
      this.summary.switchesByKind[s.decision.kind] = (this.summary.switchesByKind[s.decision.kind] ?? 0) + 1;
    }
    this.chart?.switched({ iteration: s.record.iteration, effectiveIteration: s.effectiveIteration, kind: s.decision.kind, version: s.version, reason: s.record.reason });
  }

  /** As the daemon's decision log keeps them: a run of the same declined decision is one entry. */
  private noteDecision(record: DecisionRecord): void {
    if (record.verdict !== 'taken') {
      this.summary.declined++;
      this.chart?.declinedAt(record.iteration, record.kind);
    }
    const last = this.decisions[this.decisions.length - 1];
    if (last && record.verdict !== 'taken' && last.verdict === record.verdict && last.kind === record.kind && stragglerKey(last) === stragglerKey(record)) {
      this.decisions[this.decisions.length - 1] = { ...record, repeats: last.repeats + 1, firstIteration: last.firstIteration, effectiveIteration: null };
      return;
    }
    if (record.verdict !== 'taken') this.summary.declinedRuns++;
    this.decisions.push({ ...record, effectiveIteration: null });
  }
}
