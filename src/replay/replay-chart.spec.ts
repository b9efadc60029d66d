import { DetectionSnapshot, PipelineLinkState } from '../core/detect/detection.type';
import { MAX_POINTS_PER_SERIES, ReplayChartCollector } from './replay-chart';

function link(dp: number, l: number, extraMs: number, straggler: boolean): PipelineLinkState {
  return { dp, link: l, upRank: l, downRank: l + 1, forwardExtraMs: extraMs, backwardExtraMs: 0, extraMs, baselineMs: 0.1, medianMs: 0.1 + extraMs, ewmaMs: 0.1 + extraMs, samples: 10, straggler, recovering: false, reason: null, error: null };
}

function snapshot(links: PipelineLinkState[]): DetectionSnapshot {
  return { pipelineLinks: links, dataParallelLinks: [], compute: [], stageTimes: { fMs: [], bMs: [], wMs: [] } };
}

describe('ReplayChartCollector', () => {
  it('keeps at most MAX_POINTS_PER_SERIES points per link over a long job, each the largest estimate of its iterations, and only links that straggled', () => {
    const c = new ReplayChartCollector();
    const n = 50_000;
    for (let t = 0; t < n; t++) {
      const slow = t >= 30_000 && t < 30_010;
      c.sample(t, snapshot([link(0, 0, t === 12_345 ? 77 : 0.5, false), link(0, 1, slow ? 40 : 0.2, slow)]));
    }
    const chart = c.chart('t', 's');
    expect(chart.series.map((s) => s.label)).toEqual(['dp 0 link 1-2']);
    const [s] = chart.series;
    expect(s.points.length).toBeLessThanOrEqual(MAX_POINTS_PER_SERIES);
    expect(s.points.length).toBeGreaterThan(MAX_POINTS_PER_SERIES / 2);
    expect(Math.max(...s.points.map((p) => p[1]))).toBe(40);
    expect(s.spans).toEqual([[30_000, 30_009]]);
    expect(chart.firstIteration).toBe(0);
    expect(chart.lastIteration).toBe(n - 1);
  });

  it('ends a span when the link leaves the snapshot (a re-map made other ranks neighbours), and keeps one still open to the end', () => {
    const c = new ReplayChartCollector();
    for (let t = 0; t < 10; t++) c.sample(t, snapshot(t < 5 ? [link(0, 0, 30, t >= 2), link(1, 0, 30, t >= 8)] : [link(1, 0, 30, t >= 8)]));
    const spans = Object.fromEntries(c.chart('t', 's').series.map((s) => [s.label, s.spans]));
    expect(spans).toEqual({ 'dp 0 link 0-1': [[2, 4]], 'dp 1 link 0-1': [[8, 9]] });
  });
});
