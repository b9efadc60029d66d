/**
 * The live daemon and the replay agree (docs/detection.md, "Replaying a job"): a subset of the
 * detection corpus (src/replay/live-scenario.ts, liveAgreementScenarios) through the replay and
 * through a daemon started in this process on real Redis, fed in the same closed loop; prints one
 * JSON line per scenario (agree, what was compared, the differences) and a summary line, and exits
 * 1 when any scenario disagrees.
 *   npm run bench:detection-live
 *   PIPEMORPH__control__refinePlanner=none ...                 (any daemon setting, both sides)
 *   DETECTION_LIVE_ACK_LAG=1 ...                               (ranks acknowledge an iteration late)
 * The daemon runs on a redis-server the bench starts (never the one at REDIS_URL: issue 30, item 4).
 */
import { solverFor } from '../src/cli/replay-config';
import { loadConfig } from '../src/daemon/config/load-config';
import { compareRuns, liveAgreementScenarios, runScenarioLive } from '../src/replay/live-scenario';
import { replayScenario } from '../src/replay/run-scenario';
import { startOwnRedis } from '../src/support/own-redis-server';

async function main(): Promise<void> {
  const server = await startOwnRedis();
  const redisUrl = server.url();
  const ackLagIterations = Number(process.env.DETECTION_LIVE_ACK_LAG ?? 0);
  // PIPEMORPH__section__key=value overrides apply to the replay and the live daemon alike.
  const config = loadConfig(process.env);
  const solver = await solverFor(config);
  let agreeing = 0;
  const scenarios = liveAgreementScenarios();
  for (const sc of scenarios) {
    const t0 = Date.now();
    const replay = replayScenario(sc, config, solver);
    const replayMs = Date.now() - t0;
    const live = await runScenarioLive(sc, config, { redisUrl, ackLagIterations });
    const agreement = compareRuns(replay, live);
    if (agreement.agree) agreeing++;
    process.stdout.write(
      `${JSON.stringify({
        bench: 'detection-live',
        scenario: sc.name,
        iterations: sc.iterations,
        ackLagIterations,
        agree: agreement.agree,
        decisionsCompared: agreement.decisions,
        judged: agreement.judged,
        switchesCompared: agreement.switches,
        switches: live.switches.map((s) => `${s.kind}@${s.iteration}->${s.effectiveIteration} v${s.version}`),
        differences: agreement.differences,
        replayMs,
        liveMs: live.elapsedMs,
      })}\n`,
    );
  }
  process.stdout.write(`${JSON.stringify({ bench: 'detection-live', summary: true, scenarios: scenarios.length, agree: agreeing, refinePlanner: config.control.refinePlanner, ackLagIterations })}\n`);
  process.exitCode = agreeing === scenarios.length ? 0 : 1;
  await server.stop();
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack ?? error}\n`);
  process.exit(2);
});
