import { Inject, Injectable, Logger } from '@nestjs/common';
import { Clock } from '../../core/clock/clock.type';
import { JobOverrides, MAX_OVERRIDES_BYTES } from '../../protocol/job-overrides';
import { jobKeys } from '../../protocol/redis-keys';
import { CLOCK } from '../clock/clock.token';
import { PIPEMORPH_CONFIG, PipemorphConfig } from '../config/pipemorph-config.type';
import { OverridesChange, OverridesSeen } from '../jobs/job-overrides.model';
import { JobRuntime } from '../jobs/job-runtime';
import { MetricsService } from '../metrics/metrics.service';
import { JOB_STORE, JobStore } from '../store/job-store.repository';
import { EffectiveKnobs, effectiveKnobs, validateOverrides, validateOverridesText } from './effective-knobs';

/** What the leader remembers of a key that is not a string (WRONGTYPE): never equal to a text it could hold. */
const NOT_A_STRING = '\u0000not a string';

/** The outcome of an operator's write through the API (OverridesController turns it into HTTP). */
export type OverridesWrite =
  | { status: 'written'; overrides: JobOverrides; text: string }
  | { status: 'cleared'; existed: boolean }
  | { status: 'not-registered' }
  | { status: 'invalid'; problems: string[] }
  | { status: 'conflict'; message: string };

/** GET /jobs/:id/overrides (schemas/jobs-api.v1.schema.json, `overridesView`). */
export interface OverridesView {
  jobId: string;
  replica: string;
  /** Whether this replica leads the job (inForce, effective and changes are the leader's). */
  leading: boolean;
  /** The key's document when it is valid. */
  stored: JobOverrides | null;
  /** Why the key's content is refused (empty when valid or absent). */
  storedProblems: string[];
  inForce: JobOverrides | null;
  effective: EffectiveKnobs | null;
  changes: readonly OverridesChange[];
}

/** The version stored in a key's text when it says one (0: none, or not readable). */
function storedVersion(text: string | null): number {
  if (text === null) return 0;
  try {
    const v = (JSON.parse(text) as { version?: unknown }).version;
    return typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : 0;
  } catch {
    return 0;
  }
}

/**
 * Per-job overrides (schemas/job-overrides.v1.schema.json) in `pipemorph:{<job>}:overrides`: the
 * operator writes them (the guarded API below, or the operator's Redis user); the replica leading
 * the job reads the key when it takes the job (before its first decision) and at every discovery
 * (jobs.discoveryIntervalMs), validates what it reads as strictly as the API does, and applies a
 * valid change without a restart (JobRuntime.applyOverrides). A key that fails validation is
 * refused like any bad input: counted, copied to the job's rejected stream with the reasons,
 * logged and noted in the job's changes; what was in force stays.
 */
@Injectable()
export class OverridesService {
  private readonly logger = new Logger(OverridesService.name);
  /** Jobs with a background read of their key queued or running (poll): one at a time. */
  private readonly polling = new WeakSet<JobRuntime>();

  constructor(
    @Inject(JOB_STORE) private readonly store: JobStore,
    @Inject(PIPEMORPH_CONFIG) private readonly config: PipemorphConfig,
    private readonly metrics: MetricsService,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  /**
   * A replica takes the job (JobRegistry.adopt), before the runtime decides anything: an earlier
   * runtime of the job on this replica hands over what it had in force (so a refused key keeps it
   * in force here too), then the key is read and applied.
   */
  async adopt(job: JobRuntime, previous?: JobRuntime): Promise<void> {
    if (previous) {
      job.overrides.inherit(previous.overrides);
      if (previous.overrides.inForce) job.applyOverrides(previous.overrides.inForce, effectiveKnobs(this.config, previous.overrides.inForce), previous.overrides.lastText);
    }
    await this.refresh(job, 'adoption');
    this.publishGauges(job);
  }

  /** At each discovery: reads the key of a led job in the background, between its control steps (never during one). */
  poll(job: JobRuntime): void {
    if (job.released || this.polling.has(job)) return;
    this.polling.add(job);
    job
      .serialize(() => this.refresh(job, 'poll'))
      .catch((error) => this.logger.error(`job ${job.jobId}: reading overrides failed: ${(error as Error).message}`))
      .finally(() => this.polling.delete(job));
  }

  /** Reads the key and handles its content now. */
  async refresh(job: JobRuntime, seen: OverridesSeen): Promise<void> {
    if (job.released) return;
    let text: string | null;
    try {
      text = await this.store.readOverrides(job.jobId);
    } catch (error) {
      if (!/WRONGTYPE/.test((error as Error).message)) throw error;
      text = NOT_A_STRING;
    }
    await this.handle(job, text, seen);
  }

  /**
   * Applies the key's content (null: absent) to a job this replica leads, unless it is what was
   * handled last. `who`: the operator of an API delete (the key keeps no trace of it).
   */
  async handle(job: JobRuntime, text: string | null, seen: OverridesSeen, who: { setBy?: string; reason?: string } = {}): Promise<void> {
    if (job.released || text === job.overrides.lastText) return;
    const at = this.clock.now();
    const base = { at, seen, setAt: null, problems: [] };
    if (text === null) {
      const was = job.overrides.inForce;
      job.applyOverrides(null, effectiveKnobs(this.config, null), null, { ...base, action: 'cleared', version: null, setBy: who.setBy ?? null, reason: who.reason ?? null, overrides: null });
      this.metrics.overrides.inc({ source: 'leader', result: 'cleared' });
      this.publishGauges(job);
      this.logger.log(`job ${job.jobId}: overrides${was ? ` v${was.version}` : ''} cleared${who.setBy ? ` by ${who.setBy}` : ''}; the configuration applies again`);
      return;
    }
    const parsed = text === NOT_A_STRING ? { ok: false as const, problems: [`${jobKeys(job.jobId).overrides} is not a string key (WRONGTYPE)`] } : validateOverridesText(this.config, text);
    if (!parsed.ok) {
      job.overrides.refused(text);
      job.overrides.record({ ...base, action: 'rejected', version: null, setBy: null, reason: null, overrides: null, problems: parsed.problems });
      this.metrics.overrides.inc({ source: 'leader', result: 'rejected' });
      const kept = job.overrides.inForce ? `v${job.overrides.inForce.version} stays in force` : 'the configuration stays in force';
      this.logger.warn(`job ${job.jobId}: overrides refused (${parsed.problems.join('; ')}); ${kept}`);
      const { rejectedMaxLen, rejectedCopyBytes } = this.config.ingest;
      await this.store.reject(jobKeys(job.jobId).rejected, text === NOT_A_STRING ? null : text, `overrides: ${parsed.problems.join('; ')}`, rejectedMaxLen, rejectedCopyBytes);
      return;
    }
    const doc = parsed.overrides;
    job.applyOverrides(doc, effectiveKnobs(this.config, doc), text, { ...base, action: 'applied', version: doc.version, setBy: doc.setBy, reason: doc.reason, setAt: doc.setAt ?? null, overrides: doc });
    this.metrics.overrides.inc({ source: 'leader', result: 'applied' });
    this.publishGauges(job);
    this.logger.log(`job ${job.jobId}: overrides v${doc.version} by ${doc.setBy} in force (${doc.reason}): ${describe(doc)}`);
  }

  /**
   * PUT /jobs/:id/overrides (authorized): the body is a document without `version` and `setAt`,
   * which are set here (a body's `version` must be the next one, else it conflicts); validated
   * like the leader validates the key; written only if the key has not changed since it was read.
   * A refused body is counted and copied to the job's rejected stream.
   */
  async write(jobId: string, body: string): Promise<OverridesWrite> {
    if (!(await this.store.loadSpec(jobId))) return this.counted('rejected', { status: 'not-registered' });
    let value: unknown;
    const bytes = Buffer.byteLength(body, 'utf8');
    if (bytes > MAX_OVERRIDES_BYTES) return this.refuse(jobId, body, [`body is ${bytes} bytes, more than ${MAX_OVERRIDES_BYTES}`]);
    try {
      value = JSON.parse(body);
    } catch (error) {
      return this.refuse(jobId, body, [`body is not JSON: ${(error as Error).message}`]);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return this.refuse(jobId, body, ['body must be a JSON object (schemas/job-overrides.v1.schema.json)']);
    let current: string | null;
    try {
      current = await this.store.readOverrides(jobId);
    } catch (error) {
      if (!/WRONGTYPE/.test((error as Error).message)) throw error;
      return this.counted('conflict', { status: 'conflict', message: `${jobKeys(jobId).overrides} is not a string key: DELETE /jobs/${jobId}/overrides first` });
    }
    const next = storedVersion(current) + 1;
    const given = value as Record<string, unknown>;
    const doc = { ...given, version: given.version ?? next, setAt: this.clock.now() };
    const parsed = validateOverrides(this.config, doc);
    if (!parsed.ok) return this.refuse(jobId, body, parsed.problems);
    if (parsed.overrides.version !== next) return this.counted('conflict', { status: 'conflict', message: `version ${parsed.overrides.version} is not the next one (${next}): the stored overrides changed; read them again` });
    const text = JSON.stringify(parsed.overrides);
    if (!(await this.store.replaceOverrides(jobId, current, text))) return this.counted('conflict', { status: 'conflict', message: 'the stored overrides changed while this write was made; read them again' });
    this.metrics.overrides.inc({ source: 'api', result: 'applied' });
    this.logger.log(`job ${jobId}: overrides v${parsed.overrides.version} written through the API by ${parsed.overrides.setBy} (${parsed.overrides.reason}): ${describe(parsed.overrides)}`);
    return { status: 'written', overrides: parsed.overrides, text };
  }

  /** DELETE /jobs/:id/overrides (authorized): the key is deleted, whatever it holds; the configuration applies again. */
  async clear(jobId: string, setBy?: string): Promise<OverridesWrite> {
    if (!(await this.store.loadSpec(jobId))) return this.counted('rejected', { status: 'not-registered' });
    let existed = true;
    try {
      existed = (await this.store.readOverrides(jobId)) !== null;
    } catch {
      // a key of another type: deleted below all the same
    }
    await this.store.replaceOverrides(jobId, undefined, null);
    this.metrics.overrides.inc({ source: 'api', result: 'cleared' });
    this.logger.log(`job ${jobId}: overrides deleted through the API${setBy ? ` by ${setBy}` : ''}`);
    return { status: 'cleared', existed };
  }

  /** What GET /jobs/:id/overrides answers: the key, validated now, and on the leader what it has in force. */
  async view(jobId: string, replica: string, job: JobRuntime | undefined): Promise<OverridesView | null> {
    let text: string | null;
    let problems: string[] = [];
    try {
      text = await this.store.readOverrides(jobId);
    } catch (error) {
      if (!/WRONGTYPE/.test((error as Error).message)) throw error;
      text = null;
      problems = [`${jobKeys(jobId).overrides} is not a string key (WRONGTYPE)`];
    }
    if (!job && text === null && problems.length === 0 && !(await this.store.loadSpec(jobId))) return null;
    let stored: JobOverrides | null = null;
    if (text !== null) {
      const parsed = validateOverridesText(this.config, text);
      if (parsed.ok) stored = parsed.overrides;
      else problems = parsed.problems;
    }
    return {
      jobId,
      replica,
      leading: job !== undefined,
      stored,
      storedProblems: problems,
      inForce: job?.overrides.inForce ?? null,
      effective: job?.overrides.effective ?? null,
      changes: job?.overrides.changes ?? [],
    };
  }

  /** Counts an API request refused before any write (`result`), and returns `outcome`. */
  counted<T>(result: 'rejected' | 'unauthorized' | 'conflict', outcome: T): T {
    this.metrics.overrides.inc({ source: 'api', result });
    return outcome;
  }

  private async refuse(jobId: string, body: string, problems: string[]): Promise<OverridesWrite> {
    const { rejectedMaxLen, rejectedCopyBytes } = this.config.ingest;
    await this.store.reject(jobKeys(jobId).rejected, body, `overrides (API): ${problems.join('; ')}`, rejectedMaxLen, rejectedCopyBytes);
    this.logger.warn(`job ${jobId}: overrides refused through the API: ${problems.join('; ')}`);
    return this.counted('rejected', { status: 'invalid', problems });
  }

  private publishGauges(job: JobRuntime): void {
    if (job.released) return;
    const o = job.overrides;
    this.metrics.overridesInForce(job.jobId, o.inForce?.version ?? 0, o.pauseDetection, o.pauseSwitching);
  }
}

/** The document's changes in one line: `pauseSwitching, detection.enterAfter=4, control.minGain=0.1`. */
function describe(doc: JobOverrides): string {
  const parts: string[] = [];
  if (doc.pauseDetection) parts.push('detection paused');
  if (doc.pauseSwitching) parts.push('switching paused');
  for (const [k, v] of Object.entries(doc.detection ?? {})) parts.push(`detection.${k}=${v}`);
  for (const [k, v] of Object.entries(doc.control ?? {})) parts.push(`control.${k}=${v}`);
  return parts.length > 0 ? parts.join(', ') : 'no knob changed';
}
