/**
 * Benchmark tables rendered from the committed bench results (bench/results/*.json), so the numbers
 * in prose cannot drift from what a command measured. A table lives between
 * `<!-- bench:NAME -->` and `<!-- /bench:NAME -->` in any Markdown file of the repository that
 * holds such markers (README.md and docs/*.md: the tables are in docs/benchmarks.md, the README's
 * headline paragraph in README.md); `npm run readme:tables` (alias `npm run bench:tables`) rewrites
 * every such block from its JSON, and test/readme-bench.test.ts fails when a file differs.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { stampLine } from '../src/support/results-stamp';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const fmt = (x: number | null | undefined, digits = 0): string => (x === null || x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(digits));

function realTable(r: Json): string {
  const lines = [
    '| scenario | healthy | zb-static | delegation-only | pipemorph | pipemorph slowdown, measured (model) | predicted at the last switch | measured after it |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const s of r.scenarios as Json[]) {
    const p = s.policies;
    const x = (ms: number) => `${fmt(ms)} (${fmt(ms / s.healthyMs, 2)}x)`;
    const error = s.predictedMs ? ` (${fmt(((s.predictedMs - p.pipemorph.medianIterationMs) / p.pipemorph.medianIterationMs) * 100, 1)}%)` : '';
    lines.push(`| ${s.name} | ${fmt(s.healthyMs)} | ${x(p['zb-static'].medianIterationMs)} | ${x(p['delegation-only'].medianIterationMs)} | ${x(p.pipemorph.medianIterationMs)} | ${fmt(s.slowdown, 2)}x (${fmt(s.modelSlowdown, 2)}x) | ${fmt(s.predictedMs)}${error} | ${fmt(p.pipemorph.medianIterationMs)} |`);
  }
  return lines.join('\n');
}

function realTorchTable(r: Json): string {
  if (!r.torch || (r.torch.scenarios as Json[]).length === 0) return '(not measured yet: `PIPEMORPH_BENCH_ONLY=gpt npm run bench:real`)';
  const pct = (x: number | null) => (x === null ? '-' : `${x >= 0 ? '+' : ''}${fmt(100 * x, 1)}%`);
  const lines = [
    '| scenario | op times F / B / W, ms (measured by the ranks) | healthy | zb-static | pipemorph | speedup of pipemorph over zb-static | switches (iteration: predicted / measured) | predicted at the last switch (error) | load average before / after |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  const range = (xs: number[]) => (Math.min(...xs) === Math.max(...xs) ? fmt(xs[0], 1) : `${fmt(Math.min(...xs), 1)}-${fmt(Math.max(...xs), 1)}`);
  for (const s of r.torch.scenarios as Json[]) {
    const p = s.policies;
    const x = (ms: number) => `${fmt(ms)} (${fmt(ms / s.healthyMs, 2)}x)`;
    const op = s.measuredOpMs;
    const switches = (s.switches as Json[]).map((w) => `${w.iteration}: ${fmt(w.predictedMs)} / ${fmt(w.measuredMs)}`).join('; ') || 'none';
    const load = `${fmt(s.loadAverage.before[0], 1)} / ${fmt(s.loadAverage.after[0], 1)}`;
    lines.push(`| ${s.name} | ${range(op.fMs)} / ${range(op.bMs)} / ${range(op.wMs)} | ${fmt(s.healthyMs)} | ${x(p['zb-static'].medianIterationMs)} | ${x(p.pipemorph.medianIterationMs)} | ${fmt(s.speedupVsZbStatic, 2)}x | ${switches} | ${fmt(s.predictedMs)} (${pct(s.predictionError)}) | ${load} |`);
  }
  return lines.join('\n');
}

function realRemapTable(r: Json): string {
  const m = r.torch?.remap;
  if (!m) return '(not measured yet: `PIPEMORPH_BENCH_ONLY=remap npm run bench:real`)';
  const pct = (x: number | null) => (x === null ? '-' : `${x >= 0 ? '+' : ''}${fmt(100 * x, 1)}%`);
  // With several handoffs measured, the row's medians are those of the first (the shipped default).
  const main = (m.runs as Json[]).filter((x) => x.handoff === undefined || x.handoff === (m.runs as Json[])[0].handoff);
  const over = main.length < m.runs.length ? `; medians of the ${main.length} \`${main[0].handoff}\` runs` : '';
  return [
    '| scenario | healthy (no delay) | before the re-map | switch iteration (handoff) | after | handoff cost (switch - after) | priced by the cost gate | ranks moved | daemon predicted before -> after (error after) |',
    '|---|---|---|---|---|---|---|---|---|',
    `| ${m.name} (${m.runs.length} runs, re-mapped in ${m.remapped}${over}) | ${fmt(m.healthyMs)} | ${fmt(m.beforeMs)} | ${m.switchMs === null ? 'no re-map' : `${fmt(m.switchMs)} (iteration ${main.map((x) => x.switchIteration ?? '-').join(', ')})`} | ${fmt(m.afterMs)} | ${fmt(m.handoffCostMs)} (runs: ${main.map((x) => fmt(x.handoffCostMs)).join(', ')}) | ${fmt(m.pricedHandoffMs)} | ${(m.moved as number[]).join(', ') || '-'} | ${fmt(m.predictedBeforeMs)} -> ${fmt(m.predictedAfterMs)} (${pct(m.predictionError)}) |`,
    ...handoffRows(m),
  ].join('\n');
}

/** Per handoff (stream: prefetch + state point to point at k; load: checkpoint, barrier, groups at k), when the row measured both. */
function handoffRows(m: Json): string[] {
  const by = (m.byHandoff ?? {}) as Record<string, Json>;
  if (!Object.keys(by).length) return [];
  const costs = (h: string) => (m.runs as Json[]).filter((x) => x.handoff === h).map((x) => fmt(x.handoffCostMs)).join(', ');
  const phases = (v: Json) => Object.entries(v.switchPhasesMs as Record<string, number>).filter(([p]) => p !== 'ms').map(([p, x]) => `${p.replace(/Ms$/, '')} ${fmt(x, 1)}`).join(', ');
  return [
    '',
    '| handoff | runs | before | switch iteration | after | stall (switch - after) | the re-map at k, ms by phase (most any rank spent) | during the lead iterations |',
    '|---|---|---|---|---|---|---|---|',
    ...Object.entries(by).map(([h, v]) => `| ${h} | ${v.runs} | ${fmt(v.beforeMs)} | ${fmt(v.switchMs)} | ${fmt(v.afterMs)} | ${fmt(v.handoffCostMs)} (runs: ${costs(h)}) | ${phases(v)} (whole: ${fmt(v.switchPhasesMs.ms, 1)}) | ${v.prefetchBuildMs === null && v.prefetchGroupsMs === null ? '-' : `build ${fmt(v.prefetchBuildMs, 1)}, groups ${fmt(v.prefetchGroupsMs, 1)} ms; those iterations +${fmt(v.leadExtraMs)} ms`} |`),
  ];
}

/**
 * bench:real's re-balancing row (bench/real-rebalance.ts): per policy the median and interquartile
 * range over the rounds, and pipemorph judged against the best static split measured on the same
 * ranks. A row recorded before the bench measured that split is not shown as a result.
 */
export function realRebalanceTable(results: Json): string {
  const r = results.rebalance;
  const command = '`PIPEMORPH_BENCH_ONLY=rebalance npm run bench:real`';
  if (!r) return `Not measured yet: ${command}.`;
  if (!r.goal || !r.policies['best-static']) {
    return `Not measured at this commit: the row recorded in bench/results/real.json predates the best static split and the spread over rounds (it judged a median of ${r.repeats ?? 1} rounds against a scaled healthy run); ${command} measures it.`;
  }
  const iqr = (x: Json, digits = 0) => `${fmt(x.median, digits)} (${fmt(x.q1, digits)}-${fmt(x.q3, digits)})`;
  const lines = [
    `${r.name}: rank ${r.slowRank} ${r.slowFactor}x slower in compute from iteration ${r.slowFrom}; ${r.repeats} rounds, each figure the median (interquartile range) over them. Best static split per round: ${(r.bestSplitRounds as number[][]).map((x) => x.join(',')).join('; ')}.`,
    '',
    '| policy | before | during (onset to the move) | after | after / best static split, per round | move iteration (stall) | blocks per stage at the end |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const p of ['no-adaptation', 'replan-only', 'pipemorph', 'best-static']) {
    const x = r.policies[p];
    const each = (x.rounds ?? []) as Json[];
    const moves = each.filter((w) => w.moveIteration !== null);
    const move = moves.length ? `${moves.map((w) => w.moveIteration).join(', ')} (${fmt(x.moveCostMs)} ms)` : '-';
    const splits = [...new Set(each.map((w) => (w.perStage as number[]).join(',')))].join(' / ');
    lines.push(`| ${p} | ${fmt(x.beforeMs)} | ${fmt(x.duringMs)} | ${iqr(x.afterSpread)} | ${iqr(x.overBest, 3)}x (${(x.overBest.rounds as number[]).map((v) => fmt(v, 2)).join(', ')}) | ${move} | ${splits} |`);
  }
  const q3 = r.policies.pipemorph.overBest.q3;
  lines.push('', `pipemorph within ${r.goal.ratio}x of the best static split (the upper quartile of its rounds' ratios, ${fmt(q3, 3)}x): ${r.goal.met ? 'met' : '**not met**'}. Healthy, for reference: ${fmt(r.healthyMs)} ms (rounds: ${(r.healthyRoundsMs as number[]).map((v) => fmt(v)).join(', ')}).`);
  return lines.join('\n');
}

function topologyTable(r: Json): string {
  const before = (r.perSeed as Json[]).map((x) => x.predictedIterationMsBefore as number);
  const rb = r.rackBoundary;
  return [
    '| case | planning time | predicted iteration (ms) | nodes moved |',
    '|---|---|---|---|',
    `| ${r.nodes} nodes (DP ${r.dpSize} x PP ${r.stages}, Megatron 8-stage profile, ${r.microbatches} microbatches), ${r.slowLinks} slow DP links of 10-60 ms, seeds ${(r.seeds as number[]).join(',')} | median ${fmt(r.planningMsMedian)} ms, max ${fmt(r.planningMsMax)} ms (target < 1 s) | median ${fmt(r.predictedIterationMsBeforeMedian)} -> ${fmt(r.predictedIterationMsAfterMedian)} (before: ${fmt(Math.min(...before))}-${fmt(Math.max(...before))} over the seeds) | at most ${r.movedNodesMax} (ring re-ordering routes around every slow pair) |`,
    `| (${rb.nodes / 4} DP, 4 PP), every ring across a 30 ms rack boundary (${rb.method} search) | ${fmt(rb.planningMs)} ms | ${fmt(rb.predictedIterationMsBefore)} -> ${fmt(rb.predictedIterationMsAfter)} | ${rb.movedNodes} (the boundary now lies on a pipeline edge) |`,
  ].join('\n');
}

function predictionTable(r: Json): string {
  const pct = (x: number) => `${x >= 0 ? '+' : ''}${fmt(100 * x, 1)}%`;
  const lines = [
    '| scenario | schedule | measured | transport-aware prediction (error) | without queueing (error) |',
    '|---|---|---|---|---|',
  ];
  for (const s of r.scenarios as Json[]) {
    for (const p of s.policies as Json[]) {
      lines.push(`| ${s.name} | ${p.policy} | ${fmt(p.measuredMs)} | ${fmt(p.transportAwareMs)} (${pct(p.transportAwareError)}) | ${fmt(p.noQueueingMs)} (${pct(p.noQueueingError)}) |`);
    }
  }
  const a = r.summary.transportAware;
  const n = r.summary.noQueueing;
  lines.push(`| all | mean / worst error | | ${pct(a.meanAbsError)} / ${pct(a.worstAbsError)} | ${pct(n.meanAbsError)} / ${pct(n.worstAbsError)} |`);
  return lines.join('\n');
}

function e2eTable(r: Json): string {
  const policies = ['zb-static', '1f1b-static', 'delegation-only', 'pipemorph', 'oracle'];
  const lines = [
    '| scenario | healthy | zb-static | 1f1b-static | delegation-only | pipemorph | oracle | pipemorph vs zb / 1f1b / delegation | pipemorph / oracle, steady state | pipemorph / oracle, from onset |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const s of r.scenarios as Json[]) {
    const cells = policies.map((p) => `${fmt(s.policies[p].meanIterationMs)} (${fmt(s.policies[p].slowdown, 2)}x)`);
    const x = s.speedupOfPipemorph;
    lines.push(`| ${s.name} (${s.iterations} iterations) | ${fmt(s.healthyMs)} | ${cells.join(' | ')} | ${fmt(x['zb-static'], 2)}x / ${fmt(x['1f1b-static'], 2)}x / ${fmt(x['delegation-only'], 2)}x | ${fmt(s.pipemorphOverOracle, 2)}x | ${fmt(s.pipemorphOverOracleFromOnset, 2)}x |`);
  }
  return lines.join('\n');
}

function e2ePacedTable(r: Json): string {
  const rows = (r.pacedScenarios ?? []) as Json[];
  const paces = rows.length > 0 ? (rows[0].paced as Json[]).map((p) => p.pace as number) : [];
  const lines = [
    `| scenario | lockstep | ${paces.map((p) => `paced x${p}`).join(' | ')} |`,
    `|---|---|${paces.map(() => '---|').join('')}`,
  ];
  const cell = (x: Json) => `${fmt(x.meanIterationMs)} ms, switch at iteration ${x.switchedAt ?? '-'}`;
  for (const s of rows) lines.push(`| ${s.name} | ${cell(s.lockstep)} | ${(s.paced as Json[]).map(cell).join(' | ')} |`);
  return lines.join('\n');
}

function e2eDpTable(r: Json): string {
  const lines = [
    '| rack link | healthy | zb-static | falcon | pipemorph | falcon vs zb | pipemorph vs falcon | re-map in force at (falcon / pipemorph) |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const s of r.dpScenarios as Json[]) {
    const cell = (p: string) => `${fmt(s.policies[p].meanIterationMs)} (${fmt(s.policies[p].slowdown, 2)}x)`;
    lines.push(`| +${s.extraMs} ms | ${fmt(s.healthyMs)} | ${cell('zb-static')} | ${cell('falcon')} | ${cell('pipemorph')} | ${fmt(s.falconOverZb, 2)}x | ${fmt(s.pipemorphOverFalcon, 2)}x | ${s.falconRemapAt ?? '-'} / ${s.pipemorphRemapAt ?? '-'} |`);
  }
  return lines.join('\n');
}

function e2eRebalanceTable(r: Json): string {
  const names: Record<string, string> = { healthy: 'healthy', 'no-adaptation': 'no adaptation (initial plan)', 'replan-only': 'pipemorph, re-planning alone (`rebalance.enabled=false`)', pipemorph: 'pipemorph (shipped config: re-balancing)' };
  const out: string[] = [];
  for (const s of (r.rebalanceScenarios ?? []) as Json[]) {
    if (out.length > 0) out.push('');
    out.push(
      `| ${s.name}, from iteration ${s.slowFrom} | before (5-${s.slowFrom - 1}) | onset to move (${s.duringFrom}-${s.duringTo}) | switch iteration | after (last 30 of ${s.iterations}) | after / healthy scaled | split after |`,
      '|---|---|---|---|---|---|---|',
    );
    for (const [key, name] of Object.entries(names)) {
      const p = s.policies[key];
      const sw = (p.switches as Json[]).map((x) => `${x.iteration}: ${fmt(x.iterationMs, 1)} ms${x.handoffMs > 0 ? ` (${fmt(x.handoffMs, 1)} ms handoff)` : ''}`).join(', ') || '-';
      out.push(`| ${name} | ${fmt(p.beforeMs, 1)} | ${fmt(p.duringMs, 1)} | ${sw} | ${fmt(p.afterMs, 1)} | ${fmt(p.overScaled, 3)}x | ${(p.perStage as number[]).join(',')} |`);
    }
    const taken = (s.policies.pipemorph.decisions as Json[]).find((d) => d.kind === 'rebalance' && d.verdict === 'taken');
    const declined = (s.policies['replan-only'].decisions as Json[]).find((d) => d.kind === 'rebalance');
    out.push(
      '',
      `Healthy scaled to the remaining compute: ${fmt(s.healthyScaledMs, 1)} ms (healthy x ${s.stages} / (${s.stages - 1} + 1/${s.slowFactor})); handoff at ${s.handoffGBps} GB/s. ` +
        `pipemorph after / re-planning alone after: ${fmt(s.pipemorphOverReplan, 3)}x. ` +
        (taken ? `The daemon decided at iteration ${taken.iteration} (${taken.reason})` : 'The daemon took no re-balance') +
        (declined ? `; with \`rebalance.enabled=false\` it logged the same at iteration ${declined.iteration} as ${declined.verdict}.` : '.'),
    );
  }
  return out.join('\n');
}

function engineSpeedTable(r: Json): string {
  const lines = ['| S | N | generate (ms) | simulate (ms) |', '|---|---|---|---|'];
  for (const [S, N] of [[8, 32], [16, 128], [64, 512]]) {
    const row = (r.speed as Json[]).find((x) => x.stages === S && x.microbatches === N);
    if (row) lines.push(`| ${S} | ${N} | ${fmt(row.generateMs, 2)} | ${fmt(row.simulateMs, 2)} |`);
  }
  return lines.join('\n');
}

function engineQualityTable(r: Json): string {
  const q = r.quality;
  const s = q.search;
  const labels: Record<string, string> = {
    'zb-static': 'zb-static (healthy ZB plan, unchanged)',
    '1f1b': '1f1b',
    initial: 'initial (Alg. 1 re-planned, device memory)',
    'alg2-as-printed': 'Alg. 2 exactly as printed',
    adaptive: 'adaptive (Alg. 2 as implemented, host memory)',
    search: `search (the daemon's default: ${s.daemonEvaluations} schedules, ${s.daemonSafetyCapMs} ms safety cap${s.daemonCapHits ? `, reached in ${s.daemonCapHits} of ${q.cases} here` : ''})`,
    'search-fixed': `search (${s.fixedEvaluations} schedules${s.fixedReproducible ? '' : ', NOT reproduced'})`,
    'search-counts': `search over warm-up counts only (${s.fixedEvaluations} schedules, greedy B > F > W)`,
  };
  const lines = ['| policy | mean gap | worst gap |', '|---|---|---|'];
  for (const p of q.policies as Json[]) lines.push(`| ${labels[p.policy] ?? p.policy} | ${fmt(p.meanGapPct, 2)}% | ${fmt(p.worstGapPct, 1)}% |`);
  const d = r.daemonPlan;
  const daemon = d ? ` On an 8 × 32 job with one 60 ms link the daemon's default search evaluates ${d.evaluations} schedules in a median ${fmt(d.medianPlanMs, 0)} ms on this machine (${fmt(d.gapToBoundPct, 2)}% above the bound, Alg. 2 ${fmt(d.adaptiveGapToBoundPct, 2)}%).` : '';
  lines.push('', `Every search row plans by evaluations, so it is the same on every machine${s.daemonCapHits ? ` (the daemon's row too, except in the ${s.daemonCapHits} cases where its wall-clock safety cap fired first on this machine)` : ''}. The daemon's search closes ${fmt(s.meanGapClosedPct, 0)}% of the gap Alg. 2 leaves.${daemon} The bound is the larger of a per-stage and a per-op bound (heads and tails on each stage); the per-op one is the larger in ${s.opBoundTighterCases} of ${q.cases} cases, and the fixed-count search meets the bound, so is proven optimal, in ${s.searchFixedMeetsBoundCases}.`);
  return lines.join('\n');
}

function engineOptimumTable(r: Json): string {
  const o = r.optimum;
  const lines = ['| policy | gap to optimum: mean / worst | gap to bound: mean / worst | median planning time (ms) |', '|---|---|---|---|'];
  for (const p of o.policies as Json[]) {
    const evaluations = p.medianEvaluations !== undefined ? `, median ${p.medianEvaluations} schedules` : '';
    const label = p.policy === 'search-counts' ? 'search over warm-up counts only (greedy B > F > W)' : p.policy;
    lines.push(`| ${label}${evaluations} | ${fmt(p.meanGapToOptimumPct, 2)}% / ${fmt(p.worstGapToOptimumPct, 1)}% | ${fmt(p.meanGapToBoundPct, 2)}% / ${fmt(p.worstGapToBoundPct, 1)}% | ${fmt(p.medianPlanMs, 1)} |`);
  }
  lines.push('', `The exact planner (depth-first search over active schedules, then the MILP) proves the optimum in ${o.provenOptimal} of ${o.cases} cases within its ${o.timeLimitMs} ms limit (gaps to the optimum are over those); after the search plan it takes a median ${fmt(o.optimalSolveMs.median, 0)} ms, at most ${fmt(o.optimalSolveMs.max, 0)} ms.`);
  return lines.join('\n');
}

function engineTimeLimitTable(r: Json): string {
  const t = r.timeLimit;
  if (!t) return '';
  const lines = ['| job (stages x microbatches) | limit (ms) | wall time (ms) | over the limit | proven (gap) |', '|---|---|---|---|---|'];
  for (const row of t.rows as Json[]) {
    lines.push(`| ${row.stages} x ${row.microbatches}, ${row.job} | ${fmt(row.limitMs)} | ${fmt(row.wallMs, 1)} | ${row.overPct > 0 ? `+${fmt(row.overPct, 1)}%` : 'no'} | ${row.proven ? 'yes' : `no (${fmt(row.gapPct, 2)}%)`} |`);
  }
  lines.push(
    '',
    t.worstOverMs > 0
      ? `At most ${fmt(t.worstOverMs, 1)} ms past the limit, and at most ${fmt(t.worstOverPct, 1)}% of it.`
      : `Every call ended within its limit (the latest ${fmt(-t.worstOverMs, 1)} ms before it).`,
  );
  return lines.join('\n');
}

function engineDeviceTable(r: Json): string {
  const m = r.deviceMemory;
  return [
    '| plan within device memory | iteration time vs Alg. 1 (`initial`): mean / best gain | plans slower than Alg. 1 | highest memory peak / device limit |',
    '|---|---|---|---|',
    `| adaptive, \`memory: 'device'\` | ${fmt(m.adaptiveGainPct.mean, 1)}% / ${fmt(m.adaptiveGainPct.max, 1)}% faster | ${m.worseThanInitial} of ${2 * m.cases} (both rows) | ${fmt(m.maxPeakOverLimit, 3)} |`,
    `| search, \`memory: 'device'\` (${m.searchEvaluations} schedules, median ${fmt(m.searchMedianPlanMs, 1)} ms) | ${fmt(m.searchGainPct.mean, 1)}% / ${fmt(m.searchGainPct.max, 1)}% faster | | |`,
  ].join('\n');
}

function daemonTable(r: Json): string {
  const c = r.controlLoop;
  const b = c.breakdown;
  const load = (r.loadAverage as number[]).map((x) => fmt(x, 1)).join(' / ');
  return [
    '| measure | result | target |',
    '|---|---|---|',
    `| \`ingestSamplesPerSec\`: link samples per second draining a 51,200-report backlog (512 ranks, 4 links each) | ${Math.round(r.ingestSamplesPerSec).toLocaleString('en-US')} | >= 100,000 |`,
    `| \`controlLoopP50Ms\` / \`controlLoopP99Ms\`: the daemon's loop on Redis's clock, the last report of the iteration that reveals a straggler stored -> the first plan's prepare stored (both stream entry ids, whole ms; Alg. 2, made on the event loop for this job; the refinement follows once it is in force) (S=8, N=32, 64 ranks, ${c.trials} trials) | ${fmt(c.p50Ms, 1)} / ${fmt(c.p99Ms, 1)} ms (max ${fmt(c.maxMs, 0)}) | p99 < 20 ms |`,
    `| the same trials as this bench sees them: from starting to write the reveal iteration (64 reports in one pipeline) to reading the prepare: p50 / p99 | ${fmt(c.client.p50Ms, 1)} / ${fmt(c.client.p99Ms, 1)} ms (max ${fmt(c.client.maxMs, 0)}) | |`,
    ...(r.controlLoopOnWorker
      ? [`| the same with every decision on the planning worker (\`control.inlinePlanMaxCells\` 0), in rounds alternating with the above: p50 / p99 on Redis's clock (as this bench sees it) | ${fmt(r.controlLoopOnWorker.p50Ms, 1)} / ${fmt(r.controlLoopOnWorker.p99Ms, 1)} ms (${fmt(r.controlLoopOnWorker.client.p50Ms, 1)} / ${fmt(r.controlLoopOnWorker.client.p99Ms, 1)} ms) | |`]
      : []),
    ...(r.controlLoopInline
      ? [`| the same with planning on the event loop (\`control.planningWorkers\` 0), in rounds alternating with the above: p50 / p99 | ${fmt(r.controlLoopInline.p50Ms, 1)} / ${fmt(r.controlLoopInline.p99Ms, 1)} ms (max ${fmt(r.controlLoopInline.maxMs, 0)}) | |`]
      : []),
    ...(r.controlLoopOwnCore
      ? [`| the same with the daemon on a core of its own (\`taskset\`; this bench and Redis on the other core), ${r.controlLoopOwnCore.trials} trials: p50 / p99 on Redis's clock (as this bench sees it) | ${fmt(r.controlLoopOwnCore.p50Ms, 1)} / ${fmt(r.controlLoopOwnCore.p99Ms, 1)} ms (${fmt(r.controlLoopOwnCore.client.p50Ms, 1)} / ${fmt(r.controlLoopOwnCore.client.p99Ms, 1)} ms) | p99 < 20 ms |`]
      : []),
    `| where the slowest tenth of trials (as this bench sees them) spent its time, against the rest: daemon event-loop stall / daemon GC / writing the reports | ${fmt(b.loopStallMs.slowestTenth, 1)} / ${fmt(b.gcMs.slowestTenth, 1)} / ${fmt(b.writeMs.slowestTenth, 1)} ms against ${fmt(b.loopStallMs.rest, 1)} / ${fmt(b.gcMs.rest, 1)} / ${fmt(b.writeMs.rest, 1)} ms | |`,
    `| planning (\`pipemorph_planning_duration_seconds\`): mean, control steps over 10 ms | ${fmt(c.planning.meanMs, 1)} ms, ${c.planning.over10Ms} of ${c.planning.count} | |`,
    ...((r.isolation ?? []) as Json[]).map(
      (row) =>
        `| another job's report, XADD -> acknowledged, while an 8 x 32 job is planned by the MILP for ${fmt(row.planMs / 1000, 1)} s, planning ${row.planningWorkers === 0 ? 'on the event loop (`planningWorkers` 0)' : `on ${row.planningWorkers} worker thread${row.planningWorkers > 1 ? 's' : ''}`}: p50 / p99 / max (${row.probes} report${row.probes === 1 ? '' : 's'}) | ${fmt(row.probeP50Ms, 1)} / ${fmt(row.probeP99Ms, 1)} / ${fmt(row.probeMaxMs, 0)} ms | ${row.planningWorkers === 0 ? '' : 'a slow plan does not delay ingest'} |`,
    ),
    `| \`heapBytesPer10kLinks\`: detector heap plus typed-array storage | ${fmt(r.heapBytesPer10kLinks / 1e6, 1)} MB | bounded |`,
    `| load average of the machine (1 / 5 / 15 min) at the end of the run | ${load} | |`,
  ].join('\n');
}

function scaleOutTable(r: Json): string {
  const share = (w: Json) => (w.perReplica as Json[]).map((p) => `${p.ownedAtEnd} (${fmt(100 * p.shareOfFair)}%)`).join(' / ');
  const cpu = (w: Json) => (w.perReplica as Json[]).map((p) => fmt(p.cpuMicrosPerReport)).join(' / ');
  const lines = [
    '| replicas (settings) | jobs owned per replica (of the fair share) | share goal (within 20%) | reports/s; decisions/s | daemon CPU per report: all replicas (each) | per report once the idle cost is taken out | CPU per decision | refinements (mean time, its wait for the worker included) | stream reads (XREADGROUP) per report | ranks per replica per core |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  // Refinements finished in the window on every replica, and their mean time ("-" in results written before they were counted).
  const refinements = (w: Json) => {
    const per = w.perReplica as Json[];
    if (per.some((p) => p.refinements === undefined)) return '-';
    const n = per.reduce((a, p) => a + p.refinements, 0);
    const ms = per.reduce((a, p) => a + (p.refinementMsMean ?? 0) * p.refinements, 0);
    return n > 0 ? `${n} (${fmt(ms / n, 0)} ms)` : '0';
  };
  for (const w of r.windows as Json[]) {
    lines.push(`| ${w.replicas}${w.settings && w.settings !== 'shipped' ? ` (${w.settings})` : ''} | ${share(w)} | ${w.shareGoalMet ? 'met' : '**not met**'} | ${fmt(w.reportsPerSecond)}; ${fmt(w.decisionsPerSecond, 1)} | ${fmt(w.cpuMicrosPerReport)} µs (${cpu(w)}) | ${fmt(w.marginalCpuMicrosPerReport)} µs | ${fmt(w.cpuMsPerDecision, 1)} ms | ${refinements(w)} | ${w.xreadgroupPerReport === undefined ? '-' : fmt(w.xreadgroupPerReport, 1)} | ${fmt(w.ranksPerReplicaPerCore)} |`);
  }
  lines.push('', '| move | jobs moved | every job owned, each replica within 20% of its share, after | owned after |', '|---|---|---|---|');
  for (const m of r.moves as Json[]) lines.push(`| ${m.what} | ${m.jobsMoved} | ${m.settledMs === null ? 'not within 60 s' : `${fmt(m.settledMs / 1000, 1)} s`} | ${(m.ownedAfter as number[]).join(' / ')} |`);
  const i = r.integrity;
  lines.push(
    '',
    '| over the whole run (from the ranks and the control streams) | result |',
    '|---|---|',
    `| handshakes: prepared; committed; aborted; left open | ${i.prepares}; ${i.commits}; ${i.aborts}; ${i.handshakesLeftOpen} |`,
    `| iterations run (all ranks of a job); of them with ranks on different versions (mixed) | ${i.iterationsRun.toLocaleString('en-US')}; ${i.mixedIterations} |`,
    `| versions reused; control writes under a superseded epoch (as the ranks read them; read off the streams in order) | ${i.versionsReused}; ${i.splitBrainWrites}; ${i.outOfOrderEpochs ?? "-"} |`,
    `| a replica with no job: CPU (discovery, maintenance, ingest polls) | ${fmt(100 * r.idleReplicaCoreFraction, 1)}% of a core |`,
    `| machine: cores; load average (1 / 5 / 15 min) at the end | ${r.machine.cpus}; ${(r.machine.loadAverage as number[]).map((x) => fmt(x, 1)).join(' / ')} |`,
  );
  return lines.join('\n');
}

function optimalLineTable(r: Json): string {
  const lines = [
    `| job (stages x microbatches) | MILP proves the optimum within ${r.timeLimitMs} ms | optimal planning: median / max (ms) | search alone: median (ms) | mean gain over the search | under the daemon's transport: relaxed problem settled | optimal planning: median / max (ms) | search alone: median (ms) | gain over the search: mean / max |`,
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const row of r.rows as Json[]) {
    const within = row.cells <= r.optimalMaxCells ? ' (within the default `control.optimalMaxCells`)' : '';
    const t = row.transport as Json | undefined;
    const underTransport = t ? `${t.settled} of ${row.cases} | ${fmt(t.optimalMedianMs)} / ${fmt(t.optimalMaxMs)} | ${fmt(t.searchMedianMs)} | ${fmt(t.meanGainOverSearchPct, 2)}% / ${fmt(t.maxGainOverSearchPct, 2)}%` : '- | - | - | -';
    lines.push(`| ${row.stages} x ${row.microbatches}${within} | ${row.proven} of ${row.cases} | ${fmt(row.optimalMedianMs)} / ${fmt(row.optimalMaxMs)} | ${fmt(row.searchMedianMs)} | ${fmt(row.meanGainOverSearchPct, 2)}% | ${underTransport} |`);
  }
  lines.push(`| load average of the machine (1 / 5 / 15 min) at the end of the run | ${(r.loadAverage as number[]).map((x) => fmt(x, 1)).join(' / ')} | | | | | | | |`);
  return lines.join('\n');
}

function renderTable(r: Json): string {
  const size = (bytes: number) => (bytes >= 1e6 ? `${fmt(bytes / 1e6, 1)} MB` : `${fmt(bytes / 1e3, 0)} kB`);
  const lines = ['| case | render | SVG size |', '|---|---|---|'];
  (r.rows as Json[]).forEach((row, k) => {
    const what = `${row.stages} stages x ${row.microbatches} microbatches (${Number(row.blocks).toLocaleString('en-US')} blocks)${row.case.endsWith('before/after') ? ', before/after' : ', one timeline'}`;
    lines.push(`| ${what} | ${fmt(row.renderMs, 2)} ms${k === 0 ? ` (target < ${r.goalMs} ms)` : ''} | ${size(row.svgBytes)} |`);
  });
  return lines.join('\n');
}

function soakTable(r: Json): string {
  const mb = (bytes: number) => `${bytes >= 0 ? '+' : ''}${fmt(bytes / 1e6, 2)} MB/min`;
  const first = (r.samples as Json[])[0];
  const last = (r.samples as Json[])[(r.samples as Json[]).length - 1];
  const c = r.controlLoopMs;
  return [
    '| measure | result |',
    '|---|---|',
    `| run | ${r.seconds} s, ${r.ranks} ranks in ${r.jobs} jobs, ${r.handshakes} handshakes, ranks never behind their pace by more than ${fmt(r.maxBehindPaceMs)} ms, load average ${fmt(r.loadAverage1m, 1)} |`,
    `| daemon heap: slope over the second half; first and last sample | ${mb(r.slopesBytesPerMinute.heap)}; ${fmt(first.heapBytes / 1e6)} MB, ${fmt(last.heapBytes / 1e6)} MB |`,
    `| daemon RSS: slope over the second half; first and last sample | ${mb(r.slopesBytesPerMinute.rss)}; ${fmt(first.rssBytes / 1e6)} MB, ${fmt(last.rssBytes / 1e6)} MB |`,
    `| Redis used_memory: slope over the second half; first and last sample | ${mb(r.slopesBytesPerMinute.redisUsedMemory)}; ${fmt(first.redisUsedBytes / 1e6)} MB, ${fmt(last.redisUsedBytes / 1e6)} MB |`,
    `| control loop (${r.episodes ? 'the reports decided on' : 'reveal'} -> prepare): p50, p99; p99 of the first and last third | ${fmt(c.p50, 1)} ms, ${fmt(c.p99, 0)} ms; ${fmt(c.firstThirdP99, 0)} ms, ${fmt(c.lastThirdP99, 0)} ms |`,
    ...(r.episodes
      ? [
          `| slow iterations before the reaction (the rules allow ${r.revealRule.revealAfter}-${r.revealRule.enterAfter}): count of stragglers | ${Object.entries(r.episodes.slowIterationsToReact as Record<string, number>).map(([k, n]) => `${k}: ${n}`).join(', ')} |`,
          `| late reactions (more than ${r.revealRule.enterAfter} slow iterations, or an iteration, ${r.iterationMs} ms, or more after the reports decided on); stragglers with no prepare | ${r.episodes.lateReactions} of ${r.episodes.answered}; ${r.episodes.missed} |`,
          `| start-up stragglers (begun within the ${r.revealRule.baselineWarmup}-iteration baseline warm-up, not in the percentiles) | ${r.episodes.startupEpisodes} |`,
          `| daemon CPU time per report; largest event-loop delay (10 s scrapes) | ${fmt(r.daemonCpu.microsPerReport)} µs (${fmt(r.daemonCpu.seconds, 1)} s in all); ${fmt(r.maxEventLoopDelayMs)} ms |`,
        ]
      : []),
  ].join('\n');
}

function scaleTable(r: Json): string {
  const { burst, big, scale } = r;
  const loop = (c: Json) => (c.answered > 0 ? `p50 ${fmt(c.p50)} ms, p99 ${fmt(c.p99)} ms, max ${fmt(c.max)} ms (${c.answered} of ${c.episodes} stragglers answered, after ${c.slowIterationsToReact.min === c.slowIterationsToReact.max ? c.slowIterationsToReact.min : `${c.slowIterationsToReact.min}-${c.slowIterationsToReact.max}`} slow iterations)` : `none of ${c.episodes} answered`);
  const shapes = (scale.shapes as Json[]).map((s) => `${s.count} x ${s.shape}`).join(', ');
  const yes = (ok: boolean) => (ok ? 'met' : '**not met**');
  return [
    '| part | measure | result |',
    '|---|---|---|',
    `| burst | ${burst.jobs} jobs of ${burst.shape.stages} x ${burst.shape.microbatches} register at once, ${burst.reportsPerJob} reports each: every job scheduled; every report processed | ${burst.secondsToAllSchedules === null ? `not within 180 s (${burst.scheduledAtEnd})` : `${fmt(burst.secondsToAllSchedules, 1)} s`}; ${burst.secondsToAllReportsProcessed === null ? 'not within 180 s' : `${fmt(burst.secondsToAllReportsProcessed, 1)} s`} |`,
    `| burst | jobs taken twice; daemon CPU time; largest event-loop delay | ${burst.jobsTakenTwice}; ${fmt(burst.daemonCpuSeconds, 1)} s; ${fmt(burst.maxEventLoopDelayMs)} ms |`,
    `| big | one ${big.shape.stages} x ${big.shape.microbatches} x dp ${big.shape.dp} job (${big.ranks} ranks, ${fmt(big.registrationBytes / 1e3)} kB registration): registration to schedule | ${big.msToSchedule === null ? 'no schedule' : `${fmt(big.msToSchedule)} ms`}${big.rejected.length > 0 ? ` (refused: ${big.rejected[0]})` : ''} |`,
    `| big | largest event-loop delay: the daemon idle for 3 s before; registration to schedule; over ${big.iterations} iterations of ${big.ranks} reports (goal < 100 ms) | ${fmt(big.idleMaxEventLoopDelayMs)} ms; ${fmt(big.registrationMaxEventLoopDelayMs)} ms; ${fmt(big.maxEventLoopDelayMs)} ms (${yes(r.goals.bigJobLoopBlockUnder100Ms)}) |`,
    `| scale | ${scale.seconds} s, ${scale.ranks.toLocaleString('en-US')} ranks in ${scale.jobs} jobs (${shapes}), one iteration every 2-5 s per job | ${scale.reports.toLocaleString('en-US')} reports, ${fmt(scale.reportsPerSecond)} per second; load generator CPU ${fmt(scale.loadGenerator.cpuMicrosPerReport)} µs per report, never behind its pace by more than ${fmt(scale.maxBehindPaceMs)} ms |`,
    `| scale | control loop, 8 x 32 jobs (the reports decided on -> prepare, on Redis's clock; goal p99 < 20 ms) | ${loop(scale.controlLoopMs['8x32'])} (${yes(r.goals.controlLoop8x32P99Under20Ms)}) |`,
    `| scale | control loop, 4 x 16 jobs | ${loop(scale.controlLoopMs['4x16'])} |`,
    ...(r.runs
      ? [
          `| scale | control loop, all shapes, in each of ${r.runs.length} runs (fresh daemon and Redis, own seed; goal: p99 < 20 ms in every run, each with 100 or more answered stragglers so its p99 is not its maximum) | ${(r.runs as Json[]).map((x) => `run ${x.run}: p50 ${fmt(x.p50)} / p99 ${fmt(x.p99)} / max ${fmt(x.max)} ms, ${x.answered} of ${x.episodes} answered, load ${fmt(x.loadAverage1m, 1)}`).join('; ')} (${yes(r.goals.everyRunP99Under20Ms && r.goals.everyRunEnoughEpisodes)}) |`,
        ]
      : []),
    `| scale | ingest lag (entries not read or not acknowledged, all jobs): largest; slope over the second half; at the end | ${fmt(scale.maxUnprocessed)}; ${fmt(scale.unprocessedSlopePerMinute)} per minute; ${fmt(scale.finalUnprocessed)} (${yes(r.goals.noLagGrowth)}) |`,
    `| scale | daemon heap, RSS (Deployment limit: base ${fmt(scale.memoryLimitMiB.base)} MiB, production ${fmt(scale.memoryLimitMiB.production)} MiB), Redis used_memory: largest | ${fmt(scale.maxHeapMiB)} MiB, ${fmt(scale.maxRssMiB)} MiB (${yes(r.goals.rssWithinProductionLimit)}), ${fmt(scale.maxRedisMiB)} MiB |`,
    `| scale | daemon CPU time per report (in all); largest event-loop delay (2 s scrapes) | ${fmt(scale.daemonCpuMicrosPerReport)} µs (${fmt(scale.daemonCpuSeconds, 1)} s); ${fmt(scale.maxEventLoopDelayMs)} ms |`,
    `| machine | cores; load average (1 / 5 / 15 min) at the end | ${r.machine.cpus}; ${(r.machine.loadAverage as number[]).map((x) => fmt(x, 1)).join(' / ')} |`,
  ].join('\n');
}

/**
 * The README's paragraph of headline numbers, from several results files (by file name). Each
 * sentence picks its row by the numbers, not by name: the constant straggler the static plan
 * suffers most from, the largest data-parallel delay. Its links point into docs/benchmarks.md, so
 * the block belongs in README.md.
 */
function headlineParagraph(r: Json): string {
  const x = (v: number) => `${fmt(v, 2)}x`;
  const pct = (v: number, digits = 1) => `${fmt(v, digits)}%`;
  const worstFor = (rows: Json[], slowdown: (row: Json) => number) => rows.reduce((a, b) => (slowdown(b) > slowdown(a) ? b : a));
  const sentences: string[] = [];

  const realRows = r.real.scenarios as Json[];
  const real = worstFor(realRows, (s) => s.policies['zb-static'].medianIterationMs / s.healthyMs);
  const realX = (p: string) => x(real.policies[p].medianIterationMs / real.healthyMs);
  const realErr = real.predictedMs ? `; the iteration time the daemon predicted with its switch was within ${pct(Math.abs(100 * (real.predictedMs - real.policies.pipemorph.medianIterationMs) / real.policies.pipemorph.medianIterationMs))} of the measured one (with real compute the predictions were further off: [per kind of run](docs/benchmarks.md#prediction-accuracy-by-kind-of-run))` : '';
  sentences.push(`On [real rank processes](docs/benchmarks.md#real-rank-processes) that hold each op for its profiled time (${real.name}), the static ZeroBubble plan runs at ${realX('zb-static')} the healthy iteration time, CPU delegation alone at ${realX('delegation-only')} and pipemorph at ${realX('pipemorph')}${realErr}.`);

  const e2eRows = r.e2e.scenarios as Json[];
  const overOracle = e2eRows.map((s) => s.pipemorphOverOracle as number);
  const fromOnset = e2eRows.map((s) => s.pipemorphOverOracleFromOnset as number | undefined).filter((v): v is number => typeof v === 'number');
  const range = (v: number[]) => `${x(Math.min(...v))}-${x(Math.max(...v))}`;
  const ratio = fromOnset.length === e2eRows.length
    ? `${range(fromOnset)} that of an oracle that knows every link's delay at every instant, counted from the straggler's onset (detection, the cost gate and the switch's lead included; ${range(overOracle)} in steady state)`
    : `${range(overOracle)} that of an oracle that knows every link's delay at every instant, in steady state (the reaction left out)`;
  const e2e = worstFor(e2eRows, (s) => s.policies['zb-static'].slowdown);
  sentences.push(`[Under the emulator](docs/benchmarks.md#end-to-end-under-the-emulator) pipemorph's iteration time is ${ratio} over ${e2eRows.length} scenarios; on the ${e2e.name.replace(/^\d+-stage, /, '')} it runs at ${x(e2e.policies.pipemorph.slowdown)} healthy, the static plan at ${x(e2e.policies['zb-static'].slowdown)}.`);

  const dp = worstFor(r.e2e.dpScenarios as Json[], (s) => s.extraMs);
  sentences.push(`With a rack uplink ${dp.extraMs} ms slower under [data parallelism](docs/benchmarks.md#data-parallel-straggler), the static plan runs at ${x(dp.policies['zb-static'].slowdown)}, a re-map alone (Falcon) at ${x(dp.policies.falcon.slowdown)}, pipemorph at ${x(dp.policies.pipemorph.slowdown)}.`);

  const quality = (policy: string) => (r.engine.quality.policies as Json[]).find((p) => p.policy === policy);
  const search = quality('search');
  const adaptive = quality('adaptive');
  if (search && adaptive) sentences.push(`Over ${r.engine.quality.cases} random profiles the daemon's [search planner](docs/benchmarks.md#plan-quality) is ${pct(search.meanGapPct, 2)} above a lower bound on average (Alg. 2 alone: ${pct(adaptive.meanGapPct, 2)}).`);

  const c = r.daemon.controlLoop;
  sentences.push(`The [daemon](docs/benchmarks.md#daemon) takes p50 ${fmt(c.p50Ms, 0)} / p99 ${fmt(c.p99Ms, 0)} ms from the reports that reveal a straggler to the new plan's prepare (on Redis's clock, 64 ranks) and ingests ${Math.round(r.daemon.ingestSamplesPerSec).toLocaleString('en-US')} link samples per second.`);

  const chaos = r.chaos.rows as Json[];
  const sum = (k: string) => chaos.reduce((a, row) => a + Number(row[k]), 0);
  sentences.push(`The [chaos suite](docs/faults.md)'s ${chaos.length} faults lose ${sum('reportsLost')} reports and run ${sum('mixedIterations')} mixed-version iterations.`);
  const cs = r['chaos-scale'];
  const faults = (cs.rows as Json[]).filter((x) => !String(x.fault).startsWith('none'));
  const led = faults.map((x) => x.everyJobLedAfterS as number | null);
  const after = faults.filter((x) => x.loopAfter.n > 0).map((x) => x.loopAfter.p99 as number);
  const ref = (cs.rows as Json[]).find((x) => String(x.fault).startsWith('none (reference') && x.loopAfter.n > 0);
  const lean = (cs.rows as Json[]).find((x) => String(x.fault).startsWith('none, refinement off') && x.loopAfter.n > 0);
  sentences.push(
    `[Under load](docs/faults.md#the-same-faults-under-load-10000-ranks-on-a-redis-cluster) (${cs.setup.ranks.toLocaleString('en-US')} ranks, a 3-master Redis Cluster, ${cs.setup.replicas} replicas) ${faults.length} faults left ${cs.totals.reportsNeverProcessed} reports unprocessed, ${cs.totals.mixedIterations} mixed-version iterations, ${cs.totals.versionsReused} versions reused and ${cs.totals.splitBrainWrites} split-brain writes; every job was led again ${led.includes(null) ? 'not always' : `within ${fmt(Math.max(...(led as number[])), 1)} s`} (goal 15 s); the control loop's p99 in the 30 s after a fault was ${fmt(Math.min(...after), 0)}-${fmt(Math.max(...after), 0)} ms (goal 20 ms)${ref && lean ? `; with no fault it was ${fmt(ref.loopAfter.p99, 0)} ms, and ${fmt(lean.loopAfter.p99, 0)} ms on replicas that refine no plans` : ''}.`,
  );

  // Decisions on noise the corpus does not have: the held-out families only (the found ones were fixed against).
  const held = (r['outside-sweep'].families as Json[]).filter((f) => f.kind === 'held out');
  const runs = held.flatMap((f) => f.seeds as Json[]);
  const wrong = runs.reduce((a, x) => a + x.healthy.switches + x.healthy.remaps + x.healthy.rebalances, 0);
  const times = (k: string) => runs.map((x) => x[k] as number | null);
  const span = (k: string) => {
    const v = times(k);
    const known = v.filter((t): t is number => t !== null);
    const never = v.length - known.length;
    const lo = Math.min(...known);
    const hi = Math.max(...known);
    return known.length ? `${lo === hi ? lo : `${lo}-${hi}`}${never ? ` (${never} never)` : ''}` : 'never';
  };
  sentences.push(`On ${held.length} [noise families held out](docs/benchmarks.md#decisions-on-noise-the-corpus-does-not-have) from its corpus (${runs.length} runs of ${r['outside-sweep'].iterations} healthy iterations) the daemon took ${wrong} ${wrong === 1 ? 'switch, re-map or re-balance' : 'switches, re-maps or re-balances'} on healthy jobs; a +30 ms link's plan was in force ${span('pipelineInForce')} iterations after onset, a +30 ms ring link re-mapped after ${span('ringInForce')}, a 1.5x rank re-balanced after ${span('computeInForce')}.`);

  // An outside engineer's rank model and noise (held out: nothing was changed against it).
  const ind = r['independent-sweep'];
  const fams = ind.summary as Json[];
  const total = (k: string) => fams.reduce((a, f) => a + (f[k] as number[]).reduce((x, y) => x + y, 0), 0);
  const remapFams = fams.filter((f) => (f.falseRemaps as number[]).some((x) => x > 0)).map((f) => f.family);
  sentences.push(`On ${fams.length} [noise families another engineer wrote](docs/benchmarks.md#decisions-on-an-outside-engineers-noise) from the docs alone (${fams.reduce((a, f) => a + (f.falseSwitches as number[]).length, 0)} runs of ${ind.healthyIterations} healthy iterations) it took ${total('falseSwitches')} false switches, ${total('falseRebalances')} false re-balances and ${total('falseRemaps')} false re-maps${remapFams.length ? ` (all in ${remapFams.join(' and ')})` : ''}.`);
  return sentences.join('\n');
}

function detectionTable(r: Json): string {
  const pct = (x: number | null) => (x === null ? '-' : `${fmt(100 * x, 0)}%`);
  const row = (c: Json, name = c.class as string) =>
    `| ${name} | ${c.scenarios} | ${c.worthActing}/${c.labels} | ${pct(c.precision)} | ${pct(c.recall)} | ${fmt(c.detectMedian)} / ${fmt(c.detectP95)} | ${fmt(c.detectMedianAtLeast20ms)} / ${fmt(c.detectMedianAtLeast5ms)} | ${fmt(c.inForceMedian)} / ${fmt(c.inForceP95)}${c.inForceMissed ? ` (${c.inForceMissed} never)` : ''} | ${fmt(c.backMedian)} / ${fmt(c.backMax)}${c.backMissed ? ` (${c.backMissed} never)` : ''} | ${c.switches} (${c.declined} declined) | ${c.falseSwitches} (${c.falseSwitchesPerJobDay === null || c.falseSwitchesPerJobDay === undefined ? '-' : `${fmt(c.falseSwitchesPerJobDay, 1)}/day`}) | ${c.falseRemaps} | ${c.jobDays > 0 ? fmt(c.jobDays, 3) : '-'} | ${c.lossVsOracle >= 0 ? '+' : ''}${fmt(100 * c.lossVsOracle, 2)}% |`;
  return [
    '| class | scenarios | worth acting / labels | precision | recall | time to detect, median / p95 (iterations) | median, >= 20 ms / 5-20 ms | >= 20 ms in force from onset, median / p95 | back to the initial plan after healing, median / max | switches | false switches (per healthy job-day) | false re-maps | healthy job-days (pipeline time) | vs oracle |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...(r.classes as Json[]).map((c) => row(c)),
    row(r.healthy, '**all healthy**'),
    row(r.stragglers, '**all stragglers**'),
    row(r.overall, '**whole corpus**'),
  ].join('\n');
}

/** The goals of issue 29 against bench:detection's results, each met or missed by how much. */
function detectionGoalsTable(files: Json): string {
  const r = files.detection;
  const h = r.healthy;
  const st = r.stragglers;
  const all = r.overall;
  // The corpus's jobs declare no layers: the re-balance goal is read off bench:outside (every family and seed).
  const outside = files['outside-sweep'];
  const rebalanced: Array<number | null> = (outside.families as Json[]).flatMap((f: Json) => (f.seeds as Json[]).map((x: Json) => x.computeInForce));
  const quiet: Array<number | null> = (outside.families as Json[]).filter((f: Json) => !f.noise.computeSigma || f.noise.computeSigma <= 0.05).flatMap((f: Json) => (f.seeds as Json[]).map((x: Json) => x.computeInForce));
  const known = rebalanced.filter((x): x is number => x !== null).sort((a, b) => a - b);
  const quietMax = Math.max(...quiet.map((x) => (x === null ? Infinity : x)));
  const never = rebalanced.length - known.length;
  const met = (ok: boolean | null) => (ok === null ? 'not measured' : ok ? 'yes' : '**no**');
  const le = (x: number | null | undefined, goal: number) => (x === null || x === undefined ? null : x <= goal);
  const signed = (x: number) => `${x >= 0 ? '+' : ''}${fmt(100 * x, 2)}%`;
  const rows = [
    ['healthy noisy traffic: 0 false re-maps', `${h.falseRemaps}`, met(h.falseRemaps === 0)],
    [
      'healthy noisy traffic: at most 1 false switch per job-day (pipeline time), every-noise job included',
      `${fmt(h.falseSwitchesPerJobDay, 2)} per job-day (${h.falseSwitches} in ${fmt(h.jobDays, 3)} job-days)`,
      met(le(h.falseSwitchesPerJobDay, 1)),
    ],
    ['recall on stragglers worth acting on: 100%', `${fmt(100 * (all.recall ?? 0), 1)}%`, met(all.recall === null ? null : all.recall >= 1)],
    [
      '>= 20 ms pipeline or ring straggler: new plan in force within 6 iterations of onset (median), 10 (p95)',
      `${fmt(st.inForceMedian)} / ${fmt(st.inForceP95)}${st.inForceMissed ? `, ${st.inForceMissed} never` : ''}`,
      met(st.inForceMedian === null ? null : le(st.inForceMedian, 6)! && le(st.inForceP95, 10)! && st.inForceMissed === 0),
    ],
    ['back to delegation off and the initial warm-ups within 30 iterations of healing (every healed straggler)', `median ${fmt(st.backMedian)}, max ${fmt(st.backMax)}${st.backMissed ? `, ${st.backMissed} never` : ''}`, met(st.backMax === null ? null : le(st.backMax, 30)! && st.backMissed === 0)],
    [
      '1.5x compute straggler re-balanced within 20 iterations of onset',
      `bench:outside (the corpus jobs declare no layers), ${rebalanced.length} runs: median ${fmt(known[(known.length - 1) >> 1])}, max ${fmt(known[known.length - 1])}${never ? `, ${never} never` : ''}; on quiet compute (5%) max ${fmt(quietMax)}`,
      met(never === 0 && known[known.length - 1] <= 20),
    ],
    ['straggler scenarios within 3% of the label oracle, from onset', `${signed(st.lossVsOracle)} (whole corpus ${signed(all.lossVsOracle)})`, met(st.lossVsOracle <= 0.03)],
    ['time to detect, median: delays >= 20 ms / 5-20 ms (iterations; no goal)', `${fmt(all.detectMedianAtLeast20ms)} / ${fmt(all.detectMedianAtLeast5ms)}`, '-'],
  ];
  return ['| goal | measured | met? |', '|---|---|---|', ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n');
}

/** The demo's phase table as the demo prints it (src/emulator/demo.ts), from a recorded act. */
function demoPhases(act: Json, pad: number): string[] {
  return [
    `${'phase'.padEnd(pad)}iterations   mean ms   vs healthy`,
    ...(act.phases as Json[]).map((p) => `${String(p.name).padEnd(pad)}${String(p.iterations ?? '(model)').padStart(10)}${fmt(p.meanMs).padStart(10)}${fmt(p.vsHealthy, 2).padStart(12)}x`),
  ];
}

const PAD: Record<string, number> = { pipeline: 28, dataParallel: 34 };

/** The README's demo table: act 1's phases. */
function demoTable(r: Json): string {
  return ['```', ...demoPhases(r.acts.pipeline, PAD.pipeline), '```'].join('\n');
}

/**
 * An act's transcript as recorded: its introduction, the iteration lines where something besides
 * the time changes (and the line before each change), the summary and what follows it.
 */
function demoTranscript(r: Json, key: string): string {
  const act = r.acts[key];
  const lines = act.lines as Json[];
  const keep = lines.map((l, k) => k === 0 || l.state !== lines[k - 1].state || (k + 1 < lines.length && lines[k + 1].state !== l.state));
  const body: string[] = [];
  lines.forEach((l, k) => {
    if (!keep[k]) return;
    if (k > 0 && !keep[k - 1]) body.push('...');
    body.push(l.text);
  });
  if (!keep[lines.length - 1]) body.push('...');
  return ['```', ...(act.intro as string[]), '', ...body, '', 'summary', ...demoPhases(act, PAD[key]), ...(act.outro as string[]), '```'].join('\n');
}

const phaseOf = (act: Json, name: string): Json | undefined => (act.phases as Json[]).find((p) => p.name === name);

/** Act 1 in a few figures, for the prose beside the transcript. */
function demoAct1Findings(r: Json): string {
  const a = r.acts.pipeline;
  const old = phaseOf(a, 'straggler, old schedule');
  const adapted = phaseOf(a, 'straggler, adapted');
  const switches = a.switches as Json[];
  const straggler = switches.find((w) => w.kind === 'straggler');
  const recovery = switches.find((w) => w.kind === 'recovery');
  return [
    `In the recorded run the straggler cost ${fmt(old?.vsHealthy, 2)}x per iteration under the initial plan;`,
    straggler ? `the whole job switched at iteration ${straggler.effectiveIteration} (predicted ${fmt(straggler.predictedMs)} ms, was ${fmt(straggler.previousMs)} ms) and ran at ${fmt(adapted?.vsHealthy, 2)}x healthy;` : 'no straggler switch was recorded;',
    recovery ? `it returned to the initial plan at iteration ${recovery.effectiveIteration}.` : 'it did not return to the initial plan within the act.',
    a.mixedIterations.length === 0 ? 'Every rank recorded the same version in every iteration.' : `Ranks ran mixed versions in iterations ${(a.mixedIterations as number[]).join(', ')}.`,
  ].join(' ');
}

/** Act 2 in one sentence (the README's and docs/demo.md's). */
function demoAct2Findings(r: Json): string {
  const a = r.acts.dataParallel;
  const across = phaseOf(a, 'slow uplink, rings across it');
  const remapped = phaseOf(a, 'slow uplink, re-mapped');
  const remap = (a.switches as Json[]).find((w) => w.kind === 'remap');
  return `In the recorded run the rings across the slow uplink ran at ${fmt(across?.vsHealthy, 2)}x the healthy iteration and the re-mapped job at ${fmt(remapped?.vsHealthy, 2)}x` +
    (remap ? `; the re-map was in force from iteration ${remap.effectiveIteration}, published with a prediction of ${fmt(remap.predictedMs)} ms (was ${fmt(remap.previousMs)} ms).` : '; no re-map was recorded.');
}

/** The caption of the README's timeline (docs/img/timeline-8stage.svg), written by bench:render with these figures. */
function renderCaption(r: Json): string {
  const p = r.picture;
  const pct = (x: number) => `${fmt(100 * x, 0)}%`;
  return `An 8-stage job with ${p.delayMs} ms on link ${p.slowLink}-${p.slowLink + 1} (the demo's job), before and after re-planning: under the initial plan every microbatch waits at the slow link and the pipeline stalls in waves (iteration ${fmt(p.before.iterationMs)} ms, bubble rate ${pct(p.before.bubbleRate)}); the re-planned schedule, ${(p.after.warmup as number[])[0]} warm-up forwards on stage 0 instead of ${(p.before.warmup as number[])[0]}, keeps the upstream stages busy while messages cross it (${fmt(p.after.iterationMs)} ms, ${pct(p.after.bubbleRate)}).`;
}

/** bench:detection-real: a real daemon and real ranks with noise, healthy and with a slow link. */
function detectionRealFindings(r: Json): string {
  const s = r.summary;
  const h = r.healthy;
  const n = h.noiseEvents;
  const met = (ok: boolean) => (ok ? 'met' : '**not met**');
  const decided = [...new Set((r.slow as Json[]).map((x) => x.detection?.decisionIteration ?? 'never'))].join(', ');
  const switched = [...new Set((r.slow as Json[]).map((x) => x.detection?.switchIteration ?? 'never'))].join(', ');
  const reasons = [...new Set((r.slow as Json[]).map((x) => ((x.detection?.switchReasonLinks ?? []) as number[][]).map((l) => `ranks ${l.join('-')}`).join(' and ') || 'no link'))].join('; ');
  return [
    `- Healthy links, ${s.healthyIterations} noisy iterations (${fmt(s.healthyWallS)} s; ${n.gcPauses} pauses, ${n.stalls} stalls, ${n.checkpoints} checkpoints): ${s.healthySwitches} switches, ${s.healthyDecisions} straggler decisions, ${s.healthyFlaggedEpisodes} short flags seen by the poll of \`GET /jobs/:id\` (${(h.flagged as Json[]).map((f) => `${f.what} at ${f.firstIteration}`).join(', ') || 'none'}). Goal (0 switches) ${met(s.goalHealthyZeroSwitches)}.`,
    `- The same noise plus ${r.slowMs} ms on link ${r.link} from iteration ${r.onset}, ${s.trials} runs with different noise seeds: detected in ${s.detectedTrials} of ${s.trials}, decided at iteration ${decided}, a median of ${fmt(s.medianIterationsToDetect)} iterations to detect (1 = on the onset's own report), the published reason naming ${reasons}; every rank on the new schedule from iteration ${switched}, a median of ${fmt(s.medianIterationsToSwitch)} iterations after the onset. Goal (median at most 2 iterations for delays >= 20 ms) ${met(s.goalDetectWithin2)}.`,
  ].join('\n');
}

/**
 * How far the daemon's predictions were from what real ranks measured, per kind of run: ranks that
 * sleep their op times, ranks that compute with a core each, more rank processes than cores, and
 * the prediction published with a re-map. Signed errors: (predicted - measured) / measured.
 */
function predictionKindsTable(r: Json): string {
  const pct = (x: number) => `${x >= 0 ? '+' : ''}${fmt(100 * x, 1)}%`;
  const range = (xs: number[]) => (xs.length === 0 ? '-' : Math.min(...xs) === Math.max(...xs) ? pct(xs[0]) : `${pct(Math.min(...xs))} to ${pct(Math.max(...xs))}`);
  const real = r.real;
  const cores = real.torch?.machine?.cpus as number | undefined;
  const sleepRows = (real.scenarios as Json[]).filter((x) => x.predictedMs).map((x) => ({ name: x.name, error: (x.predictedMs - x.policies.pipemorph.medianIterationMs) / x.policies.pipemorph.medianIterationMs }));
  const prediction = (r.prediction.scenarios as Json[]).flatMap((x) => (x.policies as Json[]).map((p) => ({ name: `${x.name}, ${p.policy}`, error: p.transportAwareError as number })));
  const torch = ((real.torch?.scenarios ?? []) as Json[]).filter((x) => x.predictionError !== null && x.predictionError !== undefined);
  const own = torch.filter((x) => cores !== undefined && x.stages * x.dp <= cores);
  const shared = torch.filter((x) => cores === undefined || x.stages * x.dp > cores);
  const remap = real.torch?.remap;
  const each = (rows: Array<{ name: string; error: number }>) => rows.map((x) => `${x.name}: ${pct(x.error)}`).join('; ') || '-';
  return [
    '| kind of run | results | rows | error of each row (predicted - measured) | range |',
    '|---|---|---|---|---|',
    `| sleep compute: each op held for its profiled time (\`--compute sleep\`), the schedule fixed (bench:prediction) | prediction.json | ${prediction.length} | ${each(prediction)} | ${range(prediction.map((x) => x.error))} |`,
    `| sleep compute, the prediction published with pipemorph's last switch (bench:real) | real.json | ${sleepRows.length} | ${each(sleepRows)} | ${range(sleepRows.map((x) => x.error))} |`,
    `| real compute (the tiny GPT, \`--compute torch\`), a core per rank process (${cores ?? '?'} cores) | real.json | ${own.length} | ${each(own.map((x) => ({ name: x.name, error: x.predictionError })))} | ${range(own.map((x) => x.predictionError))} |`,
    `| real compute, more rank processes than the ${cores ?? '?'} cores (oversubscribed) | real.json | ${shared.length} | ${each(shared.map((x) => ({ name: `${x.name} (${x.stages * x.dp} processes)`, error: x.predictionError })))} | ${range(shared.map((x) => x.predictionError))} |`,
    `| real compute, after a re-map (the prediction published with it) | real.json | ${remap ? 1 : 0} | ${remap ? `${remap.name}: ${pct(remap.predictionError)}` : '-'} | ${remap ? pct(remap.predictionError) : '-'} |`,
  ].join('\n');
}

/** bench:scale's 8 x 32 tail as shipped (the story of how it came down is prose; earlier variants are not measured at this commit). */
function scaleTailTable(r: Json): string {
  const c = r.scale.controlLoopMs['8x32'];
  const slowest = (r.scale.episodes as Json[]).filter((e) => String(e.shape).startsWith('8x32') && Number.isFinite(e.ms)).map((e) => e.ms as number).sort((a, b) => b - a);
  return [
    '| daemon | 8 x 32 p50 / p99 (next slowest) | largest event-loop delay | burst: last schedule |',
    '|---|---|---|---|',
    `| as shipped, \`npm run bench:scale\` (${c.answered} answered 8 x 32 stragglers) | ${fmt(c.p50)} / ${fmt(c.p99)} ms (${fmt(slowest[1])}) | ${fmt(r.scale.maxEventLoopDelayMs)} ms | ${r.burst.secondsToAllSchedules === null ? 'not within 180 s' : `${fmt(r.burst.secondsToAllSchedules, 1)} s`} |`,
    '| the variants before each change below | not measured at this commit | | |',
  ].join('\n');
}

/** bench:daemon's control loop as shipped, for the section on its tail (earlier variants are not measured at this commit). */
function daemonLoopTable(r: Json): string {
  const row = (name: string, x: Json) => `| ${name} | ${fmt(x.p50Ms)} / ${fmt(x.p99Ms)} / ${fmt(x.maxMs)} ms (${x.trials} trials) | ${fmt(x.client.p50Ms, 1)} / ${fmt(x.client.p99Ms, 1)} ms |`;
  return [
    '| daemon | p50 / p99 / max on Redis\'s clock | as this bench sees it: p50 / p99 |',
    '|---|---|---|',
    row('as shipped (`--no-memory-reducer`, warm-up 16 rounds), `npm run bench:daemon`', r.controlLoop),
    ...(r.controlLoopOwnCore ? [row('the same, the daemon on a core of its own', r.controlLoopOwnCore)] : []),
    '| before the fix (no `--no-memory-reducer`), or without the warm-up (`PIPEMORPH_BENCH_WARM_UP_ROUNDS=0`) | not measured at this commit | |',
  ].join('\n');
}

/** bench:rebalance's exactness and planning time (docs/rebalancing.md). */
function rebalancePlanningTable(r: Json): string {
  const b = r.bruteForce;
  const d = r.planning.decision;
  const rows = (r.planning.search as Json[]).map((x) => `| ${x.layers} | ${x.microbatches} | ${x.unevenLayers ? 'uneven (0.5-1.5x)' : 'uniform'} | ${fmt(x.searchMedianMs, 1)} ms | ${x.evaluations} | ${x.exact ? 'yes' : 'no'} |`);
  return [
    `On ${b.cases} seeded random jobs the search agrees with brute force over every split on ${b.agree} (${b.exactFlagged} with a fitting split, proven exact by the search; ${b.infeasible} where no split fits), largest relative difference ${fmt(b.maxRelativeDifference, 3)}.`,
    '',
    `Planning time, ${(r.planning.search as Json[])[0].stages} stages (one rank 1.5x slower, median of 5 runs):`,
    '',
    '| layers | microbatches | layer times | search | dynamic programmes | exact |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    `The whole decision for ${d.stages} stages of ${d.layers / d.stages} layers and ${d.microbatches} microbatches (the search, then ${d.refineCandidates} splits planned with ${d.planner === 'adaptive' ? 'Alg. 2' : d.planner} and simulated, and re-planning alone) takes ${fmt(d.medianMs)} ms (median).`,
  ].join('\n');
}

/** bench:rebalance's compute straggler, 8 stages (docs/rebalancing.md): the Alg. 2 rows. */
function rebalanceSlowRankTable(r: Json): string {
  const rows = (r.slowRank as Json[]).filter((x) => x.planner === 'adaptive');
  const met = rows.filter((x) => x.rebalancedVsScaled <= 1.05 && x.rebalancedMs < x.replanMs);
  const first = met.length ? met.reduce((a, x) => (x.layers < a.layers ? x : a)) : null;
  return [
    '| layers | doing nothing | re-planning alone | re-balanced (+ handoff) | split | healthy, scaled | re-balanced / scaled |',
    '|---|---|---|---|---|---|---|',
    ...rows.map((x) => `| ${x.layers} (${x.layers / x.stages} per stage) | ${fmt(x.nothingMs, 1)} ms | ${fmt(x.replanMs, 1)} ms | ${fmt(x.rebalancedMs, 1)} + ${fmt(x.handoffMsPerIteration, 1)} ms | ${(x.split as number[]).join(',')} | ${fmt(x.scaledHealthyMs, 1)} ms | ${fmt(x.rebalancedVsScaled, 3)} |`),
    '',
    first
      ? `The goal, within 1.05x of the healthy job scaled to the remaining compute and better than re-planning alone, is met from ${first.layers / first.stages} layers per stage on (${first.layers} layers: ${fmt(first.rebalancedVsScaled, 3)}x, where re-planning alone stays at ${fmt(first.replanVsScaled, 3)}x)${met.length < rows.length ? `, not below (${rows.filter((x) => !met.includes(x)).map((x) => `${x.layers} layers: ${fmt(x.rebalancedVsScaled, 3)}x`).join(', ')})` : ''}.`
      : 'The goal (within 1.05x of the healthy job scaled to the remaining compute, better than re-planning alone) is met on no row.',
  ].join('\n');
}

/** bench:oracle-gap's fixed-plan sweep (docs/oracle-gap.md): one search plan for X ms on every link, run over each dynamic trace. */
function oracleGapSweepTable(r: Json): string {
  const rows = (r.rows as Json[]).filter((x) => x.fixedSearchPlanMs);
  const xs = Object.keys(rows[0]?.fixedSearchPlanMs ?? {}).map(Number).sort((a, b) => a - b);
  const lines = [`| planned for X ms | ${xs.join(' | ')} |`, `|---|${xs.map(() => '---|').join('')}`];
  for (const row of rows) {
    const best = Math.min(...xs.map((x) => row.fixedSearchPlanMs[x] as number));
    const cells = xs.map((x) => (row.fixedSearchPlanMs[x] <= row.oracleMs && row.fixedSearchPlanMs[x] === best ? `**${fmt(row.fixedSearchPlanMs[x], 1)}**` : fmt(row.fixedSearchPlanMs[x], 1)));
    lines.push(`| ${String(row.name).replace(/^8-stage, dynamic /, '')}, mean ms (oracle ${fmt(row.oracleMs, 1)}) | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

/** bench:oracle-gap's accounting as the code runs now: excess over the oracle by cause, per trace. */
function oracleGapTable(r: Json): string {
  const s = (x: number) => `${fmt(x, 1)} s`;
  return [
    '| trace | planner | NIC failure | onsets | steady state | recoveries | pipemorph / oracle mean (ratio) | oracle without the search planner |',
    '|---|---|---|---|---|---|---|---|',
    ...(r.rows as Json[]).map((x) => `| ${String(x.name).replace(/^8-stage, /, '')} | ${x.planner} | ${s(x.excessS.nic)} | ${s(x.excessS.onset)} | ${s(x.excessS.steady)} | ${s(x.excessS.recovery)} | ${fmt(x.pipemorphMs, 1)} / ${fmt(x.oracleMs, 1)} ms (${fmt(x.pipemorphOverOracle, 3)}x) | ${fmt(x.oracleWithoutSearchMs, 1)} ms |`),
  ].join('\n');
}

/** The chaos suite's recorded run (docs/faults.md; `npm run test:chaos` writes bench/results/chaos.json). */
function chaosTable(r: Json): string {
  const rows = r.rows as Json[];
  const gone = rows.filter((x) => x.reportsGoneWithMaster !== undefined).map((x) => x.reportsGoneWithMaster as number);
  return [
    '| fault | time to recover (ms) | reports lost | versions reused | mixed-version iterations | split-brain writes | switch after |',
    '|---|---:|---:|---:|---:|---:|---|',
    ...rows.map((x) => `| ${x.fault} | ${x.recoverMs} | ${x.reportsLost} | ${x.versionsReused} | ${x.mixedIterations} | ${x.splitBrainWrites} | ${x.switchedAfter ? 'yes' : 'no'} |`),
    ...(gone.length ? ['', `Reports the killed cluster master acknowledged and never replicated (\`reportsGoneWithMaster\`): ${gone.join(', ')}.`] : []),
  ].join('\n');
}

/** bench:chaos-scale: each fault under 10,000 ranks' load, with the run's totals and goals (issue 32, item 1). */
function chaosScaleTable(r: Json): string {
  const s = (x: number | null) => (x === null ? '-' : fmt(x, 1));
  const loop = (l: Json) => (l.n === 0 ? '- (0)' : `${fmt(l.p99, 0)} (${l.n})`);
  const u = r.setup;
  const t = r.totals;
  const g = r.goals;
  const yes = (b: boolean) => (b ? 'met' : '**missed**');
  return [
    `${u.ranks.toLocaleString('en-US')} ranks in ${u.jobs} jobs (${u.stages} stages x dp ${u.dp}), one report per rank every ${fmt(u.iterationMs / 1000, 1)} s (${u.reportsPerSecond.toLocaleString('en-US')} reports/s), ${u.replicas} replicas on ${u.redis}; ${u.straggler}; ${u.probesPerFault} probe stragglers at each fault.`,
    '',
    '| fault | lasted (s) | every job led again after (s) | jobs unled at worst | probes in force, median / max (s) | control loop p99 during / after, ms (switches) | of it, the step that decided (decision logged -> prepare) p99 during / after, ms | mixed-version iterations | versions reused | split-brain writes | reports refused | daemon CPU per report (µs), cores | replica RSS max (MiB) | notes |',
    '|---|---:|---:|---:|---|---|---|---:|---:|---:|---:|---|---:|---|',
    ...(r.rows as Json[]).map((x) => `| ${x.fault} | ${s(x.faultSeconds)} | ${s(x.everyJobLedAfterS)} | ${x.jobsUnledAtWorst} | ${x.probesInForce}: ${s(x.probeInForceMedianS)} / ${s(x.probeInForceMaxS)} | ${loop(x.loopDuring)} / ${loop(x.loopAfter)} | ${x.stepDuring ? `${loop(x.stepDuring)} / ${loop(x.stepAfter)}` : 'not measured'} | ${x.mixedIterations} | ${x.versionsReused} | ${x.splitBrainWrites} | ${x.reportsRefused} | ${x.daemonCpuMicrosPerReport ?? '-'}, ${fmt(x.daemonCores, 2)} | ${s(x.replicaRssMiBMax)} | ${x.note}${(x.probesMissed as string[]).length ? `; not in force: ${(x.probesMissed as string[]).join('; ')}` : ''} |`),
    '',
    'Where the control loop\'s time goes, per window (the replicas\' own histograms, p99 as the upper bound of its bucket, ms, with the count; the largest event-loop delay any replica reported, which for SIGSTOP is the frozen replica\'s own pause):',
    '',
    '| fault | control step p99 (n) | detect p99 | decide p99 | publish p99 | refinement p99 (n), no step waits for it | event-loop delay max (ms) |',
    '|---|---|---|---|---|---|---:|',
    ...(r.rows as Json[]).map((x) => {
      const c = x.controlPath as Json;
      const p = (k: string) => (c[k].n === 0 ? '-' : `${c[k].p99UpToMs === null ? '?' : typeof c[k].p99UpToMs === 'string' ? c[k].p99UpToMs : `<= ${fmt(c[k].p99UpToMs, 1)}`}`);
      return `| ${x.fault} | ${p('step')} (${c.step.n}) | ${p('detect')} | ${p('decide')} | ${p('publish')} | ${c.refine ? `${p('refine')} (${c.refine.n})` : 'not measured'} | ${x.eventLoopDelayMsMax} |`;
    }),
    '',
    `Over the whole run (${t.iterationsRun.toLocaleString('en-US')} job iterations, ${t.reportsWritten.toLocaleString('en-US')} reports written, ${t.backgroundStragglers} background stragglers): reports never processed ${t.reportsNeverProcessed}${t.jobsWhoseCountIsUnknown ? ` (${t.jobsWhoseCountIsUnknown} jobs not countable)` : ''}, reports refused by Redis ${t.reportsRefused} (skipped by the ranks, as section 4 says), reports a killed master acknowledged and never replicated ${t.reportsGoneWithMaster}, mixed-version iterations ${t.mixedIterations}, versions reused ${t.versionsReused}, split-brain writes ${t.splitBrainWrites} (control entries out of epoch order on the streams: ${t.outOfOrderEpochs}). The load generator fell behind its schedule by at most ${fmt(t.loadGeneratorBehindMsMax, 0)} ms.`,
    '',
    `Goals: all zeros ${yes(g.allZeros)}; every job led again within 15 s ${yes(g.everyJobLedWithin15s)}; control-loop p99 under 20 ms within 30 s ${yes(g.p99BackUnder20MsWithin30s)}; every probe straggler in force ${yes(g.everyProbeInForce)}.`,
    ...chaosScaleTail(r.rows as Json[]),
  ].join('\n');
}

/** What the two windows without a fault say about the control loop's tail: the shipped settings against refinement off. */
function chaosScaleTail(rows: Json[]): string[] {
  const shipped = rows.find((x) => String(x.fault).startsWith('none (reference'));
  const lean = rows.find((x) => String(x.fault).startsWith('none, refinement off'));
  if (!shipped || !lean) return [];
  const p99 = (l: Json) => (l.n === 0 ? '-' : fmt(l.p99, 0));
  const refine = (x: Json) => (x.controlPath.refine?.n > 0 && typeof x.controlPath.refine.p99UpToMs === 'number' ? `; a refinement's own p99 there (\`pipemorph_refinement_duration_seconds\`, its wait for the worker included) is at most ${fmt(x.controlPath.refine.p99UpToMs, 0)} ms over ${x.controlPath.refine.n} refinements` : '');
  const decide = (x: Json) => (typeof x.controlPath.decide.p99UpToMs === 'number' ? `at most ${fmt(x.controlPath.decide.p99UpToMs, 0)} ms` : String(x.controlPath.decide.p99UpToMs));
  return [
    '',
    `Where the tail comes from: under the same load with no fault, the control loop's p99 (in the window / in the 30 s after) is ${p99(shipped.loopDuring)} / ${p99(shipped.loopAfter)} ms with the shipped settings and ${p99(lean.loopDuring)} / ${p99(lean.loopAfter)} ms on replicas without the exact planner's refinement (\`control.refinePlanner\` "none"); the decide stage's p99 is ${decide(shipped)} against ${decide(lean)}. No control step waits for a refinement: it runs on the planning worker's last lane, behind every queued reaction (src/daemon/planning/planning-pool.service.ts), and the step it triggers once made publishes its plan if the same links still straggle${refine(shipped)}.${shipped.stepAfter ? ` What the loop's tail is: from the step that decided each switch (the time of its decision record) to the prepare, the p99 is ${p99(shipped.stepDuring)} / ${p99(shipped.stepAfter)} ms with the shipped settings and ${p99(lean.stepDuring)} / ${p99(lean.stepAfter)} ms without the refinement; the rest of a long sample is waiting before that step, not in it: a refined plan waits for its refinement, a decision for the re-plan interval (\`control.minReplanIntervalMs\`) or for the handshake in flight, then for the job's next report (a step is triggered by reports, by a finished refinement and by maintenance, not at the instant the interval ends), and after a fault for its new owner's adoption.` : ''} The refinement-off window starts 20 s after its replicas replaced the others, with their adoptions in it.`,
  ];
}

/**
 * docs/operations.md's capacity planning, from the three runs that measure a replica's CPU per
 * report: bench:scale-out (many small jobs on a Cluster, a switch in every job every 30 s),
 * bench:chaos-scale's reference window (10,000 ranks on a Cluster) and bench:scale (10,000 ranks on
 * one Redis, one replica). The sizing of a 100,000-rank fleet is that CPU per report times its reports.
 */
function capacityParagraphs(r: Json): string {
  const so = r['scale-out'];
  const cs = r['chaos-scale'];
  const sc = r.scale.scale;
  // The shipped settings' windows size the fleet; the refinement-off window says what the refinement costs.
  const windows = (so.windows as Json[]).filter((w) => (w.settings ?? 'shipped') === 'shipped');
  const lean = (so.windows as Json[]).find((w) => (w.settings ?? 'shipped') !== 'shipped');
  const one = windows.find((w) => w.replicas === 1);
  const us = windows.map((w) => w.cpuMicrosPerReport as number);
  const ref = (cs.rows as Json[]).find((x) => String(x.fault).startsWith('none (reference'))!;
  const sizes = [us.length ? Math.max(...us) : null, ref.daemonCpuMicrosPerReport as number | null, sc.daemonCpuMicrosPerReport as number | null].filter((x): x is number => x !== null);
  const worst = Math.max(...sizes);
  const best = Math.min(...sizes);
  const fleet = (perRankPerS: number, usPerReport: number) => fmt((100000 * perRankPerS * usPerReport) / 1e6, 1);
  return [
    `**What one replica costs.** \`npm run bench:scale-out\` ([benchmarks.md](benchmarks.md#scale-out-on-redis-cluster)) runs ${so.setup.jobs} jobs of ${so.setup.stages} stages (${so.setup.ranks} ranks, one report per rank every ${fmt(so.setup.iterationMs / 1000, 0)} s, ${so.setup.straggler}) on ${so.setup.redis} with ${windows.map((w) => w.replicas).join(', ')} replicas: ${windows.map((w) => `${fmt(w.cpuMicrosPerReport)} µs of daemon CPU per report with ${w.replicas} replica${w.replicas > 1 ? 's' : ''} (${fmt(w.reportsPerSecond)} reports and ${fmt(w.decisionsPerSecond, 1)} control decisions a second, load average ${fmt(w.loadAverage1m, 1)})`).join('; ')}. \`npm run bench:chaos-scale\` ([faults.md](faults.md#the-same-faults-under-load-10000-ranks-on-a-redis-cluster)) runs ${cs.setup.ranks.toLocaleString('en-US')} ranks in ${cs.setup.jobs} jobs (one report per rank every ${fmt(cs.setup.iterationMs / 1000, 0)} s, ${cs.setup.reportsPerSecond.toLocaleString('en-US')} reports and ${fmt(ref.controlPath.decide.n / ref.faultSeconds, 1)} switches a second) on ${cs.setup.replicas} replicas on a Cluster: ${ref.daemonCpuMicrosPerReport ?? '-'} µs per report in its window without a fault (${fmt(ref.daemonCores, 2)} cores in all), at most ${fmt(ref.replicaRssMiBMax, 0)} MiB of RSS per replica. \`npm run bench:scale\` ([benchmarks.md](benchmarks.md#scale)) runs ${sc.ranks.toLocaleString('en-US')} ranks in ${sc.jobs} jobs on one replica and one Redis: ${sc.daemonCpuMicrosPerReport} µs per report (${sc.reportsPerSecond.toLocaleString('en-US')} reports a second), at most ${fmt(sc.maxRssMiB, 0)} MiB of RSS. A replica with no job costs ${fmt(100 * so.idleReplicaCoreFraction, 1)}% of a core (discovery, maintenance, polling its streams). The unit is a report: parsed, fed to the detector, decided on (a control step: detection snapshot, the planner when a link straggles, the cost gate) and acknowledged, plus the switches' handshakes; the more often jobs straggle, the more each report costs.${lean && one ? ` Where it goes: the same load on one replica without the exact planner's refinement (\`control.refinePlanner\` "none") costs ${fmt(lean.cpuMicrosPerReport)} µs per report against ${fmt(one.cpuMicrosPerReport)} µs with it, so at this rate (each job straggling ${so.setup.stragglerOnIterations} of every ${so.setup.stragglerPeriodIterations} iterations, a new straggler in some job every ${fmt((so.setup.iterationMs * so.setup.stragglerPeriodIterations) / so.setup.jobs / 1000, 2)} s) the refinement, the exact planner on the worker thread run for each new straggler, is ${fmt(100 * (1 - lean.cpuMicrosPerReport / one.cpuMicrosPerReport), 0)}% of a replica's CPU (${fmt(Math.round(1e6 / lean.cpuMicrosPerReport))} ranks per replica per core without it); the rest is ingest, the control steps and the handshakes, and on a Cluster the ingest reads each job's stream with its own command at every pass${one.xreadgroupPerReport !== undefined ? ` (${fmt(one.xreadgroupPerReport, 1)} XREADGROUP calls per report with 1 replica, ${fmt(one.xreadgroupPerSecond)} a second: a pass every 50 ms over every job's stream, most of them empty)` : ''}.` : ''}`,
    '',
    `**Ranks per replica per core.** From those runs: ${Math.round(1e6 / worst).toLocaleString('en-US')} to ${Math.round(1e6 / best).toLocaleString('en-US')} ranks per replica per core at one report per rank per second (${fmt(best, 0)}-${fmt(worst, 0)} µs per report). A fleet of 100,000 ranks needs ${fleet(1, best)}-${fleet(1, worst)} cores of replicas at one iteration per rank per second, ${fleet(0.25, best)}-${fleet(0.25, worst)} at one every 4 s, before the headroom below. Give each replica's Deployment a CPU request for the ranks it will lead: ranks x reports per rank per second x ${fmt(worst, 0)} µs, and keep the daemon's CPU use (\`process_cpu_seconds_total\`) under about 70% of its request so that a control step does not wait for a core.`,
  ].join('\n');
}

/** bench:fleet: each culprit named (or not), when, and how long it held; precision, recall and false suspects. */
function fleetTable(r: Json): string {
  const f = r.faults;
  const s = (x: number | null) => (x === null ? '-' : `${fmt(x)} s`);
  const lines = [
    '| culprit | fault | from - to (s) | jobs affected | named | after the 2nd affected job | held while active | cleared after healing |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const c of f.culprits as Json[]) {
    lines.push(`| \`${c.id}\` | ${c.fault} | ${c.fromS} - ${c.toS} | ${c.affectedJobs} | ${c.named ? 'yes' : '**no**'} | ${s(c.afterSecondJobS)} (${fmt(c.afterSecondJobIterations, 0)} iterations) | ${fmt(100 * c.heldFraction, 0)}% | ${s(c.clearedAfterS)} |`);
  }
  const h = r.healthy;
  lines.push('');
  lines.push('| measure | value |');
  lines.push('|---|---|');
  lines.push(`| localisation precision (suspect-computations naming an active culprit / all but those within ${fmt(f.suspectTicks.graceS)} s after its healing) | ${fmt(100 * (f.precision ?? 0), 1)}% (${f.suspectTicks.correct} correct, ${f.suspectTicks.wrong} wrong, ${f.suspectTicks.lateAfterHealing} late) |`);
  lines.push(`| recall (culprits named) | ${fmt(100 * f.recall, 0)}% |`);
  lines.push(`| false suspects during the faults | ${f.falseSuspects.length === 0 ? 'none' : f.falseSuspects.map((x: string) => `\`${x}\``).join(', ')} |`);
  lines.push(`| false suspects on healthy noisy traffic | ${h.falseSuspectEpisodes} in ${fmt(h.hours)} fleet-hours (${fmt(h.falseSuspectsPerFleetDay, 1)} per fleet-day; ${h.jobsRun} jobs, ${h.computations} computations) |`);
  lines.push(`| cost of one view (${r.fleet.jobsAtATime} jobs, ${r.fleet.nodes} nodes) | ${fmt(r.cost.viewMsPerComputation, 2)} ms |`);
  if (r.prior) {
    // Each job's own detection with the fleet as its prior (fleet.prior, shipped on) and without.
    const p = r.prior;
    const cell = (x: Json) => (x.jobs === 0 ? '-' : `${x.median === null ? '-' : fmt(x.median)} / ${x.max === null ? '-' : fmt(x.max)}${x.missed ? `, **${x.missed} never**` : ''} (${x.first} of ${x.jobs} on the 1st)`);
    lines.push('');
    lines.push('Each affected job\'s own detector, iterations from the fault reaching it to its first flag, median / max (and how many flagged on the first slow iteration), with the fleet prior (`fleet.prior`, shipped on) and without. "After named": the fault reached the job after the fleet had named the culprit (jobs placed on it later), the only ones the prior can speed up:');
    lines.push('');
    lines.push('| culprit | all jobs, prior on | all jobs, prior off | after named, prior on | after named, prior off |');
    lines.push('|---|---|---|---|---|');
    (p.detection.on as Json[]).forEach((on, k) => {
      const off = p.detection.off[k];
      lines.push(`| \`${on.id}\` | ${cell(on.all)} | ${cell(off.all)} | ${cell(on.afterNamed)} | ${cell(off.afterNamed)} |`);
    });
    lines.push('');
    lines.push(`False flags on the healthy fleet (any straggler a job's detector flagged, all false): ${p.falseFlags.on.episodes} with the prior, ${p.falseFlags.off.episodes} without, in ${fmt(p.falseFlags.on.jobDays, 1)} job-days. Culprits named without the prior: ${fmt(100 * p.offLocalisation.recall, 0)}%.`);
  }
  return lines.join('\n');
}

/** bench:outside: per noise family, false decisions on healthy jobs and reactions from onset, per seed. */
function outsideSweepTable(r: Json): string {
  const seeds = (xs: Array<number | null>) => xs.map((x) => (x === null ? 'never' : String(x))).join(' / ');
  const lines = [
    `| family | written | shape | healthy: switches / re-maps / re-balances in ${r.seeds.length} x ${r.iterations} iterations | +30 ms link in force | back after healing | +30 ms ring re-mapped | 1.5x rank re-balanced |`,
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const f of r.families as Json[]) {
    const sum = (k: string) => (f.seeds as Json[]).reduce((a: number, s: Json) => a + s.healthy[k], 0);
    const col = (k: string) => seeds((f.seeds as Json[]).map((s: Json) => s[k]));
    // Older results have no switch count: the column then shows the in-force iterations alone.
    const rebalanced = (f.seeds as Json[]).map((s: Json) => `${s.computeInForce === null ? 'never' : s.computeInForce}${s.computeSwitches === undefined ? '' : ` (${s.computeSwitches})`}`).join(' / ');
    lines.push(`| ${f.name} | ${f.kind} | ${f.stages} x ${f.dp} | ${sum('switches')} / ${sum('remaps')} / ${sum('rebalances')} | ${col('pipelineInForce')} | ${col('backAfterHealing')} | ${col('ringInForce')} | ${rebalanced} |`);
  }
  lines.push('');
  lines.push(`Iterations from onset (or from healing) to the new plan in force, one per seed (${r.seeds.join(', ')}); "never": not within 60 iterations. In brackets, the switches of any kind the 1.5x rank's run took from onset to its end, 60 iterations later: one re-balance is the goal, more is churn (a re-balance re-made as noise moves the measured speeds, or undone by a recovery).`);
  return lines.join('\n');
}

/** bench:independent: an outside engineer's rank model and noise families, per family and seed. */
function independentSweepTable(r: Json): string {
  const seeds = (xs: Array<number | null>) => xs.map((x) => (x === null ? 'never' : String(x))).join(' / ');
  const lines = [
    `| family | healthy: false switches / re-maps / re-balances per seed (${r.seeds.length} x ${r.healthyIterations} iterations) | +30 ms link in force | back after healing | +30 ms ring re-mapped | 1.5x rank re-balanced | errors, invalid reports |`,
    '|---|---|---|---|---|---|---|',
  ];
  for (const f of r.summary as Json[]) {
    const per = (f.falseSwitches as number[]).map((_, k) => `${f.falseSwitches[k]} / ${f.falseRemaps[k]} / ${f.falseRebalances[k]}`).join(', ');
    lines.push(`| ${f.family} | ${per} | ${seeds(f.pipelineSwitch)} | ${seeds(f.pipelineRecovery)} | ${seeds(f.ringRemap)} | ${seeds(f.rankRebalance)} | ${f.errors}, ${f.invalidReports} |`);
  }
  lines.push('');
  lines.push(`Iterations from onset (or from healing) to the new plan in force, one per seed (${r.seeds.join(', ')}); "never": none in the run.`);
  return lines.join('\n');
}

/** Table renderers by results file name (bench/results/NAME.json). */
export const RENDERERS: Record<string, (results: Json) => string> = {
  real: realTable,
  'real-torch': realTorchTable,
  'real-remap': realRemapTable,
  'real-rebalance': realRebalanceTable,
  topology: topologyTable,
  prediction: predictionTable,
  e2e: e2eTable,
  'e2e-dp': e2eDpTable,
  'e2e-paced': e2ePacedTable,
  'e2e-rebalance': e2eRebalanceTable,
  'engine-speed': engineSpeedTable,
  'engine-quality': engineQualityTable,
  'engine-optimum': engineOptimumTable,
  'engine-time-limit': engineTimeLimitTable,
  'engine-device': engineDeviceTable,
  daemon: daemonTable,
  'scale-out': scaleOutTable,
  'optimal-line': optimalLineTable,
  render: renderTable,
  soak: soakTable,
  scale: scaleTable,
  detection: detectionTable,
  'detection-goals': detectionGoalsTable,
  fleet: fleetTable,
  headline: headlineParagraph,
  demo: demoTable,
  'demo-act1': (r) => demoTranscript(r, 'pipeline'),
  'demo-act1-findings': demoAct1Findings,
  'demo-act2': (r) => demoTranscript(r, 'dataParallel'),
  'demo-act2-findings': demoAct2Findings,
  'render-caption': renderCaption,
  'detection-real': detectionRealFindings,
  'prediction-kinds': predictionKindsTable,
  'scale-tail': scaleTailTable,
  'daemon-loop': daemonLoopTable,
  'rebalance-planning': rebalancePlanningTable,
  'rebalance-slow-rank': rebalanceSlowRankTable,
  'oracle-gap': oracleGapTable,
  'oracle-gap-sweep': oracleGapSweepTable,
  chaos: chaosTable,
  'chaos-scale': chaosScaleTable,
  capacity: capacityParagraphs,
  'outside-sweep': outsideSweepTable,
  'independent-sweep': independentSweepTable,
};

/**
 * Results file of a block, when it is not the block's own name. A list: the renderer gets every
 * file's JSON by file name. A block whose file is missing is an error (renderMarkdown throws).
 */
const FILES: Record<string, string | string[]> = {
  'real-torch': 'real',
  'real-remap': 'real',
  'real-rebalance': 'real',
  'e2e-dp': 'e2e',
  'e2e-paced': 'e2e',
  'e2e-rebalance': 'e2e',
  'engine-speed': 'engine',
  'engine-quality': 'engine',
  'engine-optimum': 'engine',
  'engine-time-limit': 'engine',
  'engine-device': 'engine',
  headline: ['real', 'e2e', 'engine', 'daemon', 'chaos', 'chaos-scale', 'outside-sweep', 'independent-sweep'],
  'detection-goals': ['detection', 'outside-sweep'],
  'demo-act1': 'demo',
  'demo-act1-findings': 'demo',
  'demo-act2': 'demo',
  'demo-act2-findings': 'demo',
  'render-caption': 'render',
  'prediction-kinds': ['real', 'prediction'],
  'scale-tail': 'scale',
  'daemon-loop': 'daemon',
  'rebalance-planning': 'rebalance',
  'rebalance-slow-rank': 'rebalance',
  'oracle-gap-sweep': 'oracle-gap',
  capacity: ['scale-out', 'chaos-scale', 'scale'],
};

const block = (name: string) => new RegExp(`(<!-- bench:${name} -->)\\n?([\\s\\S]*?)\\n?(<!-- /bench:${name} -->)`);

/** The results a block is rendered from, or undefined when a file is missing. */
function resultsOf(name: string, resultsDir: string): Json | undefined {
  const files = FILES[name] ?? name;
  const read = (file: string): Json | undefined => {
    const path = join(resultsDir, `${file}.json`);
    return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Json) : undefined;
  };
  if (typeof files === 'string') return read(files);
  const all: Json = {};
  for (const file of files) {
    const results = read(file);
    if (results === undefined) return undefined;
    all[file] = results;
  }
  return all;
}

/** Blocks whose numbers are one part of a file that a partial run re-measures: the part's own stamp. */
const PART_STAMPS: Record<string, (results: Json) => Json | undefined> = {
  real: (r) => r.stamps?.sleep,
  'real-torch': (r) => r.stamps?.gpt,
  'real-remap': (r) => r.stamps?.remap,
  'real-rebalance': (r) => r.stamps?.rebalance,
  'e2e-rebalance': (r) => r.rebalanceStamp,
};

/** What a block's numbers were measured at (issue 30): its results file's stamp (or its part's), or each file's for a block of several. */
function stampsOf(name: string, results: Json): string {
  const files = FILES[name] ?? name;
  if (typeof files === 'string') return stampLine(PART_STAMPS[name]?.(results) ?? results.stamp);
  const each = files.map((file) => `${file}: ${results[file].stamp ? `commit ${String(results[file].stamp.commit).slice(0, 10)}${results[file].stamp.dirty ? ' (with uncommitted changes)' : ''}` : 'not stamped'}`);
  return `<sub>Measured at: ${each.join('; ')} (\`npm run bench:stale\` lists what is older than its sources).</sub>`;
}

/** The results files (bench/results/NAME.json) the blocks of a Markdown text need and `resultsDir` lacks, as `block: file`. */
export function missingResults(markdown: string, resultsDir: string): string[] {
  return markedBlocks(markdown).flatMap((name) => {
    const files = FILES[name] ?? name;
    return (typeof files === 'string' ? [files] : files).filter((file) => !existsSync(join(resultsDir, `${file}.json`))).map((file) => `bench:${name}: ${file}.json`);
  });
}

/**
 * The Markdown text with every bench block it holds rendered from `resultsDir`. Throws when a
 * block's results file is missing: a block left as it was would pass for a measurement.
 */
export function renderMarkdown(markdown: string, resultsDir: string): string {
  const missing = missingResults(markdown, resultsDir);
  if (missing.length > 0) throw new Error(`bench tables: no results for ${missing.join(', ')} in ${resultsDir}`);
  let out = markdown;
  for (const [name, render] of Object.entries(RENDERERS)) {
    if (!block(name).test(out)) continue;
    const results = resultsOf(name, resultsDir)!;
    const table = `${render(results)}\n\n${stampsOf(name, results)}`;
    out = out.replace(block(name), (_m, open: string, _body: string, close: string) => `${open}\n${table}\n${close}`);
  }
  return out;
}

/** Names of the bench blocks a Markdown text has. */
export function markedBlocks(markdown: string): string[] {
  return Object.keys(RENDERERS).filter((name) => block(name).test(markdown));
}

/** Names in bench markers that no renderer knows (a typo would otherwise be left alone silently). */
export function unknownBlocks(markdown: string): string[] {
  const names = [...markdown.matchAll(/<!-- \/?bench:([A-Za-z0-9_-]+) -->/g)].map((m) => m[1]);
  return [...new Set(names.filter((name) => !(name in RENDERERS)))];
}

/** Former names, kept for callers written when the README held every table. */
export const renderReadme = renderMarkdown;
export const readmeBlocks = markedBlocks;

/** The Markdown files the tables may live in: README.md and docs/*.md (absolute paths). */
export function markdownFiles(root: string): string[] {
  const docs = join(root, 'docs');
  const inDocs = existsSync(docs) ? readdirSync(docs).filter((f) => f.endsWith('.md')).sort().map((f) => join(docs, f)) : [];
  return [join(root, 'README.md'), ...inDocs];
}

/** The Markdown files that hold at least one bench marker (absolute paths). */
export function markedFiles(root: string): string[] {
  return markdownFiles(root).filter((path) => /<!-- \/?bench:/.test(readFileSync(path, 'utf8')));
}

if (require.main === module) {
  const root = join(__dirname, '..', ...(__dirname.includes(join('dist', 'bench')) ? ['..'] : []));
  const results = join(root, 'bench', 'results');
  const files = markedFiles(root);
  const unknown = files.flatMap((path) => unknownBlocks(readFileSync(path, 'utf8')).map((name) => `${relative(root, path)}: bench:${name}`));
  if (unknown.length > 0) {
    console.error(`bench tables: no renderer for ${unknown.join(', ')}`);
    process.exit(1);
  }
  const missing = files.flatMap((path) => missingResults(readFileSync(path, "utf8"), results).map((what) => `${relative(root, path)}: ${what}`));
  if (missing.length > 0) {
    console.error(`bench tables: no results file for ${missing.join(', ')}`);
    process.exit(1);
  }
  const rewritten: string[] = [];
  for (const path of files) {
    const before = readFileSync(path, 'utf8');
    let after: string;
    try {
      after = renderMarkdown(before, results);
    } catch (error) {
      console.error(`${relative(root, path)}: ${(error as Error).message}`);
      process.exit(1);
    }
    if (before === after) continue;
    writeFileSync(path, after);
    rewritten.push(`${relative(root, path)} (${markedBlocks(after).join(', ')})`);
  }
  const names = files.map((path) => relative(root, path)).join(', ');
  console.log(rewritten.length === 0 ? `bench tables already match bench/results (${names})` : `bench tables rewritten from bench/results: ${rewritten.join('; ')}`);
}
