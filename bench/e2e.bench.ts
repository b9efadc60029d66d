/**
 * npm run bench:e2e: the same scenarios under four policies, in virtual time, in one process.
 * - zb-static / 1f1b-static: the schedule planned for the healthy job, never changed (GPU-direct sends);
 * - delegation-only: ZeroBubble with CPU delegation toggled on slow links (no re-scheduling);
 * - pipemorph: the real daemon (in this process) and emulated ranks speaking protocol v1 over Redis.
 * The emulator models head-of-line blocking (one GPU-direct send in flight per link direction),
 * delegate queues with a 2% copy cost, 1% op-time jitter. Last line: one JSON document.
 */
import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import Redis from 'ioredis';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppModule } from '../src/daemon/app.module';
import { loadConfig } from '../src/daemon/config/load-config';
import { constantDelay } from '../src/emulator/delay/constant-delay';
import { DEFAULT_EMULATION, EmulatedJob, IterationResult } from '../src/emulator/emulated-job';
import { RankGroup } from '../src/emulator/rank-group';
import { Scenario, scenarios } from '../src/emulator/scenarios';
import { runStaticPolicy, StaticPolicy } from '../src/emulator/static-policy';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const POLICIES = ['zb-static', '1f1b-static', 'delegation-only', 'pipemorph'] as const;
type Policy = (typeof POLICIES)[number];

function mean(results: IterationResult[], skip: number): number {
  const kept = results.slice(Math.min(skip, results.length - 1));
  return kept.reduce((a, r) => a + r.iterationMs, 0) / kept.length;
}

async function startDaemon(): Promise<INestApplication> {
  const config = loadConfig({ REDIS_URL });
  config.http.port = 0;
  config.ingest.blockMs = 5;
  config.jobs.discoveryIntervalMs = 20;
  // Wall-clock intervals mean nothing in virtual time: the hysteresis (in iterations) governs.
  config.control.minReplanIntervalMs = 0;
  const app = await NestFactory.create(AppModule.forRoot(config), { logger: false });
  await app.listen(0, '127.0.0.1');
  return app;
}

async function runPipemorph(redis: Redis, scenario: Scenario, index: number): Promise<IterationResult[]> {
  const job = new EmulatedJob(`bench-e2e-${index}-${Date.now().toString(36)}`, scenario.profile, 1, scenario.delays(), DEFAULT_EMULATION);
  const group = new RankGroup(redis, job, { lockstep: true, deviceActivations: scenario.deviceActivations, hostActivations: 64 });
  await group.register();
  await group.connect();
  const results: IterationResult[] = [];
  try {
    for (let i = 0; i < scenario.iterations; i++) results.push(await group.step());
    const mixed = group.history.filter((h) => new Set(h.versions).size > 1);
    if (mixed.length > 0) throw new Error(`${scenario.name}: ${mixed.length} iterations ran mixed schedule versions`);
  } finally {
    await group.cleanup();
  }
  return results;
}

async function main(): Promise<void> {
  const redis = new Redis(REDIS_URL);
  const app = await startDaemon();
  const trace = readFileSync(join(__dirname, '..', '..', 'bench', 'traces', 'superpod-link-delays.trace'), 'utf8');
  const rows = [];
  try {
    for (const [index, scenario] of scenarios(trace).entries()) {
      const healthyJob = new EmulatedJob('healthy', scenario.profile, 1, constantDelay({}), DEFAULT_EMULATION);
      const healthyMs = mean(runStaticPolicy(healthyJob, 'zb-static', 30), 5);
      const policies: Partial<Record<Policy, { meanIterationMs: number; itersPerMin: number; slowdown: number }>> = {};
      for (const policy of POLICIES) {
        const t0 = performance.now();
        const results =
          policy === 'pipemorph'
            ? await runPipemorph(redis, scenario, index)
            : runStaticPolicy(new EmulatedJob('static', scenario.profile, 1, scenario.delays(), DEFAULT_EMULATION), policy as StaticPolicy, scenario.iterations);
        const ms = mean(results, scenario.skip);
        policies[policy] = { meanIterationMs: round(ms), itersPerMin: round(60000 / ms), slowdown: round(ms / healthyMs) };
        console.error(`${scenario.name} / ${policy}: ${ms.toFixed(1)} ms (${((performance.now() - t0) / 1000).toFixed(1)} s wall)`);
      }
      const p = policies.pipemorph!.meanIterationMs;
      const speedup = Object.fromEntries(POLICIES.filter((x) => x !== 'pipemorph').map((x) => [x, round(policies[x]!.meanIterationMs / p)]));
      rows.push({ name: scenario.name, healthyMs: round(healthyMs), policies, speedupOfPipemorph: speedup });
    }
  } finally {
    await app.close();
    await redis.quit();
  }
  printTable(rows);
  console.log(JSON.stringify({ scenarios: rows }));
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

function printTable(rows: Array<{ name: string; healthyMs: number; policies: Partial<Record<Policy, { meanIterationMs: number; slowdown: number }>>; speedupOfPipemorph: Record<string, number> }>): void {
  const head = ['scenario'.padEnd(30), 'healthy', ...POLICIES.map((p) => p.padStart(16)), '  pipemorph speed-up vs zb / 1f1b / deleg'];
  console.log(head.join(' '));
  for (const r of rows) {
    const cells = POLICIES.map((p) => `${r.policies[p]!.meanIterationMs.toFixed(0)} (${r.policies[p]!.slowdown.toFixed(2)}x)`.padStart(16));
    const s = r.speedupOfPipemorph;
    console.log([r.name.padEnd(30), r.healthyMs.toFixed(0).padStart(7), ...cells, `  ${s['zb-static']}x / ${s['1f1b-static']}x / ${s['delegation-only']}x`].join(' '));
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
