/**
 * Independent outside sweep: every noise family of src/replay/independent-ranks.fixture.ts x 3 seeds
 * through the daemon's replayed control loop (driveRanks), shipped config with
 * control.refinePlanner = 'none'.
 *
 *  - healthy job, 2500 iterations: switches by kind (straggler / nic-failure = false switches,
 *    remap = false re-maps, rebalance = false re-balances), each with its reason and what the noise did;
 *  - reactions, each its own run, onset at 600: a +30 ms pipeline link (both directions, ranks 5 <-> 6,
 *    dp 1 stages 1-2) for 150 iterations (onset -> straggler switch effective, heal -> recovery
 *    effective); a +30 ms ring link (one direction, rank 2 -> 6: stage 2, dp 0 -> dp 1) lasting
 *    (onset -> remap effective); rank 9 (dp 2, stage 1) computing 1.5x slower (onset -> rebalance effective).
 *
 * Every registration is checked against schemas/registration.v1.schema.json and the checks
 * docs/protocol.md sec. 3.1 lists; every report against schemas/rank-report.v1.schema.json (ajv).
 * driveRanks does not validate (ReplayJob.observe takes reports as ingest does after validation), so
 * seed 1's healthy job of each family is also written as a recording (docs/protocol.md sec. 12) and
 * replayed by `pipemorph replay --recording`, which validates as the daemon does.
 *
 * Written by another engineer from docs/protocol.md, docs/detection.md and schemas/ alone (not the
 * detector's code, the corpus or bench:outside), families designed before their first run; held out:
 * no daemon change has been made against them. `npm run bench:independent` writes
 * bench/results/independent-sweep.json (docs/benchmarks.md renders it).
 * Knobs for quick runs that leave the results alone: INDEP_FAMILIES=a,b  INDEP_SEEDS=1,2,3
 * INDEP_HEALTHY=2500  INDEP_NO_CLI=1  INDEP_OUT=file.json
 */
import Ajv from 'ajv';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import registrationSchema from '../schemas/registration.v1.schema.json';
import reportSchema from '../schemas/rank-report.v1.schema.json';
import { ControlDecision } from '../src/core/control/control-decision.type';
import { loadConfig } from '../src/daemon/config/load-config';
import { PipemorphConfig } from '../src/daemon/config/pipemorph-config.type';
import { RankReport, Registration } from '../src/protocol/protocol-v1.type';
import { driveRanks, OutsideRanks } from '../src/replay/drive-ranks.fixture';
import { FAMILIES, Fault, IndependentRanks, NoiseFamily } from '../src/replay/independent-ranks.fixture';
import { ReplaySwitch } from '../src/replay/replay-job';
import { startStamp } from '../src/support/results-stamp';

const MS_PER_ITERATION = 900;
const ONSET = 600;
const PIPE_HEAL = ONSET + 150;
const HEALTHY = Number(process.env.INDEP_HEALTHY ?? 2500);
const SEEDS = (process.env.INDEP_SEEDS ?? '1,2,3').split(',').map(Number);
const ONLY = process.env.INDEP_FAMILIES?.split(',');

const ajv = new Ajv({ allErrors: true, strict: false });
const checkRegistration = ajv.compile(registrationSchema);
const checkReport = ajv.compile(reportSchema);

/** The checks docs/protocol.md sec. 3.1 lists beyond the schema. */
function registrationProblems(r: Registration): string[] {
  const out: string[] = [];
  if (!checkRegistration(r)) out.push(`schema: ${ajv.errorsText(checkRegistration.errors)}`);
  if (r.ranks.length !== r.stages * r.dp * r.tp) out.push(`registration lists ${r.ranks.length} ranks, stages x dp x tp = ${r.stages * r.dp * r.tp}`);
  if (new Set(r.ranks.map((x) => x.rank)).size !== r.ranks.length) out.push('duplicate rank');
  if (new Set(r.ranks.map((x) => `${x.dp}/${x.pp}/${x.tp}`)).size !== r.ranks.length) out.push('duplicate (dp, pp, tp)');
  for (const x of r.ranks) if (x.dp >= r.dp || x.pp >= r.stages || x.tp >= r.tp) out.push(`rank ${x.rank} out of range`);
  for (const [k, v] of Object.entries({ ...r.memory, ...(r.computeMs ?? {}) })) if (Array.isArray(v) && v.length !== r.stages) out.push(`${k} has ${v.length} entries`);
  if (r.dataParallel && r.dataParallel.gradientBytes.length !== r.stages) out.push('gradientBytes per stage');
  if (r.layers) {
    const n = r.layers.fMs.length;
    for (const k of ['bMs', 'wMs', 'stateBytes', 'activationBytes'] as const) if (r.layers[k].length !== n) out.push(`layers.${k} has ${r.layers[k].length} entries, layers.fMs has ${n}`);
    if (r.layers.perStage.length !== r.stages) out.push('layers.perStage per stage');
    if (r.layers.perStage.reduce((a, b) => a + b, 0) !== n) out.push('layers.perStage does not share out every layer');
  }
  return out;
}

/** Forwards to the fixture; validates every report; keeps what is needed to explain decisions. */
class WatchedRanks implements OutsideRanks {
  invalid = 0;
  invalidExamples: string[] = [];
  reportCount = 0;
  iteration = -1;
  state = new Map<number, string[]>();
  layouts: { from: number; layout: Map<number, { dp: number; pp: number }> }[] = [];
  recording: string[] | null = null;

  constructor(readonly inner: IndependentRanks, recordUpTo = 0) {
    this.layouts.push({ from: 0, layout: inner.layout() });
    if (recordUpTo > 0) this.recording = [JSON.stringify(inner.registration())];
    this.recordUpTo = recordUpTo;
  }
  private readonly recordUpTo: number;

  registration(): Registration {
    return this.inner.registration();
  }

  reports(iteration: number, version: number): RankReport[] {
    this.iteration = iteration;
    const out = this.inner.reports(iteration, version);
    for (const r of out) {
      this.reportCount++;
      if (!checkReport(r)) {
        this.invalid++;
        if (this.invalidExamples.length < 3) this.invalidExamples.push(`${ajv.errorsText(checkReport.errors)} in ${JSON.stringify(r).slice(0, 300)}`);
      }
      if (this.recording && iteration < this.recordUpTo) this.recording.push(JSON.stringify(r));
    }
    if (this.inner.fam.name === 'ecmp-bimodal' || this.inner.fam.name === 'thermal-throttle') this.state.set(iteration, this.inner.describeState());
    return out;
  }

  switchedTo(decision: ControlDecision): void {
    this.inner.switchedTo(decision);
    this.layouts.push({ from: this.iteration + 1, layout: this.inner.layout() });
  }

  layoutAt(t: number): Map<number, { dp: number; pp: number }> {
    return [...this.layouts].reverse().find((l) => l.from <= t)!.layout;
  }
}

interface FalseDecision {
  kind: string;
  iteration: number;
  effectiveIteration: number;
  reason: string;
  evidence: string;
  noise: string[];
}

function explain(w: WatchedRanks, s: ReplaySwitch): FalseDecision {
  const rec = s.record;
  const t = rec.iteration;
  const layout = w.layoutAt(t);
  const rankAt = (dp: number, pp: number) => [...layout].find(([, p]) => p.dp === dp && p.pp === pp)?.[0] ?? -1;
  const ev: string[] = [];
  const evidence = rec.evidence as unknown as { links?: { dp: number; link: number; extraMs: number; nicFailure?: boolean }[]; dataParallelLinks?: { fromRank: number; toRank: number; extraMs: number }[] };
  const noise: string[] = [];
  for (const l of evidence.links ?? []) {
    const a = rankAt(l.dp, l.link);
    const b = rankAt(l.dp, l.link + 1);
    ev.push(`pipeline dp ${l.dp} link ${l.link} (ranks ${a}<->${b}) +${l.extraMs.toFixed(1)} ms`);
    noise.push(`state ${w.inner.linkInfo(a, b)}; ${w.inner.linkInfo(b, a)}`);
  }
  for (const l of evidence.dataParallelLinks ?? []) {
    ev.push(`ring ${l.fromRank}->${l.toRank} +${l.extraMs.toFixed(1)} ms`);
    noise.push(`state ${w.inner.linkInfo(l.fromRank, l.toRank)}`);
  }
  const rb = (rec as unknown as { rebalance?: { slowRanks?: { rank: number; pp: number; ratio: number }[]; split?: number[]; currentSplit?: number[] } }).rebalance;
  if (rb) ev.push(`rebalance slowRanks ${JSON.stringify(rb.slowRanks)} split ${JSON.stringify(rb.currentSplit)} -> ${JSON.stringify(rb.split)}`);
  const topo = (s.decision as unknown as { topology?: { movedRanks?: number[]; migrationMs?: number; rings?: number[][] } }).topology;
  if (topo) ev.push(`topology: ranks changing stage ${JSON.stringify(topo.movedRanks)}, migrationMs ${topo.migrationMs}, rings ${JSON.stringify(topo.rings)}; gate costMs ${(rec.cost as { costMs?: number } | null)?.costMs}`);
  noise.push(...w.inner.eventsBetween(t - 25, s.effectiveIteration).slice(-14));
  for (const u of [t - 10, t - 5, t, s.effectiveIteration]) {
    const st = w.state.get(u);
    if (st && st.length) noise.push(`state at ${u}: ${st.join('; ')}`);
  }
  return { kind: rec.kind, iteration: t, effectiveIteration: s.effectiveIteration, reason: rec.reason, evidence: ev.join('; '), noise };
}

function taken(switches: ReplaySwitch[]): ReplaySwitch[] {
  return switches.filter((s) => s.record.kind !== 'initial');
}

interface RunResult {
  switches: ReplaySwitch[];
  watched: WatchedRanks;
  error: string | null;
  ms: number;
}

function run(fam: NoiseFamily, seed: number, iterations: number, config: PipemorphConfig, faults: Fault[], record = 0): RunResult {
  const inner = new IndependentRanks({ family: fam, seed, faults, jobId: `indep-${fam.name}-${seed}` });
  const watched = new WatchedRanks(inner, record);
  const t0 = Date.now();
  try {
    const r = driveRanks(watched, iterations, config, MS_PER_ITERATION);
    return { switches: r.switches, watched, error: null, ms: Date.now() - t0 };
  } catch (e) {
    return { switches: [], watched, error: (e as Error).stack?.split('\n').slice(0, 4).join(' | ') ?? String(e), ms: Date.now() - t0 };
  }
}

function kinds(switches: ReplaySwitch[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of taken(switches)) out[s.record.kind] = (out[s.record.kind] ?? 0) + 1;
  return out;
}

function firstAfter(switches: ReplaySwitch[], kindsWanted: string[], from: number): ReplaySwitch | undefined {
  return taken(switches).find((s) => kindsWanted.includes(s.record.kind) && s.record.iteration >= from);
}

function replayRecording(path: string): unknown {
  const cli = join(__dirname, '..', 'src', 'cli', 'main.js');
  try {
    const out = execFileSync(process.execPath, [cli, 'replay', '--recording', path, '--set', 'control.refinePlanner="none"', '--json'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    const parsed = JSON.parse(out) as { summary?: unknown };
    return parsed.summary ?? parsed;
  } catch (e) {
    const err = e as { status?: number; stdout?: string; stderr?: string; message: string };
    return { error: err.message.split('\n')[0], status: err.status, stderr: (err.stderr ?? '').slice(0, 1000), stdout: (err.stdout ?? '').slice(0, 500) };
  }
}

function main(): void {
  const config = loadConfig(process.env);
  config.control.refinePlanner = 'none';
  const families = FAMILIES.filter((f) => !ONLY || ONLY.includes(f.name));
  const rows: Record<string, unknown>[] = [];
  const recDir = mkdtempSync(join(tmpdir(), 'pipemorph-independent-'));
  const started = Date.now();
  const stamp = startStamp();
  for (const fam of families) {
    for (const seed of SEEDS) {
      const probe = new IndependentRanks({ family: fam, seed });
      const regProblems = registrationProblems(probe.registration());
      const pipeA = probe.rankAt(1, 1);
      const pipeB = probe.rankAt(1, 2);
      const ringFrom = probe.rankAt(0, 2);
      const ringTo = probe.rankAt(1, 2);
      const slowRank = probe.rankAt(2, 1);

      const healthy = run(fam, seed, HEALTHY, config, [], seed === SEEDS[0] && !process.env.INDEP_NO_CLI ? 600 : 0);
      // Placed by position at the onset: an earlier (false) re-map may have moved the registered nodes.
      const pipeFault: Fault = { kind: 'pipeline-link', a: pipeA, b: pipeB, extraMs: 30, from: ONSET, to: PIPE_HEAL, at: { dp: 1, pp: 1 } };
      const ringFault: Fault = { kind: 'ring-link', fromRank: ringFrom, toRank: ringTo, extraMs: 30, from: ONSET, to: 1e9, at: { dp: 0, pp: 2 } };
      const rankFault: Fault = { kind: 'slow-rank', rank: slowRank, factor: 1.5, from: ONSET, to: 1e9, at: { dp: 2, pp: 1 } };
      const pipe = run(fam, seed, 900, config, [pipeFault]);
      const ring = run(fam, seed, 800, config, [ringFault]);
      const rank = run(fam, seed, 900, config, [rankFault]);

      const hk = kinds(healthy.switches);
      const falseOnes = taken(healthy.switches).filter((s) => s.record.kind !== 'recovery');
      const pipeSwitch = firstAfter(pipe.switches, ['straggler', 'nic-failure'], ONSET);
      const pipeRecovery = pipeSwitch ? firstAfter(pipe.switches, ['recovery'], PIPE_HEAL) : undefined;
      const remap = firstAfter(ring.switches, ['remap'], ONSET);
      const rebalance = firstAfter(rank.switches, ['rebalance'], ONSET);
      const before = (r: RunResult) => taken(r.switches).filter((s) => s.record.iteration < ONSET && s.record.kind !== 'recovery');
      let cli: unknown = null;
      if (healthy.watched.recording) {
        const path = join(recDir, `${fam.name}-${seed}.jsonl`);
        writeFileSync(path, healthy.watched.recording.join('\n') + '\n');
        cli = replayRecording(path);
      }
      const row = {
        family: fam.name,
        seed,
        registrationProblems: regProblems,
        healthy: {
          iterations: HEALTHY,
          switchesByKind: hk,
          falseSwitches: (hk.straggler ?? 0) + (hk['nic-failure'] ?? 0),
          falseRemaps: hk.remap ?? 0,
          falseRebalances: hk.rebalance ?? 0,
          recoveries: hk.recovery ?? 0,
          first: falseOnes.slice(0, 6).map((s) => explain(healthy.watched, s)),
          recoveriesAt: taken(healthy.switches).filter((s) => s.record.kind === 'recovery').slice(0, 6).map((s) => `${s.record.iteration}: ${s.record.reason}`),
        },
        reactions: {
          pipelineSwitch: pipeSwitch ? pipeSwitch.effectiveIteration - ONSET : null,
          pipelineSwitchAt: pipeSwitch ? `${pipeSwitch.record.iteration}: ${pipeSwitch.record.reason}` : null,
          pipelineRecovery: pipeRecovery ? pipeRecovery.effectiveIteration - PIPE_HEAL : null,
          pipelineRecoveryAt: pipeRecovery ? `${pipeRecovery.record.iteration}: ${pipeRecovery.record.reason}` : null,
          pipelineRunKinds: kinds(pipe.switches),
          ringRemap: remap ? remap.effectiveIteration - ONSET : null,
          ringRemapAt: remap ? `${remap.record.iteration}: ${remap.record.reason}` : null,
          ringRunKinds: kinds(ring.switches),
          rankRebalance: rebalance ? rebalance.effectiveIteration - ONSET : null,
          rankRebalanceAt: rebalance ? `${rebalance.record.iteration}: ${rebalance.record.reason}` : null,
          rankRunKinds: kinds(rank.switches),
          runSwitches: [pipe, ring, rank].map((r) => taken(r.switches).map((s) => `${s.record.kind} ${s.record.iteration}->${s.effectiveIteration}`).join(', ')),
          faultsPlaced: [pipeFault, ringFault, rankFault].map((f) => JSON.stringify(f)),
          falseBeforeOnset: [pipe, ring, rank].flatMap((r) => before(r).map((s) => `${s.record.kind} at ${s.record.iteration}`)),
        },
        errors: [healthy, pipe, ring, rank].map((r) => r.error).filter((e) => e !== null),
        invalidReports: [healthy, pipe, ring, rank].reduce((a, r) => a + r.watched.invalid, 0),
        invalidExamples: [healthy, pipe, ring, rank].flatMap((r) => r.watched.invalidExamples).slice(0, 3),
        reports: [healthy, pipe, ring, rank].reduce((a, r) => a + r.watched.reportCount, 0),
        delivery: fam.name === 'report-delivery' ? healthy.watched.inner.delivery : undefined,
        cliReplay: cli,
        ms: [healthy, pipe, ring, rank].map((r) => r.ms),
      };
      rows.push(row);
      console.log(JSON.stringify(row));
    }
  }
  // Summary per family.
  const summary = families.map((fam) => {
    const rs = rows.filter((r) => r.family === fam.name) as unknown as { healthy: { falseSwitches: number; falseRemaps: number; falseRebalances: number; recoveries: number }; reactions: { pipelineSwitch: number | null; pipelineRecovery: number | null; ringRemap: number | null; rankRebalance: number | null }; errors: string[]; invalidReports: number }[];
    return {
      family: fam.name,
      falseSwitches: rs.map((r) => r.healthy.falseSwitches),
      falseRemaps: rs.map((r) => r.healthy.falseRemaps),
      falseRebalances: rs.map((r) => r.healthy.falseRebalances),
      recoveries: rs.map((r) => r.healthy.recoveries),
      pipelineSwitch: rs.map((r) => r.reactions.pipelineSwitch),
      pipelineRecovery: rs.map((r) => r.reactions.pipelineRecovery),
      ringRemap: rs.map((r) => r.reactions.ringRemap),
      rankRebalance: rs.map((r) => r.reactions.rankRebalance),
      errors: rs.reduce((a, r) => a + r.errors.length, 0),
      invalidReports: rs.reduce((a, r) => a + r.invalidReports, 0),
    };
  });
  console.log(JSON.stringify({ summary, seeds: SEEDS, healthyIterations: HEALTHY, elapsedMs: Date.now() - started }));
  const pad = (s: string, n: number) => s.padEnd(n);
  const list = (xs: (number | null)[]) => xs.map((x) => (x === null ? '-' : String(x))).join('/');
  console.log(`\n${pad('family', 22)} ${pad('false sw', 9)} ${pad('remaps', 7)} ${pad('rebal', 7)} ${pad('pipe->sw', 10)} ${pad('heal->rec', 10)} ${pad('ring->remap', 12)} ${pad('rank->rebal', 12)} err inv`);
  for (const s of summary)
    console.log(`${pad(s.family, 22)} ${pad(list(s.falseSwitches), 9)} ${pad(list(s.falseRemaps), 7)} ${pad(list(s.falseRebalances), 7)} ${pad(list(s.pipelineSwitch), 10)} ${pad(list(s.pipelineRecovery), 10)} ${pad(list(s.ringRemap), 12)} ${pad(list(s.rankRebalance), 12)} ${s.errors} ${s.invalidReports}`);
  if (process.env.INDEP_OUT) writeFileSync(process.env.INDEP_OUT, JSON.stringify({ rows, summary }, null, 1));
  else if (!ONLY && !process.env.INDEP_SEEDS && !process.env.INDEP_HEALTHY && !process.env.INDEP_NO_CLI) {
    const dir = join(__dirname, '..', ...(__dirname.includes(join('dist', 'bench')) ? ['..'] : []), 'bench', 'results');
    mkdirSync(dir, { recursive: true });
    const result = { bench: 'independent-sweep', seeds: SEEDS, healthyIterations: HEALTHY, onset: ONSET, healAfter: PIPE_HEAL - ONSET, msPerIteration: MS_PER_ITERATION, summary, rows, elapsedMs: Date.now() - started, stamp: stamp() };
    writeFileSync(join(dir, 'independent-sweep.json'), JSON.stringify(result, null, 1) + '\n');
  }
}

main();
