/**
 * Detection quality on the labeled noisy corpus (src/corpus, docs/detection.md): every scenario
 * through the daemon's own detection and decision code (src/replay/replay-job.ts) and through the
 * label oracle, scored per class. Writes bench/results/detection.json; `npm run bench:tables`
 * renders its table into docs/benchmarks.md.
 *   DETECTION_SCALE=0.1 node dist/bench/detection.bench.js   (shorter healthy scenarios)
 *   DETECTION_ONLY=flapping,constant ...                     (some classes)
 *   PIPEMORPH__detection__severeEnterAfter=1 ...              (any daemon setting)
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { detectionCorpus } from '../src/corpus/corpus';
import { loadConfig } from '../src/daemon/config/load-config';
import { loadMilpSolver } from '../src/daemon/planning/load-milp-solver.util';
import { runScenario, ScenarioRun } from '../src/replay/run-scenario';
import { ClassScore, scoreRuns } from '../src/replay/score-runs';
import { startStamp } from '../src/support/results-stamp';

const ROOT = join(__dirname, '..', ...(__dirname.includes('dist') ? ['..'] : []));

async function main(): Promise<void> {
  const stamp = startStamp();
  const scale = Number(process.env.DETECTION_SCALE ?? 1);
  const only = process.env.DETECTION_ONLY?.split(',');
  // PIPEMORPH__section__key=value overrides apply, as for the daemon: thresholds can be tried on the corpus.
  const config = loadConfig(process.env);
  const solver = config.control.refinePlanner === 'optimal' || config.control.planner === 'optimal' ? await loadMilpSolver() : undefined;
  const trace = readFileSync(join(ROOT, 'bench', 'traces', 'superpod-link-delays.trace'), 'utf8');
  const corpus = detectionCorpus(scale, trace).filter((s) => !only || only.includes(s.class));
  const started = Date.now();
  const runs: ScenarioRun[] = [];
  for (const sc of corpus) {
    const t0 = Date.now();
    const run = runScenario(sc, config, solver);
    runs.push(run);
    const taken = run.switches.filter((s) => s.kind !== 'initial');
    process.stderr.write(
      `${sc.name}: ${sc.iterations} it, ${run.episodes.length} flagged, switches ${taken.map((s) => `${s.kind}@${s.iteration}`).join(' ') || 'none'}, ` +
        `declined ${run.declined}, vs oracle ${((run.daemonMs / run.oracleMs - 1) * 100).toFixed(2)}% (${Date.now() - t0} ms)\n`,
    );
  }
  const classes = [...new Set(runs.map((r) => r.scenario.class))];
  const perClass: ClassScore[] = classes.map((c) => scoreRuns(c, runs.filter((r) => r.scenario.class === c), config.detection.leaveAfter));
  const healthy = runs.filter((r) => r.scenario.class.startsWith('healthy'));
  const stragglers = runs.filter((r) => !r.scenario.class.startsWith('healthy'));
  const result = {
    bench: 'detection',
    scale,
    config: { detection: config.detection, control: { costAware: config.control.costAware, switchCostMs: config.control.switchCostMs, predictionUncertainty: config.control.predictionUncertainty, stragglerPriorIterations: config.control.stragglerPriorIterations, stragglerPriorWeight: config.control.stragglerPriorWeight, minGain: config.control.minGain, planner: config.control.planner, refinePlanner: config.control.refinePlanner } },
    classes: perClass,
    healthy: scoreRuns('all healthy', healthy, config.detection.leaveAfter),
    stragglers: scoreRuns('all stragglers', stragglers, config.detection.leaveAfter),
    overall: scoreRuns('whole corpus', runs, config.detection.leaveAfter),
    scenarios: runs.map((r) => ({
      name: r.scenario.name, class: r.scenario.class, iterations: r.scenario.iterations, stages: r.scenario.shape.stages, dp: r.scenario.shape.dp,
      labels: r.labels.map((l) => ({ target: l.target, shape: l.shape, start: l.start, end: l.end, magnitude: +l.magnitude.toFixed(2), staticMs: +l.staticMs.toFixed(1), adaptedMs: +l.adaptedMs.toFixed(1), gainMs: Math.round(l.gainMs), costMs: l.costMs, worthActing: l.worthActing })),
      switches: r.switches, flagged: r.episodes.length, declined: r.declined,
      daemonMs: Math.round(r.daemonMs), oracleMs: Math.round(r.oracleMs), oracleSwitches: r.oracleSwitches,
    })),
    elapsedMs: Date.now() - started,
    stamp: stamp(),
  };
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  if (!process.env.DETECTION_NO_WRITE) writeFileSync(join(ROOT, 'bench', 'results', 'detection.json'), JSON.stringify(result, null, 2) + '\n');
  process.stdout.write(JSON.stringify({ classes: perClass, healthy: result.healthy, stragglers: result.stragglers, overall: result.overall, elapsedMs: result.elapsedMs }) + '\n');
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack}\n`);
  process.exit(1);
});
