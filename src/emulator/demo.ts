/**
 * The live demo (npm run demo): the daemon and an emulated 8-stage training job against Redis.
 * A 60 ms straggler appears on the link between stages 6 and 7, the daemon detects it, switches
 * the job to a schedule with more slackness there and CPU delegation at both ends, and returns
 * it to its initial plan once the link heals. One line per iteration, then a summary.
 */
import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import Redis from 'ioredis';
import { AppModule } from '../daemon/app.module';
import { loadConfig } from '../daemon/config/load-config';
import { JobRegistry } from '../daemon/jobs/job-registry.service';
import { stepDelay } from './delay/step-delay';
import { DEFAULT_EMULATION, EmulatedJob } from './emulated-job';
import { RankGroup } from './rank-group';
import { megatron8, scenarios } from './scenarios';
import { runStaticPolicy } from './static-policy';

const SLOW_LINK = 6;
const DELAY_MS = 60;
const START = 12;
const END = 52;
const ITERATIONS = 80;
/** Emulated time runs this many times faster than the wall clock. */
const SPEED = 5;

const tty = process.stdout.isTTY;
const paint = (code: string, text: string) => (tty ? `\x1b[${code}m${text}\x1b[0m` : text);

function bar(ms: number, healthyMs: number): string {
  const width = 24;
  const filled = Math.max(1, Math.min(width, Math.round((ms / (healthyMs * 2)) * width)));
  const text = '█'.repeat(filled) + '·'.repeat(width - filled);
  return ms > healthyMs * 1.1 ? paint('31', text) : paint('32', text);
}

async function main(): Promise<void> {
  const config = loadConfig();
  config.http.port = Number(process.env.PORT ?? 8080);
  config.control.minReplanIntervalMs = 0;
  let stopping = false;
  process.once('SIGINT', () => {
    stopping = true;
    process.stdout.write('\n(stopping after this iteration)\n');
  });

  const redis = new Redis(config.redis.url, { maxRetriesPerRequest: 1 });
  try {
    await redis.ping();
  } catch {
    throw new Error(`no Redis answers at ${config.redis.url}: run scripts/ensure-redis.sh (starts or installs one) or set REDIS_URL`);
  }
  let app: INestApplication;
  try {
    app = await NestFactory.create(AppModule.forRoot(config), { logger: false });
    await app.listen(config.http.port, '127.0.0.1');
  } catch {
    config.http.port = 0;
    app = await NestFactory.create(AppModule.forRoot(config), { logger: false });
    await app.listen(0, '127.0.0.1');
  }
  const port = (app.getHttpServer().address() as { port: number }).port;
  const registry = app.get(JobRegistry);

  const profile = megatron8();
  const delays = stepDelay([{ fromIteration: START, links: [SLOW_LINK], delayMs: DELAY_MS }, { fromIteration: END, links: [SLOW_LINK], delayMs: 0 }]);
  const jobId = `demo-${Date.now().toString(36)}`;
  const job = new EmulatedJob(jobId, profile, 1, delays, DEFAULT_EMULATION);
  const scenario = scenarios().find((s) => s.name.includes('link 6-7'))!;
  const group = new RankGroup(redis, job, { lockstep: true, deviceActivations: scenario.deviceActivations, hostActivations: 64 });

  console.log(paint('1', 'pipemorph live demo') + `: daemon on http://127.0.0.1:${port} (try /jobs/${jobId}), Redis at ${config.redis.url}`);
  console.log(`emulated job: 8 stages x 32 microbatches (Megatron GPT profile, scaled), +${DELAY_MS} ms on link ${SLOW_LINK}-${SLOW_LINK + 1} from iteration ${START} to ${END}, time x${SPEED}\n`);
  await group.register();
  const first = await group.connect();
  const healthyMs = runStaticPolicy(new EmulatedJob('h', profile, 1, stepDelay([]), DEFAULT_EMULATION), 'zb-static', 10).reduce((a, r) => a + r.iterationMs, 0) / 10;
  console.log(`initial schedule v${first.version}: warm-up ${first.pipelines[0].warmup.join(',')} (Alg. 1 within device memory), healthy iteration about ${healthyMs.toFixed(0)} ms\n`);

  const rows: Array<{ iteration: number; ms: number; version: number; delayed: boolean }> = [];
  try {
    for (let i = 0; i < ITERATIONS && !stopping; i++) {
      const started = Date.now();
      const result = await group.step();
      const version = group.history[group.history.length - 1].versions[0];
      const runtime = registry.get(jobId);
      const snapshot = runtime?.detector.snapshot();
      const slow = snapshot?.pipelineLinks.filter((l) => l.straggler).map((l) => `link ${l.link}-${l.link + 1} +${l.extraMs.toFixed(0)} ms`) ?? [];
      const running = group.agreedVersion(i);
      const delegation = running.delegation.map((d) => d.rank).join(',') || '-';
      const pending = runtime?.handshake ? paint('33', ` switching to v${runtime.handshake.schedule.version} at it ${runtime.handshake.schedule.effectiveIteration}`) : '';
      const injected = delays.delayMs(SLOW_LINK, 0, i) > 0 ? paint('31', `injected +${DELAY_MS} ms`) : 'healthy link  ';
      console.log(
        `it ${String(i).padStart(3)}  ${result.iterationMs.toFixed(0).padStart(5)} ms ${bar(result.iterationMs, healthyMs)}  v${version}  ${injected}  detected: ${slow.join(', ') || '-'}  delegation: ${delegation}${pending}`,
      );
      rows.push({ iteration: i, ms: result.iterationMs, version, delayed: delays.delayMs(SLOW_LINK, 0, i) > 0 });
      const wait = result.iterationMs / SPEED - (Date.now() - started);
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  } finally {
    await group.cleanup();
    await app.close();
    await redis.quit();
  }
  summary(rows, healthyMs, profile);
  console.log('\nswitches:');
  for (const s of group.learned()) {
    console.log(`  v${s.version} from iteration ${s.effectiveIteration}: ${s.reason.kind} - ${s.reason.detail}; warm-up ${s.pipelines[0].warmup.join(',')}; predicted ${s.prediction.newMs.toFixed(0)} ms${s.prediction.previousMs ? ` (was ${s.prediction.previousMs.toFixed(0)} ms)` : ''}`);
  }
}

function summary(rows: Array<{ iteration: number; ms: number; version: number; delayed: boolean }>, healthyMs: number, profile: ReturnType<typeof megatron8>): void {
  if (rows.length === 0) return;
  const firstVersion = rows[0].version;
  const phases = [
    { name: 'healthy', keep: (r: (typeof rows)[0]) => !r.delayed && r.iteration < START },
    { name: 'straggler, old schedule', keep: (r: (typeof rows)[0]) => r.delayed && r.version === firstVersion },
    { name: 'straggler, adapted', keep: (r: (typeof rows)[0]) => r.delayed && r.version !== firstVersion },
    { name: 'healed', keep: (r: (typeof rows)[0]) => !r.delayed && r.iteration >= START },
  ];
  const staticRun = runStaticPolicy(new EmulatedJob('s', profile, 1, stepDelay([{ fromIteration: 0, links: [SLOW_LINK], delayMs: DELAY_MS }]), DEFAULT_EMULATION), 'zb-static', 20);
  const staticMs = staticRun.reduce((a, r) => a + r.iterationMs, 0) / staticRun.length;
  console.log('\n' + paint('1', 'summary'));
  console.log('phase                       iterations   mean ms   vs healthy');
  for (const phase of phases) {
    const kept = rows.filter(phase.keep);
    if (kept.length === 0) continue;
    const ms = kept.reduce((a, r) => a + r.ms, 0) / kept.length;
    console.log(`${phase.name.padEnd(28)}${String(kept.length).padStart(10)}${ms.toFixed(0).padStart(10)}${(ms / healthyMs).toFixed(2).padStart(12)}x`);
  }
  console.log(`${'straggler, static ZB only'.padEnd(28)}${'(model)'.padStart(10)}${staticMs.toFixed(0).padStart(10)}${(staticMs / healthyMs).toFixed(2).padStart(12)}x`);
  console.log(`\nversions used: ${[...new Set(rows.map((r) => r.version))].map((v) => 'v' + v).join(' -> ')}; no iteration mixed versions across ranks.`);
}

main().catch((error) => {
  console.error(`demo failed: ${(error as Error).message}`);
  process.exit(1);
});
