import { BadRequestException, Controller, Get, Header, Inject, NotFoundException, Param } from '@nestjs/common';
import { TransportConfig } from '../../core/control/control-config.type';
import { renderJobPage } from '../../core/render/job-page-html';
import { JOB_ID_PATTERN } from '../../protocol/redis-keys';
import { PIPEMORPH_CONFIG, PipemorphConfig } from '../config/pipemorph-config.type';
import { JobRegistry } from '../jobs/job-registry.service';
import { JobRuntime } from '../jobs/job-runtime';
import { jobPageView, jobTimelineSvg } from './job-view.model';

/**
 * Pictures of a job this replica owns: the before/after timeline as SVG and a self-contained
 * HTML page (stragglers, link-delay heat strip, versions, timeline). Linked from the Grafana
 * dashboard and the alerts' runbooks (docs/operations.md).
 */
@Controller('jobs')
export class JobViewController {
  constructor(
    private readonly registry: JobRegistry,
    @Inject(PIPEMORPH_CONFIG) private readonly config: PipemorphConfig,
  ) {}

  /** The transport the control loop predicts with, so pictures and predictions agree. */
  private get transport(): TransportConfig {
    const { gpuSendsInFlight, delegateCopyOverhead } = this.config.control;
    return { gpuSendsInFlight, delegateCopyOverhead };
  }

  @Get(':id/timeline.svg')
  @Header('Content-Type', 'image/svg+xml; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  timeline(@Param('id') id: string): string {
    const svg = jobTimelineSvg(this.owned(id), undefined, this.transport);
    if (svg === null) throw new NotFoundException(`job ${id} has no schedule yet`);
    return svg;
  }

  @Get(':id/view')
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  // Nothing on the page loads from elsewhere or runs: say so to the browser too.
  @Header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'")
  view(@Param('id') id: string): string {
    return renderJobPage(jobPageView(this.owned(id), this.transport));
  }

  private owned(id: string): JobRuntime {
    if (!JOB_ID_PATTERN.test(id)) throw new BadRequestException(`job id must match ${JOB_ID_PATTERN.source}`);
    const job = this.registry.get(id);
    if (!job) throw new NotFoundException(`job ${id} is not owned by this replica (${this.registry.replicaId})`);
    return job;
  }
}
