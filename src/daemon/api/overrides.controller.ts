import { BadRequestException, ConflictException, Controller, Delete, ForbiddenException, Get, Headers, HttpCode, Inject, NotFoundException, Param, PayloadTooLargeException, Put, Query, Req, Res, UnauthorizedException } from '@nestjs/common';
import { createHash, timingSafeEqual } from 'node:crypto';
import { IncomingMessage } from 'node:http';
import { MAX_OVERRIDES_BYTES } from '../../protocol/job-overrides';
import { JOB_ID_PATTERN } from '../../protocol/redis-keys';
import { PIPEMORPH_CONFIG, PipemorphConfig } from '../config/pipemorph-config.type';
import { JobRegistry } from '../jobs/job-registry.service';
import { JobRuntime } from '../jobs/job-runtime';
import { OverridesService, OverridesView } from '../overrides/overrides.service';

/**
 * Whether an Authorization header carries `token` as a bearer token. Both sides are hashed first
 * and the digests compared with timingSafeEqual: the time taken depends on neither the token's
 * content nor its length.
 */
export function bearerMatches(header: string | undefined, token: string): boolean {
  if (token === '' || typeof header !== 'string') return false;
  const match = /^Bearer[ ]+(\S+)[ ]*$/i.exec(header);
  const given = createHash('sha256').update(match ? match[1] : '').digest();
  const expected = createHash('sha256').update(token).digest();
  return timingSafeEqual(given, expected) && match !== null;
}

/** The request body as text, at most `limit` bytes (null when longer: the rest is read and dropped). */
function readBody(req: IncomingMessage & { body?: unknown; _body?: boolean }, limit: number): Promise<string | null> {
  // A body parser in front (an application built with one) has read the stream already.
  if (req._body) return Promise.resolve(typeof req.body === 'string' ? req.body : JSON.stringify(req.body ?? null));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    req.on('end', () => resolve(size <= limit ? Buffer.concat(chunks).toString('utf8') : null));
    req.on('error', reject);
  });
}

interface HeaderSink {
  setHeader(name: string, value: string): void;
}

/**
 * Per-job overrides over HTTP (docs/operations.md#per-job-overrides). GET shows what is stored and,
 * on the leading replica, what is in force; it is read-only and open like the other GETs. PUT and
 * DELETE are the operator's: off (403) unless `http.operatorToken` is set, and then only with
 * `Authorization: Bearer <token>` (401 otherwise). Any replica takes a write; the leader applies it
 * at once when it is the one asked, else at its next discovery. Every refused write is counted
 * (pipemorph_overrides_total{source="api"}); a refused body is also kept in the job's rejected stream.
 */
@Controller('jobs/:id/overrides')
export class OverridesController {
  constructor(
    private readonly registry: JobRegistry,
    private readonly overrides: OverridesService,
    @Inject(PIPEMORPH_CONFIG) private readonly config: PipemorphConfig,
  ) {}

  @Get()
  async view(@Param('id') id: string): Promise<OverridesView> {
    if (!JOB_ID_PATTERN.test(id)) throw new BadRequestException(`job id must match ${JOB_ID_PATTERN.source}`);
    const view = await this.overrides.view(id, this.registry.replicaId, this.registry.get(id));
    if (!view) throw new NotFoundException(`job ${id} is not registered`);
    return view;
  }

  @Put()
  @HttpCode(200)
  async put(@Param('id') id: string, @Headers('authorization') authorization: string | undefined, @Req() req: IncomingMessage, @Res({ passthrough: true }) res: HeaderSink) {
    this.authorize(authorization, res);
    this.checkId(id);
    const body = await readBody(req, MAX_OVERRIDES_BYTES);
    if (body === null) {
      this.overrides.counted('rejected', null);
      throw new PayloadTooLargeException(`overrides body larger than ${MAX_OVERRIDES_BYTES} bytes`);
    }
    const leading = this.registry.get(id);
    const outcome = await this.writeAndApply(leading, () => this.overrides.write(id, body), async (job, written) => {
      if (written.status === 'written') await this.overrides.handle(job, written.text, 'api');
    });
    switch (outcome.status) {
      case 'not-registered':
        throw new NotFoundException(`job ${id} is not registered`);
      case 'invalid':
        throw new BadRequestException({ statusCode: 400, error: 'Bad Request', message: `invalid overrides: ${outcome.problems.join('; ')}`, problems: outcome.problems });
      case 'conflict':
        throw new ConflictException(outcome.message);
      case 'written':
        // Applied above when this replica leads the job; another replica's leader at its next discovery.
        return { jobId: id, overrides: outcome.overrides, appliedBy: leading ? this.registry.replicaId : null };
      default:
        throw new Error(`unexpected outcome ${outcome.status}`);
    }
  }

  @Delete()
  @HttpCode(200)
  async remove(@Param('id') id: string, @Headers('authorization') authorization: string | undefined, @Query('setBy') setBy: unknown, @Query('reason') reason: unknown, @Res({ passthrough: true }) res: HeaderSink) {
    this.authorize(authorization, res);
    this.checkId(id);
    const who = { setBy: typeof setBy === 'string' && setBy !== '' ? setBy.slice(0, 128) : undefined, reason: typeof reason === 'string' && reason !== '' ? reason.slice(0, 500) : undefined };
    const job = this.registry.get(id);
    const outcome = await this.writeAndApply(job, () => this.overrides.clear(id, who.setBy), async (leader, cleared) => {
      if (cleared.status === 'cleared') await this.overrides.handle(leader, null, 'api', who);
    });
    if (outcome.status === 'not-registered') throw new NotFoundException(`job ${id} is not registered`);
    return { jobId: id, cleared: outcome.status === 'cleared' && outcome.existed, appliedBy: job ? this.registry.replicaId : null };
  }

  /**
   * The key's write (or delete) and, on this replica when it leads the job, its application: one
   * step between the job's control steps, so a discovery poll queued before cannot see the new key
   * first and record the operator's change as its own.
   */
  private async writeAndApply<T>(leader: JobRuntime | undefined, write: () => Promise<T>, apply: (leader: JobRuntime, outcome: T) => Promise<void>): Promise<T> {
    if (!leader) return write();
    return leader.serialize(async () => {
      const outcome = await write();
      await apply(leader, outcome);
      return outcome;
    });
  }

  private authorize(authorization: string | undefined, res: HeaderSink): void {
    const token = this.config.http.operatorToken ?? '';
    if (token === '') {
      this.overrides.counted('unauthorized', null);
      throw new ForbiddenException('the operator API is off: no operator token is configured (http.operatorToken, or PIPEMORPH_OPERATOR_TOKEN)');
    }
    if (!bearerMatches(authorization, token)) {
      this.overrides.counted('unauthorized', null);
      res.setHeader('WWW-Authenticate', 'Bearer realm="pipemorph"');
      throw new UnauthorizedException(authorization ? 'wrong operator token' : 'operator token required: Authorization: Bearer <token>');
    }
  }

  private checkId(id: string): void {
    if (JOB_ID_PATTERN.test(id)) return;
    this.overrides.counted('rejected', null);
    throw new BadRequestException(`job id must match ${JOB_ID_PATTERN.source}`);
  }
}
