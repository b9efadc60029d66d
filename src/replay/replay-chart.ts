import { DetectionSnapshot } from '../core/detect/detection.type';
import { DecisionReplayChart, MAX_REPLAY_ROWS, ReplayDeclinedTick, ReplayLinkSeries, ReplaySwitchMarker } from '../core/render/decision-replay-svg';

/** Points kept per link at most: past it, neighbouring points merge (each keeps the larger estimate). */
export const MAX_POINTS_PER_SERIES = 2000;

/**
 * One link's estimate over the iterations in fixed memory: buckets of `width` iterations (1 at
 * first, doubled whenever more than MAX_POINTS_PER_SERIES would be kept), each the largest
 * estimate of its iterations, so a short spike survives downsampling.
 */
class DownsampledSeries {
  private width = 1;
  private readonly iterations: number[] = [];
  private readonly values: number[] = [];
  readonly spans: Array<[number, number]> = [];
  private openSince: number | null = null;

  constructor(readonly label: string, readonly kind: ReplayLinkSeries['kind'], private readonly origin: number) {}

  add(iteration: number, extraMs: number, straggler: boolean): void {
    const value = Number.isFinite(extraMs) ? Math.max(0, extraMs) : 0;
    const bucket = Math.floor((iteration - this.origin) / this.width);
    const n = this.iterations.length;
    if (n > 0 && Math.floor((this.iterations[n - 1] - this.origin) / this.width) === bucket) {
      if (value > this.values[n - 1]) this.values[n - 1] = value;
    } else {
      this.iterations.push(iteration);
      this.values.push(value);
      if (this.iterations.length > MAX_POINTS_PER_SERIES) this.coarsen();
    }
    if (straggler && this.openSince === null) this.openSince = iteration;
    if (!straggler && this.openSince !== null) {
      this.spans.push([this.openSince, iteration - 1]);
      this.openSince = null;
    }
  }

  private coarsen(): void {
    this.width *= 2;
    let k = 0;
    for (let i = 0; i < this.iterations.length; i++) {
      const bucket = Math.floor((this.iterations[i] - this.origin) / this.width);
      if (k > 0 && Math.floor((this.iterations[k - 1] - this.origin) / this.width) === bucket) {
        if (this.values[i] > this.values[k - 1]) this.values[k - 1] = this.values[i];
      } else {
        this.iterations[k] = this.iterations[i];
        this.values[k] = this.values[i];
        k++;
      }
    }
    this.iterations.length = k;
    this.values.length = k;
  }

  /** The link is not in the detector's snapshot any more (a re-map made other ranks neighbours): its span ends. */
  absent(iteration: number): void {
    if (this.openSince === null) return;
    this.spans.push([this.openSince, iteration - 1]);
    this.openSince = null;
  }

  /** Spans with the one still open closed at `last`. */
  closedSpans(last: number): Array<[number, number]> {
    return this.openSince === null ? this.spans.slice() : [...this.spans, [this.openSince, last]];
  }

  get straggled(): boolean {
    return this.spans.length > 0 || this.openSince !== null;
  }

  points(): Array<[number, number]> {
    return this.iterations.map((it, i) => [it, this.values[i]]);
  }

  peak(): number {
    let p = 0;
    for (const v of this.values) if (v > p) p = v;
    return p;
  }
}

/**
 * What `pipemorph replay --svg` draws, gathered as the replay runs: after each iteration every
 * link's estimated extra delay and straggler state from the detector's snapshot (pipeline links by
 * replica and link, data-parallel links by rank pair), the switches taken and the declined
 * decisions. Memory stays bounded per link whatever the job's length.
 */
export class ReplayChartCollector {
  private readonly series = new Map<string, DownsampledSeries>();
  private readonly switches: ReplaySwitchMarker[] = [];
  private readonly declined: ReplayDeclinedTick[] = [];
  private first: number | null = null;
  private last = 0;

  sample(iteration: number, snapshot: DetectionSnapshot): void {
    if (this.first === null) this.first = iteration;
    this.last = Math.max(this.last, iteration);
    const seen = new Set<DownsampledSeries>();
    const add = (s: DownsampledSeries, extraMs: number, straggler: boolean) => {
      s.add(iteration, extraMs, straggler);
      seen.add(s);
    };
    for (const l of snapshot.pipelineLinks) add(this.seriesFor(`p:${l.dp}:${l.link}`, `dp ${l.dp} link ${l.link}-${l.link + 1}`, 'pipeline'), l.extraMs, l.straggler);
    for (const l of snapshot.dataParallelLinks) add(this.seriesFor(`d:${l.fromRank}>${l.toRank}`, `ring rank ${l.fromRank} -> ${l.toRank}`, 'data-parallel'), l.extraMs, l.straggler);
    if (seen.size < this.series.size) for (const s of this.series.values()) if (!seen.has(s)) s.absent(iteration);
  }

  switched(marker: ReplaySwitchMarker): void {
    this.switches.push(marker);
  }

  declinedAt(iteration: number, kind: string): void {
    this.declined.push({ iteration, kind });
  }

  private seriesFor(key: string, label: string, kind: ReplayLinkSeries['kind']): DownsampledSeries {
    let s = this.series.get(key);
    if (!s) {
      s = new DownsampledSeries(label, kind, this.first ?? 0);
      this.series.set(key, s);
    }
    return s;
  }

  /** The chart: links that ever straggled (the MAX_REPLAY_ROWS with the largest peaks), pipeline links first. */
  chart(title: string, subtitle: string): DecisionReplayChart {
    const first = this.first ?? 0;
    const straggled = [...this.series.values()].filter((s) => s.straggled);
    const drawn = straggled
      .map((s) => ({ s, peak: s.peak() }))
      .sort((a, b) => b.peak - a.peak)
      .slice(0, MAX_REPLAY_ROWS)
      .map((e) => e.s);
    const order = (s: DownsampledSeries) => [...this.series.values()].indexOf(s);
    drawn.sort((a, b) => (a.kind === b.kind ? order(a) - order(b) : a.kind === 'pipeline' ? -1 : 1));
    return {
      title,
      subtitle,
      firstIteration: first,
      lastIteration: this.last,
      series: drawn.map((s) => ({ label: s.label, kind: s.kind, points: s.points(), spans: s.closedSpans(this.last) })),
      hiddenSeries: straggled.length - drawn.length,
      switches: this.switches.slice(),
      declined: this.declined.slice(),
    };
  }
}
