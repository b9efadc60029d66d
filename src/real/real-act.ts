import Redis from 'ioredis';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { PublishedSchedule, RankReport } from '../protocol/protocol-v1.type';
import { jobKeys } from '../protocol/redis-keys';
import { megatron8, scenarios } from '../emulator/scenarios';
import { PYTHON_CLIENT, realRegistration, runRealJob } from './real-job';

/** python3-torch and python3-redis, installed from Debian's packages when missing (as the tests do). */
function ensurePython(): void {
  for (const script of ['ensure-python-redis.sh', 'ensure-python-torch.sh']) {
    const run = spawnSync('bash', [join(PYTHON_CLIENT, '..', '..', 'scripts', script)], { stdio: 'inherit' });
    if (run.status !== 0) throw new Error(`scripts/${script} failed: the real ranks need Debian's python3-torch and python3-redis`);
  }
}

const SLOW_LINK = 6;
const DELAY_MS = 60;
const START = 6;
const END = 22;
const ITERATIONS = 32;

type Paint = (code: string, text: string) => string;

/**
 * Act 1 of the live demo with real rank processes (`npm run demo -- --real`): the 8-stage job as
 * eight PyTorch processes (gloo on 127.0.0.1, each op held for its profiled time: `--compute sleep`),
 * following the daemon over Redis in wall-clock time. Progress is read from the job's reports stream,
 * as any client of the protocol would; the summary from each rank's own record of the versions it ran.
 */
export async function realAct(redis: Redis, redisUrl: string, port: number, paint: Paint, bar: (ms: number, healthyMs: number) => string): Promise<void> {
  ensurePython();
  const profile = megatron8();
  const jobId = `demo-real-${Date.now().toString(36)}`;
  const keys = jobKeys(jobId);
  const scenario = scenarios().find((s) => s.name.includes('link 6-7'))!;
  console.log(paint('1', 'act 1 with real ranks: a slow pipeline link') + ` (try http://127.0.0.1:${port}/jobs/${jobId})`);
  console.log(`8 real rank processes (PyTorch, gloo on 127.0.0.1, ops held for the Megatron profile's times), +${DELAY_MS} ms on link ${SLOW_LINK}-${SLOW_LINK + 1} from iteration ${START} to ${END}, wall-clock time\n`);
  const run = runRealJob({
    profile, iterations: ITERATIONS, compute: 'sleep', redisUrl, jobId,
    delays: `step:${START}@${SLOW_LINK}=${DELAY_MS},${END}@${SLOW_LINK}=0`,
    registration: realRegistration(jobId, profile, scenario.deviceActivations),
  });
  let done = false;
  const finished = run.finally(() => (done = true));
  let cursor = '0-0';
  let healthyMs = 0;
  const printed = new Set<number>();
  while (!done) {
    const reply = (await redis.xread('COUNT', 1000, 'BLOCK', 200, 'STREAMS', keys.reports, cursor)) as Array<[string, Array<[string, string[]]>]> | null;
    for (const [, entries] of reply ?? []) {
      for (const [id, fields] of entries) {
        cursor = id;
        const message = JSON.parse(fields[1]) as Partial<RankReport> & { type?: string };
        if (message.type !== 'report' || message.rank !== 0 || printed.has(message.iteration!)) continue;
        printed.add(message.iteration!);
        const ms = message.iterationMs ?? 0;
        if (message.iteration! < START && message.iteration! > 0) healthyMs = healthyMs ? Math.min(healthyMs, ms) : ms;
        const slow = message.iteration! >= START && message.iteration! < END;
        const injected = slow ? paint('31', `injected +${DELAY_MS} ms`) : 'healthy link  ';
        const delegation = message.delegation?.enabled ? 'on' : '-';
        console.log(`it ${String(message.iteration).padStart(3)}  ${ms.toFixed(0).padStart(5)} ms ${bar(ms, healthyMs || ms)}  v${message.scheduleVersion}  ${injected}  delegation (rank 0): ${delegation}`);
      }
    }
  }
  const result = await finished;
  const switches: string[] = [];
  result.iterations.forEach((it, i) => {
    if (i > 0 && it.versions[0] !== result.iterations[i - 1].versions[0]) switches.push(`v${it.versions[0]} at iteration ${i}`);
  });
  const last = JSON.parse((await redis.get(keys.schedule)) as string) as PublishedSchedule;
  console.log(`\nevery rank recorded the version it ran: ${result.mixedIterations.length === 0 ? 'no iteration mixed versions' : paint('31', `MIXED in iterations ${result.mixedIterations.join(', ')}`)}; switches: ${switches.join(', ') || '-'}`);
  console.log(`last committed: v${last.version} (${last.reason.kind}: ${last.reason.detail}), predicted ${last.prediction.newMs.toFixed(0)} ms`);
}
