import { escapeXml } from './escape-xml';
import { px } from './timeline-svg';

/** One link's estimated extra delay over a replayed job (`pipemorph replay --svg`). */
export interface ReplayLinkSeries {
  /** e.g. "dp 3 link 2-3" or "ring rank 21 -> 29". */
  label: string;
  kind: 'pipeline' | 'data-parallel';
  /** [iteration, extra ms] in iteration order; a downsampled point is the largest estimate of its iterations. */
  points: Array<[number, number]>;
  /** Iterations (first, last) during which the detector held the link as a straggler. */
  spans: Array<[number, number]>;
}

export interface ReplaySwitchMarker {
  /** The iteration the switch was decided at (-1: before the first report). */
  iteration: number;
  effectiveIteration: number;
  kind: string;
  version: number;
  reason: string;
}

export interface ReplayDeclinedTick {
  iteration: number;
  kind: string;
}

export interface DecisionReplayChart {
  title: string;
  /** One line under the title (the config the replay ran with). */
  subtitle: string;
  firstIteration: number;
  lastIteration: number;
  series: ReplayLinkSeries[];
  /** Links that straggled but are not drawn (more than the picture holds). */
  hiddenSeries: number;
  switches: ReplaySwitchMarker[];
  declined: ReplayDeclinedTick[];
}

/** At most this many rows: the links with the largest peaks. */
export const MAX_REPLAY_ROWS = 24;

const LEFT = 200;
const PLOT = 1000;
const RIGHT = 40;
const ROW = 64;
const ROW_GAP = 12;
const FONT = 'font-family="Helvetica,Arial,sans-serif"';
const KIND_COLORS: Record<string, string> = { initial: '#7b8794', straggler: '#c81e1e', recovery: '#2e9e78', 'nic-failure': '#8e1a9e', remap: '#1f5fbf' };
const LINE_COLOR = { pipeline: '#1f4e8c', 'data-parallel': '#b45309' } as const;

function niceStep(span: number, target: number): number {
  const raw = span / target;
  const pow = 10 ** Math.floor(Math.log10(raw > 0 ? raw : 1));
  for (const m of [1, 2, 5, 10]) if (m * pow >= raw) return m * pow;
  return 10 * pow;
}

function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const step = niceStep(v, 4);
  return Math.ceil(v / step) * step;
}

function formatMs(ms: number): string {
  return ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2);
}

/** Axis labels of a row whose scale ends at `max`: as many decimals as the scale needs, the same for each. */
function tickLabel(ms: number, max: number): string {
  return ms.toFixed(max >= 20 ? 0 : max >= 2 ? 1 : 2);
}

/** Pixel intervals [x0, x1] merged where they touch: at most one per pixel column, whatever the job's length. */
function mergePixels(intervals: Array<[number, number]>): Array<[number, number]> {
  const sorted = intervals.slice().sort((a, b) => a[0] - b[0]);
  const out: Array<[number, number]> = [];
  for (const [a, b] of sorted) {
    const last = out[out.length - 1];
    if (last && a <= last[1] + 1) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

/**
 * A replayed job's decisions over its link estimates (pure, deterministic, escaped): one row per
 * link that straggled, its estimated extra delay over the iterations as a line with the spans the
 * detector held it as a straggler shaded; every taken switch a vertical marker across the rows,
 * labelled with its kind and version where there is room (a tooltip always); declined decisions as
 * ticks on a strip under the rows; iteration axis under, ms per row. Markers and ticks that fall in
 * one pixel column are drawn once, so the picture's size is bounded by its width, not the job's length.
 */
export function renderDecisionReplaySvg(chart: DecisionReplayChart): string {
  const rows = chart.series.length;
  const first = Math.min(chart.firstIteration, chart.lastIteration);
  const last = Math.max(chart.lastIteration, first + 1);
  const x = (it: number) => LEFT + ((Math.max(first, Math.min(last, it)) - first) / (last - first)) * PLOT;
  const labelsTop = 60;
  const labelRows = 3;
  const rowsTop = labelsTop + labelRows * 13 + 8;
  const bodyRows = Math.max(1, rows);
  const declinedTop = rowsTop + bodyRows * (ROW + ROW_GAP);
  const declinedHeight = 16;
  const axisY = declinedTop + declinedHeight + 6;
  const width = LEFT + PLOT + RIGHT;
  const legendY = axisY + 50;
  const height = legendY + 12;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" class="decision-replay" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ${FONT}>`);
  out.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(`<text class="title" x="12" y="22" font-size="15" font-weight="bold" fill="#1f2933">${escapeXml(chart.title)}</text>`);
  out.push(`<text class="subtitle" x="12" y="40" font-size="11" fill="#52606d">${escapeXml(chart.subtitle)}</text>`);

  // Rows: one link each, its own ms scale.
  if (rows === 0) {
    out.push(`<text class="no-stragglers" x="${LEFT + PLOT / 2}" y="${rowsTop + ROW / 2}" font-size="13" text-anchor="middle" fill="#52606d">no link straggled</text>`);
  }
  chart.series.forEach((s, r) => {
    const top = rowsTop + r * (ROW + ROW_GAP);
    let peak = 0;
    for (const [, ms] of s.points) if (ms > peak) peak = ms;
    const yMax = niceMax(peak);
    const y = (ms: number) => top + ROW - (Math.max(0, Math.min(yMax, ms)) / yMax) * ROW;
    out.push(`<g class="link-row" data-kind="${s.kind}" data-row="${r}">`);
    out.push(`<rect x="${LEFT}" y="${top}" width="${PLOT}" height="${ROW}" fill="#f5f7fa" stroke="#cbd2d9" stroke-width="0.5"/>`);
    const spans = mergePixels(s.spans.map(([a, b]) => [Math.floor(x(a)), Math.ceil(x(b + 1))]));
    for (const [a, b] of spans) out.push(`<rect class="straggler-span" x="${a}" y="${top}" width="${Math.max(1, b - a)}" height="${ROW}" fill="#fbd5d5" opacity="0.8"/>`);
    const spanText = s.spans.length === 1 ? `straggler iterations ${s.spans[0][0]}-${s.spans[0][1]}` : `${s.spans.length} straggler spans`;
    out.push(`<title>${escapeXml(`${s.label}: peak +${formatMs(peak)} ms, ${spanText}`)}</title>`);
    for (const ms of [0, yMax / 2, yMax]) {
      out.push(`<line x1="${LEFT - 4}" x2="${LEFT}" y1="${px(y(ms))}" y2="${px(y(ms))}" stroke="#7b8794" stroke-width="1"/>`);
      out.push(`<text x="${LEFT - 6}" y="${px(y(ms) + 3.5)}" font-size="9" text-anchor="end" fill="#616e7c">${escapeXml(tickLabel(ms, yMax))}</text>`);
    }
    out.push(`<text class="row-label" x="${LEFT - 34}" y="${top + ROW / 2 - 2}" font-size="11" text-anchor="end" fill="#1f2933" font-weight="bold">${escapeXml(s.label)}</text>`);
    out.push(`<text x="${LEFT - 34}" y="${top + ROW / 2 + 12}" font-size="9" text-anchor="end" fill="#616e7c">${escapeXml(`+ms, peak ${formatMs(peak)}`)}</text>`);
    if (s.points.length > 0) {
      const pts = s.points.map(([it, ms]) => `${px(x(it))},${px(y(ms))}`).join(' ');
      out.push(`<polyline class="estimate" points="${pts}" fill="none" stroke="${LINE_COLOR[s.kind]}" stroke-width="1.2" stroke-linejoin="round"/>`);
    }
    out.push('</g>');
  });
  if (chart.hiddenSeries > 0) {
    out.push(`<text class="hidden-rows" x="${LEFT}" y="${declinedTop - 2}" font-size="10" fill="#52606d">${escapeXml(`${chart.hiddenSeries} more straggling links not drawn (the ${rows} with the largest peaks are)`)}</text>`);
  }

  // Declined decisions: ticks on a strip under the rows, one per pixel column.
  out.push(`<g class="declined">`);
  out.push(`<text x="${LEFT - 6}" y="${declinedTop + 11}" font-size="10" text-anchor="end" fill="#52606d">declined</text>`);
  out.push(`<rect x="${LEFT}" y="${declinedTop}" width="${PLOT}" height="${declinedHeight}" fill="#f5f7fa"/>`);
  const ticks = new Map<number, ReplayDeclinedTick[]>();
  for (const d of chart.declined) {
    const col = Math.round(x(d.iteration));
    const list = ticks.get(col);
    if (list) list.push(d);
    else ticks.set(col, [d]);
  }
  for (const [col, list] of [...ticks].sort((a, b) => a[0] - b[0])) {
    const from = Math.min(...list.map((d) => d.iteration));
    const to = Math.max(...list.map((d) => d.iteration));
    const kinds = [...new Set(list.map((d) => d.kind))].join(', ');
    const tip = list.length === 1 ? `declined ${kinds} at iteration ${from}` : `${list.length} declined (${kinds}) at iterations ${from}-${to}`;
    out.push(`<line class="declined-tick" x1="${col}" x2="${col}" y1="${declinedTop + 3}" y2="${declinedTop + declinedHeight - 3}" stroke="#e8a33d" stroke-width="1.5"><title>${escapeXml(tip)}</title></line>`);
  }
  out.push('</g>');

  // Taken switches: one marker per pixel column, labelled where the label fits.
  out.push(`<g class="switches">`);
  const columns = new Map<number, ReplaySwitchMarker[]>();
  for (const s of chart.switches) {
    const col = Math.round(x(s.iteration));
    const list = columns.get(col);
    if (list) list.push(s);
    else columns.set(col, [s]);
  }
  const lastLabelAt = new Array<number>(labelRows).fill(-Infinity);
  for (const [col, list] of [...columns].sort((a, b) => a[0] - b[0])) {
    const s = list[list.length - 1];
    const color = KIND_COLORS[s.kind] ?? '#3e4c59';
    const tip = list.map((m) => `v${m.version} ${m.kind} decided at ${m.iteration < 0 ? 'the start' : `iteration ${m.iteration}`}, in force from iteration ${m.effectiveIteration}: ${m.reason}`).join('\n');
    const label = list.length === 1 ? `${s.kind} v${s.version}` : `${list.length} switches v${list[0].version}-v${s.version}`;
    out.push(`<g class="switch-marker" data-kind="${escapeXml(s.kind)}" data-version="${s.version}" data-iteration="${s.iteration}">`);
    out.push(`<title>${escapeXml(tip)}</title>`);
    out.push(`<line x1="${col}" x2="${col}" y1="${rowsTop - 4}" y2="${declinedTop + declinedHeight}" stroke="${color}" stroke-width="1.5" stroke-dasharray="${s.kind === 'initial' ? '2,2' : '5,2'}"/>`);
    const slot = lastLabelAt.findIndex((at) => col - at >= 110);
    if (slot >= 0) {
      lastLabelAt[slot] = col;
      out.push(`<text class="switch-label" x="${col + 3}" y="${labelsTop + slot * 13}" font-size="10" fill="${color}">${escapeXml(label)}</text>`);
    }
    out.push('</g>');
  }
  out.push('</g>');

  // Iteration axis.
  out.push(`<g class="axis" font-size="10" fill="#616e7c">`);
  out.push(`<line x1="${LEFT}" x2="${LEFT + PLOT}" y1="${axisY}" y2="${axisY}" stroke="#7b8794" stroke-width="1"/>`);
  const step = niceStep(last - first, 10);
  for (let it = Math.ceil(first / step) * step; it <= last; it += step) {
    out.push(`<line x1="${px(x(it))}" x2="${px(x(it))}" y1="${axisY}" y2="${axisY + 4}" stroke="#7b8794" stroke-width="1"/>`);
    out.push(`<text x="${px(x(it))}" y="${axisY + 15}" text-anchor="middle">${it}</text>`);
  }
  out.push(`<text x="${LEFT + PLOT / 2}" y="${axisY + 31}" text-anchor="middle" font-size="11">iteration</text>`);
  out.push(`<text x="${LEFT - 6}" y="${rowsTop - 6}" text-anchor="end" font-size="10">extra ms</text>`);
  out.push('</g>');
  // Legend, under the axis.
  const legend: Array<[string, string, string]> = [
    ['span', '#fbd5d5', 'held as a straggler'],
    ['line', LINE_COLOR.pipeline, 'estimated extra delay of a pipeline link'],
    ['line', LINE_COLOR['data-parallel'], 'of a data-parallel link'],
    ['dash', KIND_COLORS.straggler, 'switch taken (kind, version)'],
    ['tick', '#e8a33d', 'declined'],
  ];
  const items: string[] = [];
  let lx = LEFT;
  for (const [what, color, text] of legend) {
    const mark =
      what === 'span'
        ? `<rect x="${px(lx)}" y="${legendY - 8}" width="12" height="9" fill="${color}"/>`
        : what === 'tick'
          ? `<line x1="${px(lx + 6)}" x2="${px(lx + 6)}" y1="${legendY - 9}" y2="${legendY + 1}" stroke="${color}" stroke-width="1.5"/>`
          : `<line x1="${px(lx)}" x2="${px(lx + 12)}" y1="${legendY - 4}" y2="${legendY - 4}" stroke="${color}" stroke-width="2"${what === 'dash' ? ' stroke-dasharray="5,2"' : ''}/>`;
    items.push(`${mark}<text x="${px(lx + 16)}" y="${legendY}" font-size="10" fill="#3e4c59">${escapeXml(text)}</text>`);
    lx += 16 + text.length * 5.6 + 18;
  }
  out.push(`<g class="legend">${items.join('')}</g>`);
  out.push('</svg>');
  return out.join('\n');
}
