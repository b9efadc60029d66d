import { writeFileSync } from 'node:fs';
import { InputError } from '../../core/input-error';
import { renderDecisionReplaySvg } from '../../core/render/decision-replay-svg';
import { openJsonlRecording, openRedisRecording, Recording } from '../../replay/recording-sources';
import { ReplayChartCollector } from '../../replay/replay-chart';
import { RecordingReplay, ReplayedDecision, ReplayResult } from '../../replay/replay-recording';
import { expectOnly, stringOption } from '../cli-args';
import { loadReplayConfig, solverFor } from '../replay-config';

export const REPLAY_OPTIONS = ['recording', 'redis', 'job', 'config', 'set', 'svg', 'json'];

function evidenceText(d: ReplayedDecision): string {
  const parts = [
    ...d.evidence.links.map((l) => `dp ${l.dp} link ${l.link}-${l.link + 1} ${l.nicFailure ? 'NIC failure' : `+${l.extraMs.toFixed(1)} ms`}`),
    ...d.evidence.dataParallelLinks.map((l) => `ring ${l.fromRank}->${l.toRank} +${l.extraMs.toFixed(1)} ms`),
  ];
  return parts.length > 0 ? parts.join(', ') : '-';
}

function iterationText(d: ReplayedDecision): string {
  const at = (it: number) => (it < 0 ? 'start' : String(it));
  return d.repeats > 1 && d.firstIteration !== d.iteration ? `${at(d.firstIteration)}-${at(d.iteration)}` : at(d.iteration);
}

function counts(byKey: Record<string, number>): string {
  const entries = Object.entries(byKey).sort((a, b) => b[1] - a[1]);
  return entries.map(([k, n]) => `${k}: ${n}`).join('; ');
}

/** The text output: one line per decision (a run of the same declined decision is one), then the summary. */
export function formatReplay(result: ReplayResult, header: string[], svgPath?: string): string {
  const rows = result.decisions.map((d) => [
    iterationText(d),
    d.kind,
    d.repeats > 1 ? `${d.verdict} x${d.repeats}` : d.verdict,
    d.scheduleVersion !== null ? `v${d.scheduleVersion}${d.effectiveIteration !== null ? ` from ${d.effectiveIteration}` : ''}` : '-',
    evidenceText(d),
    d.reason,
  ]);
  const head = ['iteration', 'kind', 'verdict', 'version', 'stragglers', 'reason'];
  const widths = head.slice(0, -1).map((h, k) => Math.max(h.length, ...rows.map((r) => r[k].length)));
  const line = (cells: string[]) => cells.map((c, k) => (k < widths.length ? c.padEnd(widths[k]) : c)).join('  ').trimEnd();
  const s = result.summary;
  const out = [...header, '', line(head), ...rows.map(line), ''];
  const its = s.iterations.count > 0 ? ` from ${s.iterations.count} iterations (${s.iterations.first}-${s.iterations.last})` : '';
  out.push(`reports: ${s.reports} taken${its}; ${s.duplicates} duplicates, ${s.staleLayout} of an older layout, ${s.late} late; ${s.skipped} acks and markers skipped`);
  out.push(`rejected: ${s.rejected.total}${s.rejected.total > 0 ? ` (${counts(s.rejected.byReason)})` : ''}`);
  for (const r of s.rejected.first) out.push(`  ${r.where}: ${r.reason}`);
  if (s.rejected.total > s.rejected.first.length) out.push(`  ... ${s.rejected.total - s.rejected.first.length} more`);
  const kinds = Object.keys(s.switchesByKind).length > 0 ? ` (${counts(s.switchesByKind)})` : '';
  out.push(`switches: ${s.switches} taken besides the first plan${kinds}; declined: ${s.declined} (${s.declinedRuns} in the list above)`);
  if (svgPath !== undefined) out.push(`svg: ${svgPath}`);
  return out.join('\n') + '\n';
}

/**
 * `replay`: a recorded job (a JSONL recording, or the job's streams in Redis) through the daemon's
 * detection and decisions in process, with the daemon config of --config and --set; prints the
 * decisions and a summary (or one JSON object with --json), and with --svg draws the link
 * estimates, straggler spans, switches and declined decisions.
 */
export async function replayCommand(options: Map<string, string | true>, lists: Map<string, string[]>): Promise<string> {
  expectOnly(options, REPLAY_OPTIONS, 'replay');
  const file = stringOption(options, 'recording');
  const url = stringOption(options, 'redis');
  const jobId = stringOption(options, 'job');
  if ((file === undefined) === (url === undefined)) throw new InputError('replay needs exactly one of --recording file.jsonl or --redis redis://host:port --job <id>');
  if (url !== undefined && jobId === undefined) throw new InputError('--redis needs --job <id>');
  if (file !== undefined && jobId !== undefined) throw new InputError('--job goes with --redis (a recording names its job)');
  const configPath = stringOption(options, 'config');
  const sets = lists.get('set') ?? [];
  const config = loadReplayConfig(configPath, sets);
  const svgPath = stringOption(options, 'svg');
  const solver = await solverFor(config);
  const recording: Recording = file !== undefined ? await openJsonlRecording(file) : await openRedisRecording(url!, jobId!);
  const chart = svgPath !== undefined ? new ReplayChartCollector() : undefined;
  const replay = new RecordingReplay(recording.registration, config, solver, chart);
  try {
    for await (const message of recording.messages) replay.take(message);
  } finally {
    await recording.close();
  }
  const result = replay.finish();
  const reg = recording.registration;
  const job = `${reg.jobId} (${reg.stages} stages x ${reg.microbatches} microbatches, dp ${reg.dp})`;
  const configText = `config ${configPath ?? 'config/default.json'}${sets.map((s) => ` --set ${s}`).join('')}`;
  if (chart && svgPath !== undefined) {
    const svg = renderDecisionReplaySvg(chart.chart(`pipemorph replay: ${job}`, `${recording.source} · ${configText} · ${result.summary.switches} switch${result.summary.switches === 1 ? '' : 'es'} taken, ${result.summary.declined} declined`));
    try {
      writeFileSync(svgPath, svg);
    } catch (error) {
      throw new InputError(`cannot write ${svgPath}: ${(error as Error).message}`);
    }
  }
  if (options.has('json')) {
    return JSON.stringify({
      job: { jobId: reg.jobId, stages: reg.stages, microbatches: reg.microbatches, dp: reg.dp },
      source: recording.source,
      config: { file: configPath ?? null, set: sets },
      decisions: result.decisions,
      summary: { ...result.summary, ...(svgPath !== undefined ? { svg: svgPath } : {}) },
    }) + '\n';
  }
  return formatReplay(result, [`replay of ${job} from ${recording.source}`, configText], svgPath);
}
