import { Controller, Get, HttpCode, HttpException, HttpStatus, Inject } from '@nestjs/common';
import { IngestService } from '../ingest/ingest.service';
import { JOB_STORE, JobStore } from '../store/job-store.repository';

@Controller('health')
export class HealthController {
  constructor(@Inject(JOB_STORE) private readonly store: JobStore, private readonly ingest: IngestService) {}

  /**
   * Live unless the ingest loop has completed no pass for ingest.stallTimeoutMs while Redis
   * answers: then the fault is this process's and a restart may cure it. While Redis is down a
   * restart cures nothing, so the pod stays live (and unready).
   */
  @Get('live')
  @HttpCode(200)
  async live(): Promise<{ status: 'ok' }> {
    if (!this.ingest.live && (await this.store.ping())) throw new HttpException({ status: 'stalled', ingest: false, redis: true }, HttpStatus.SERVICE_UNAVAILABLE);
    return { status: 'ok' };
  }

  /**
   * Ready when Redis answers and the ingest loop is reading: the replica can lead jobs. A loop
   * whose passes keep failing is not ready, whatever PING says, and the body says why.
   */
  @Get('ready')
  async ready(): Promise<{ status: 'ok'; redis: true; ingest: true }> {
    const redis = await this.store.ping();
    const ingest = this.ingest.healthy;
    if (!redis || !ingest) {
      const reason = !redis ? 'Redis does not answer' : this.ingest.unreadyReason;
      throw new HttpException({ status: 'unavailable', redis, ingest, reason }, HttpStatus.SERVICE_UNAVAILABLE);
    }
    return { status: 'ok', redis: true, ingest: true };
  }
}
