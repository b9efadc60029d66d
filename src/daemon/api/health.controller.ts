import { Controller, Get, HttpCode, HttpException, HttpStatus, Inject } from '@nestjs/common';
import { IngestService } from '../ingest/ingest.service';
import { JOB_STORE, JobStore } from '../store/job-store.repository';

@Controller('health')
export class HealthController {
  constructor(@Inject(JOB_STORE) private readonly store: JobStore, private readonly ingest: IngestService) {}

  @Get('live')
  @HttpCode(200)
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** Ready when Redis answers and the ingest loop is reading. */
  @Get('ready')
  async ready(): Promise<{ status: 'ok'; redis: true; ingest: true }> {
    const redis = await this.store.ping();
    const ingest = this.ingest.healthy;
    if (!redis || !ingest) throw new HttpException({ status: 'unavailable', redis, ingest }, HttpStatus.SERVICE_UNAVAILABLE);
    return { status: 'ok', redis: true, ingest: true };
  }
}
