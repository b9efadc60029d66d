import { DEFAULT_TRANSPORT_CONFIG, TransportConfig } from '../../core/control/control-config.type';
import { allReduceOf } from '../../core/control/all-reduce-pricing';
import { JobControlInput, PipelineGroupPlan } from '../../core/control/control-input.type';
import { modelOf, replicaDelays, stageReadyMs } from '../../core/control/pipeline-plans';
import { inputUnderLayout, RankLayout, sameLayout } from '../../core/control/layout-input';
import { linkTransportOf } from '../../core/control/link-transport';
import { DetectionSnapshot } from '../../core/detect/job-detector';
import { simulateSchedule } from '../../core/engine/simulator';
import { parseSchedule } from '../../core/pipeline/schedule';
import { HeatRow, JobPageStraggler, JobPageView } from '../../core/render/job-page.type';
import { TimelinePanel } from '../../core/render/timeline-panel.type';
import { renderTimelineSvg } from '../../core/render/timeline-svg';
import { PublishedSchedule } from '../../protocol/protocol-v1.type';
import { JobRuntime } from '../jobs/job-runtime';

/** Links the page's heat strip shows at most (stragglers and the slowest first). */
const MAX_HEAT_ROWS = 32;

function routeOf(job: JobRuntime, dp: number, link: number): string {
  const up = job.rankAt.get(`${dp},${link}`);
  const down = job.rankAt.get(`${dp},${link + 1}`);
  return up !== undefined && down !== undefined ? ` (rank ${up} → ${down})` : '';
}

/** The layout a published schedule runs: its topology, else the registration's (rings in dp order). */
function layoutOf(job: JobRuntime, schedule: PublishedSchedule): RankLayout {
  const S = job.spec.stages;
  const D = job.spec.dp;
  const reporting = new Set(job.spec.reportingPositions.map((r) => r.rank));
  const rankAt = new Array<number>(S * D).fill(-1);
  for (const { rank, dp, pp } of schedule.topology?.ranks ?? job.spec.reportingPositions) if (reporting.has(rank) && dp < D && pp < S) rankAt[dp * S + pp] = rank;
  return { rankAt, rings: schedule.topology?.rings.map((r) => r.slice()) ?? Array.from({ length: S }, () => Array.from({ length: D }, (_, d) => d)) };
}

function plansOf(schedule: PublishedSchedule, input: JobControlInput): PipelineGroupPlan[] {
  return schedule.pipelines.map((p) => ({ dpReplicas: p.dpReplicas, warmup: p.warmup, schedule: parseSchedule(p.stages, input.stages, input.microbatches) }));
}

/**
 * The before/after timeline of a job: the schedule in force and the one it replaced, both
 * simulated under the current link estimates (baseline + extra) of the replica with the largest
 * extra delay, on one time scale, each with its own delegation priced by the ranks' transport
 * (what the daemon predicts with). Each panel runs under its own layout: across a re-map the
 * layout the detector does not measure gets the delays known between its ranks (inputUnderLayout:
 * measured, the slow links the re-map answered, the slow locality boundary). A job with a
 * data-parallel all-reduce draws each stage's ring after its last op, as the predictions price it.
 * Null before the first schedule.
 */
export function jobTimelineSvg(job: JobRuntime, snapshot: DetectionSnapshot = job.detector.snapshot(), transport: TransportConfig = DEFAULT_TRANSPORT_CONFIG): string | null {
  const current = job.history.current ?? job.committed;
  if (!current) return null;
  const measured = job.controlInput(snapshot);
  const replaced = job.history.replaced;
  // The slow links the switch to the schedule in force answered: evidence for a layout no longer measured.
  const evidence = current.reason.links.map(({ fromRank, toRank, extraMs }) => ({ fromRank, toRank, extraMs }));
  const inputFor = (schedule: PublishedSchedule): JobControlInput => {
    const layout = layoutOf(job, schedule);
    const t = measured.topology;
    if (!t || layout.rankAt.includes(-1) || sameLayout(layout, t)) return measured;
    return inputUnderLayout(measured, layout, evidence);
  };
  const inForce = inputFor(current);
  const before = replaced ? inputFor(replaced) : null;
  const relaidOut = before !== null && before !== inForce;
  // The replica drawn: the one with the largest extra delay under the layout in force.
  const { now, healthy } = replicaDelays(inForce);
  let dp = 0;
  let worstExtra = -1;
  now.forEach((delays, d) => {
    const extra = delays.reduce((sum, ms, i) => sum + ms - healthy[d][i], 0);
    if (extra > worstExtra + 1e-9) [dp, worstExtra] = [d, extra];
  });
  const panelOf = (label: string, schedule: PublishedSchedule, input: JobControlInput): TimelinePanel | null => {
    const group = schedule.pipelines.find((p) => p.dpReplicas.includes(dp)) ?? schedule.pipelines[0];
    if (!group) return null;
    const delays = replicaDelays(input).now;
    const model = modelOf(input, delays[dp]);
    let shortest = Number.POSITIVE_INFINITY;
    for (const d of model.durations) if (d > 0) shortest = Math.min(shortest, d);
    const slow = input.links.filter((l) => l.dp === dp && (l.straggler || l.extraMs >= 0.25 * shortest));
    const linkNotes = Object.fromEntries(slow.map((l) => [l.link, `+${l.extraMs.toFixed(1)} ms`]));
    const order = parseSchedule(group.stages, input.stages, input.microbatches);
    const priced = { ...model, transport: linkTransportOf(input, dp, schedule.delegation, transport) };
    const panel: TimelinePanel = { title: `${label}: v${schedule.version} (${schedule.reason.kind}, warm-up ${group.warmup.join(',')})`, run: simulateSchedule(priced, order), slowLinks: slow.map((l) => l.link), linkNotes };
    const rings = allReduceOf(input);
    if (!rings) return panel;
    // Each stage's ring starts once every replica of it is done (the slowest may not be the one drawn).
    const ready = stageReadyMs(input, plansOf(schedule, input), delays, schedule.delegation, transport);
    const allReduce = rings.ms.map((ms, p) => ({
      startMs: ready[p],
      endMs: ready[p] + ms,
      slow: rings.slow[p],
      ...(rings.worstExtraMs[p] > 0 && rings.slow[p] ? { note: `ring link +${rings.worstExtraMs[p].toFixed(1)} ms` } : {}),
    }));
    return { ...panel, allReduce };
  };
  const panels = [replaced && before ? panelOf('before', replaced, before) : null, panelOf(replaced ? 'in force' : 'in force (no earlier version known)', current, inForce)].filter((p): p is TimelinePanel => p !== null);
  const under = relaidOut ? 'each under its own layout and the current link estimates' : 'simulated under the current link estimates';
  const title = `job ${job.jobId}, replica dp ${dp}: ${replaced ? `v${replaced.version} → ` : ''}v${current.version}, ${under}${allReduceOf(inForce) ? ', all-reduce included' : ''}`;
  return renderTimelineSvg(panels, { title });
}

/** Everything the job page shows, from the runtime's detector snapshot and bounded history. */
export function jobPageView(job: JobRuntime, transport: TransportConfig = DEFAULT_TRANSPORT_CONFIG): JobPageView {
  const snapshot = job.detector.snapshot();
  const S = job.spec.stages;
  const stragglers: JobPageStraggler[] = [
    ...snapshot.pipelineLinks.filter((l) => l.straggler).map((l) => ({
      kind: 'pipeline' as const,
      where: `dp ${l.dp} link ${l.link}-${l.link + 1}${routeOf(job, l.dp, l.link)}`,
      extraMs: l.extraMs,
      note: [l.reason === 'eq1' ? 'breaks Eq. 1 for the schedule in force' : l.reason === 'delegation' ? 'above the delegation threshold' : l.reason, l.error].filter(Boolean).join(', '),
    })),
    ...snapshot.dataParallelLinks.filter((l) => l.straggler).map((l) => ({
      kind: 'data-parallel' as const,
      where: `stage ${l.pp} ring link rank ${l.fromRank} → ${l.toRank}`,
      extraMs: l.extraMs,
      note: `${l.ratio.toFixed(2)}x its reference${l.error ? ', ' + l.error : ''}`,
    })),
    ...snapshot.compute.filter((c) => c.straggler).map((c) => ({
      kind: 'compute' as const,
      where: `rank ${c.rank} (dp ${c.dp}, stage ${c.pp})`,
      extraMs: c.fMs + c.bMs + c.wMs - c.referenceMs,
      note: `${c.ratio.toFixed(2)}x its stage's reference`,
    })),
  ];

  const recent = job.history.recent();
  const stateOf = new Map(snapshot.pipelineLinks.map((l) => [`${l.dp},${l.link}`, l]));
  let rows: Array<HeatRow & { index: number; worst: number }> = [];
  recent.delays.forEach((values, index) => {
    if (!values.some((v) => Number.isFinite(v))) return;
    const dp = Math.floor(index / (S - 1));
    const link = index % (S - 1);
    const state = stateOf.get(`${dp},${link}`);
    const baselineMs = state?.baselineMs ?? Number.NaN;
    const worst = Math.max(...values.filter((v) => Number.isFinite(v))) - (Number.isFinite(baselineMs) ? baselineMs : 0);
    rows.push({ index, worst, label: `dp ${dp} link ${link}-${link + 1}${routeOf(job, dp, link)}`, straggler: state?.straggler ?? false, baselineMs, values });
  });
  const total = rows.length;
  if (rows.length > MAX_HEAT_ROWS) rows = [...rows].sort((a, b) => Number(b.straggler) - Number(a.straggler) || b.worst - a.worst).slice(0, MAX_HEAT_ROWS).sort((a, b) => a.index - b.index);

  const inForce = job.committed?.version ?? null;
  const open = job.switching.handshake;
  return {
    jobId: job.jobId,
    stages: S,
    microbatches: job.spec.microbatches,
    dp: job.spec.dp,
    iteration: job.progress.maxIteration,
    iterationMs: Number.isFinite(job.progress.iterationMs) ? job.progress.iterationMs : null,
    scheduleVersion: inForce,
    handshake: open ? `v${open.schedule.version} prepared for iteration ${open.schedule.effectiveIteration}, ${open.acked.size}/${job.reporting.length} ranks acknowledged` : null,
    stragglers,
    heat: { iterations: recent.iterations, iterationMs: recent.iterationMs, rows: rows.map(({ label, straggler, baselineMs, values }) => ({ label, straggler, baselineMs, values })), hiddenRows: total - rows.length, droppedSamples: job.history.dropped },
    versions: job.history.versions.map((v) => ({
      version: v.version,
      fromIteration: v.effectiveIteration,
      reason: v.reason.kind,
      detail: v.reason.detail,
      predictedMs: v.predictedMs,
      previousPredictedMs: v.previousPredictedMs,
      measuredMs: v.measuredCount > 0 ? v.measuredSumMs / v.measuredCount : null,
      inForce: v.version === inForce,
    })),
    timelineSvg: jobTimelineSvg(job, snapshot, transport),
    links: { timeline: `/jobs/${encodeURIComponent(job.jobId)}/timeline.svg`, json: `/jobs/${encodeURIComponent(job.jobId)}` },
  };
}
