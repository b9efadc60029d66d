import { BadRequestException, Controller, Get, Inject, NotFoundException, Param } from '@nestjs/common';
import { PublishedSchedule } from '../../protocol/protocol-v1.type';
import { JOB_ID_PATTERN } from '../../protocol/redis-keys';
import { JobRegistry } from '../jobs/job-registry.service';
import { JobRuntime } from '../jobs/job-runtime';
import { JOB_STORE, JobStore } from '../store/job-store.repository';

function checkId(id: string): string {
  if (!JOB_ID_PATTERN.test(id)) throw new BadRequestException(`job id must match ${JOB_ID_PATTERN.source}`);
  return id;
}

function summary(job: JobRuntime) {
  const open = job.switching.handshake;
  return {
    jobId: job.jobId,
    stages: job.spec.stages,
    microbatches: job.spec.microbatches,
    dp: job.spec.dp,
    tp: job.spec.tp,
    epoch: job.epoch,
    iteration: job.progress.maxIteration,
    iterationMs: Number.isFinite(job.progress.iterationMs) ? job.progress.iterationMs : null,
    scheduleVersion: job.committed?.version ?? null,
    handshake: open ? { version: open.schedule.version, effectiveIteration: open.schedule.effectiveIteration, acked: open.acked.size, of: job.reporting.length } : null,
    stragglers: job.detector.activeStragglerCount(),
    delegatedRanks: job.committed?.delegation.length ?? 0,
    staleRanks: [...job.progress.staleRanks],
    topology: {
      version: job.layout.topology?.version ?? 0,
      sinceVersion: job.layout.topology?.sinceVersion ?? null,
      pendingVersion: job.layout.pendingTopology?.version ?? null,
      staleLayoutReports: job.layout.staleLayoutReports,
    },
    overrides: overridesSummary(job),
  };
}

/** The per-job overrides in force, in brief (GET /jobs/:id/overrides has them in full). */
function overridesSummary(job: JobRuntime) {
  const doc = job.overrides.inForce;
  return doc ? { version: doc.version, setBy: doc.setBy, reason: doc.reason, pauseDetection: job.overrides.pauseDetection, pauseSwitching: job.overrides.pauseSwitching } : null;
}

/** Read-only view of the jobs this replica owns; per-rank detail lives here, not in metric labels. */
@Controller('jobs')
export class JobsController {
  constructor(private readonly registry: JobRegistry, @Inject(JOB_STORE) private readonly store: JobStore) {}

  @Get()
  list() {
    return { replica: this.registry.replicaId, jobs: this.registry.all().map(summary) };
  }

  @Get(':id')
  detail(@Param('id') id: string) {
    const job = this.owned(checkId(id));
    const snapshot = job.detector.snapshot();
    return {
      ...summary(job),
      counters: job.counters,
      links: { pipeline: snapshot.pipelineLinks, dataParallel: snapshot.dataParallelLinks },
      stragglers: {
        pipeline: snapshot.pipelineLinks.filter((l) => l.straggler),
        dataParallel: snapshot.dataParallelLinks.filter((l) => l.straggler),
        compute: snapshot.compute.filter((c) => c.straggler),
      },
      stageTimes: snapshot.stageTimes,
      detection: job.detector.noise(),
      schedule: job.committed
        ? { version: job.committed.version, effectiveIteration: job.committed.effectiveIteration, warmups: job.committed.pipelines.map((p) => ({ dpReplicas: p.dpReplicas, warmup: p.warmup })), delegation: job.committed.delegation, reason: job.committed.reason, prediction: job.committed.prediction }
        : null,
    };
  }

  /**
   * The job's newest control decisions (schemas/jobs-api.v1.schema.json, `decisionLog`): taken,
   * declined and paused, with evidence, prediction and cost; and the changes of its per-job
   * overrides (who, what, when) as this replica applied or refused them.
   */
  @Get(':id/decisions')
  decisions(@Param('id') id: string) {
    const job = this.owned(checkId(id));
    return { jobId: job.jobId, total: job.decisions.count, decisions: job.decisions.recent(), overrideChanges: job.overrides.changes };
  }

  @Get(':id/schedule')
  async schedule(@Param('id') id: string): Promise<PublishedSchedule> {
    const { committed } = await this.store.readSchedules(checkId(id));
    if (!committed) throw new NotFoundException(`job ${id} has no committed schedule`);
    return committed;
  }

  private owned(id: string): JobRuntime {
    const job = this.registry.get(id);
    if (!job) throw new NotFoundException(`job ${id} is not owned by this replica (${this.registry.replicaId})`);
    return job;
  }
}
