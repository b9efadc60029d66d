import { formatOp } from '../pipeline/op';
import { EngineRun } from './engine-run.type';
import { SimulationReport, Timeline } from './simulation-report.type';

/** Summarises an engine run: busy and idle time per stage, bubble rate, peaks, optionally the full timeline. */
export function summarizeRun(run: EngineRun, durations: Float64Array, withTimeline = false, copyOverhead?: Float64Array): SimulationReport {
  const { stages, microbatches, iterationMs } = run;
  const stageBusyMs: number[] = [];
  let busyTotal = 0;
  for (let s = 0; s < stages; s++) {
    const busy = microbatches * (durations[s * 3] + durations[s * 3 + 1] + durations[s * 3 + 2]) * (1 + (copyOverhead?.[s] ?? 0));
    stageBusyMs.push(busy);
    busyTotal += busy;
  }
  // Busy time is N (f + b + w) while the engine adds durations one by one: clamp the rounding.
  const report: SimulationReport = {
    iterationMs,
    bubbleRate: iterationMs > 0 ? Math.max(0, 1 - busyTotal / (stages * iterationMs)) : 0,
    stageBusyMs,
    stageIdleMs: stageBusyMs.map((busy) => Math.max(0, iterationMs - busy)),
    peakInflight: Array.from(run.peakInflight),
  };
  if (run.peakMemory) report.peakMemory = Array.from(run.peakMemory);
  if (withTimeline) report.timeline = timelineOf(run);
  return report;
}

export function timelineOf(run: EngineRun): Timeline {
  const opsPerStage = 3 * run.microbatches;
  const ops = [];
  for (let s = 0; s < run.stages; s++) {
    for (const code of run.order[s]) {
      const k = s * opsPerStage + code;
      ops.push({ stage: s, op: formatOp(code), startMs: run.start[k], endMs: run.end[k] });
    }
  }
  const m = run.messages;
  const messages = [];
  for (let k = 0; k < m.count; k++) {
    messages.push({
      link: m.link[k],
      direction: m.direction[k] === 0 ? ('forward' as const) : ('backward' as const),
      microbatch: m.microbatch[k],
      sentMs: m.sentMs[k],
      transferStartMs: m.transferStartMs[k],
      arriveMs: m.arriveMs[k],
    });
  }
  return { ops, messages };
}
