import { OP_KINDS, opKind, opMicrobatch } from '../pipeline/op';
import { AsciiSink } from './ascii-sink';
import { escapeXml } from './escape-xml';
import { TimelineAllReduce, TimelineOptions, TimelinePanel, TimelineRun } from './timeline-panel.type';

/** Fill per op kind (F, B, W): the colours the ZeroBubble papers use, blue / green / purple. */
export const OP_COLORS: readonly string[] = ['#4f7fd6', '#2e9e78', '#8e63c4'];
const MESSAGE_COLOR = '#d6333a';
/** Fill of a stage's ring all-reduce, healthy and with a slow ring link. */
const ALL_REDUCE_COLOR = '#f0b429';
const SLOW_ALL_REDUCE_COLOR = MESSAGE_COLOR;
const LEFT = 78;
/**
 * Above this many ops a panel draws each stage's blocks as one path per kind (one sub-path per op,
 * in run order) instead of one <rect> per op: at that size a block is about a pixel wide, and the
 * picture stays small and fast (64 stages x 512 microbatches: see bench/render.bench.ts).
 */
export const COMPACT_ABOVE_OPS = 20000;
/** Path builders for F, B and W, reused row after row (rendering is synchronous, so sharing is safe). */
const SINKS = [new AsciiSink(), new AsciiSink(), new AsciiSink()];
const RIGHT = 150;
const FONT = 'font-family="Helvetica,Arial,sans-serif"';

/** Geometry of a picture, exported so tests can map times back to pixels. */
export interface TimelineLayout {
  left: number;
  /** px per ms, shared by every panel so before and after compare at a glance. */
  scale: number;
  rowHeight: number;
  rowGap: number;
  /** Top y of stage 0's row, per panel. */
  panelTops: number[];
  width: number;
  height: number;
}

/** Rounds to 1/100 px: deterministic text, and a much smaller file than full doubles. */
export function px(value: number): string {
  const r = Math.round(value * 100) / 100;
  return String(r === 0 ? 0 : r);
}

/** Idle stage-time over S * iteration time, from the blocks themselves (works for measured times as well as simulated ones). */
export function bubbleRateOf(run: TimelineRun): number {
  if (!(run.iterationMs > 0)) return 0;
  let busy = 0;
  const per = 3 * run.microbatches;
  for (let s = 0; s < run.stages; s++) for (const code of run.order[s]) busy += run.end[s * per + code] - run.start[s * per + code];
  return Math.max(0, 1 - busy / (run.stages * run.iterationMs));
}

/** When the panel's iteration ends: its last op, or its last ring all-reduce when it draws them. */
export function panelEndMs(panel: TimelinePanel): number {
  let end = panel.run.iterationMs;
  for (const ring of panel.allReduce ?? []) if (ring.endMs > end) end = ring.endMs;
  return end;
}

function rowHeightFor(stages: number): number {
  return stages <= 16 ? 20 : Math.max(4, Math.floor(480 / stages));
}

function tickStep(spanMs: number): number {
  const raw = spanMs / 8;
  const pow = 10 ** Math.floor(Math.log10(raw > 0 ? raw : 1));
  for (const m of [1, 2, 5, 10]) if (m * pow >= raw) return m * pow;
  return 10 * pow;
}

function formatMs(ms: number): string {
  return ms >= 100 ? ms.toFixed(0) : ms.toFixed(1);
}

/** The layout the renderer uses for these panels (pure function of the panels' shapes and times). */
export function timelineLayout(panels: readonly TimelinePanel[], options: TimelineOptions = {}): TimelineLayout {
  const plotWidth = options.plotWidth ?? 1100;
  const maxMs = Math.max(1e-9, ...panels.map(panelEndMs));
  const stages = Math.max(1, ...panels.map((p) => p.run.stages));
  const rowHeight = rowHeightFor(stages);
  const rowGap = rowHeight >= 10 ? 2 : 0;
  let y = options.title ? 40 : 12;
  const panelTops: number[] = [];
  for (const panel of panels) {
    y += 20; // panel title
    y += 18; // time axis
    panelTops.push(y);
    y += panel.run.stages * (rowHeight + rowGap) + 22;
  }
  return { left: LEFT, scale: plotWidth / maxMs, rowHeight, rowGap, panelTops, width: LEFT + plotWidth + RIGHT, height: y + 26 };
}

/**
 * Renders one or more timelines (e.g. before and after a switch) as one SVG: per panel one row per
 * stage in stage order, every op a block at its start/end time labelled with its microbatch (when
 * wide enough), idle time as hatched background, messages of slow links as arrows between rows,
 * iteration time and bubble rate in the panel's title. With `allReduce`, each stage's ring
 * all-reduce is a bar after its last op (red when a ring link is slow) and the iteration ends with
 * the last ring. Panels share one time scale. Deterministic:
 * the same panels give the same bytes. All text is escaped.
 */
export function renderTimelineSvg(panels: readonly TimelinePanel[], options: TimelineOptions = {}): string {
  const layout = timelineLayout(panels, options);
  const { left, width, height } = layout;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" class="pipemorph-timeline" width="${width}" height="${px(height)}" viewBox="0 0 ${width} ${px(height)}" ${FONT}>`,
    // Block colours by class: one short <rect> per op keeps a 64 x 512 picture small and fast.
    `<style>.pipemorph-timeline .F{fill:${OP_COLORS[0]}}.pipemorph-timeline .B{fill:${OP_COLORS[1]}}.pipemorph-timeline .W{fill:${OP_COLORS[2]}}.pipemorph-timeline .blocks rect{stroke:#fff;stroke-width:.5}</style>`,
    '<defs>',
    '<pattern id="idle" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#f3f4f6"/><line x1="0" y1="0" x2="0" y2="6" stroke="#dcdfe4" stroke-width="2"/></pattern>',
    `<marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="5" markerHeight="5" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="${MESSAGE_COLOR}"/></marker>`,
    '</defs>',
    `<rect width="${width}" height="${px(height)}" fill="#ffffff"/>`,
  );
  if (options.title) out.push(`<text class="title" x="${left}" y="26" font-size="17" font-weight="bold" fill="#1f2933">${escapeXml(options.title)}</text>`);
  panels.forEach((panel, p) => renderPanel(out, panel, p, layout));
  renderLegend(out, left, height - 14, panels.some((p) => (p.allReduce?.length ?? 0) > 0));
  out.push('</svg>');
  return out.join('\n') + '\n';
}

function renderPanel(out: string[], panel: TimelinePanel, index: number, layout: TimelineLayout): void {
  const { left, scale, rowHeight, rowGap } = layout;
  const run = panel.run;
  const top = layout.panelTops[index];
  const S = run.stages;
  const per = 3 * run.microbatches;
  const rings = panel.allReduce && panel.allReduce.length > 0 ? panel.allReduce : null;
  const endMs = panelEndMs(panel);
  const plotRight = left + endMs * scale;
  const rowsBottom = top + S * (rowHeight + rowGap) - rowGap;
  const bubble = bubbleRateOf(run);
  const iteration = rings ? `iteration ${formatMs(endMs)} ms (pipeline ${formatMs(run.iterationMs)} ms, then the all-reduce)` : `iteration ${formatMs(endMs)} ms`;
  const heading = `${panel.title} · ${iteration} · bubble rate ${(bubble * 100).toFixed(1)}%`;
  const pipelineMs = rings ? ` data-pipeline-ms="${px(run.iterationMs)}"` : '';
  out.push(`<g class="panel" data-panel="${index}" data-iteration-ms="${px(endMs)}"${pipelineMs} data-bubble-rate="${bubble.toFixed(4)}">`);
  out.push(`<text class="panel-title" x="${left}" y="${px(top - 24)}" font-size="13" font-weight="bold" fill="#1f2933">${escapeXml(heading)}</text>`);
  // Time axis with round ticks.
  const spanMs = (layout.width - left - RIGHT) / scale;
  const step = tickStep(spanMs);
  const axisY = top - 6;
  out.push(`<g class="axis" font-size="9" fill="#616e7c">`);
  for (let i = 0; i * step <= spanMs + 1e-9; i++) {
    const t = i * step;
    const x = px(left + t * scale);
    out.push(`<line x1="${x}" y1="${px(axisY)}" x2="${x}" y2="${px(rowsBottom)}" stroke="#e4e7eb" stroke-width="1"/><text x="${x}" y="${px(axisY - 2)}" text-anchor="middle">${step >= 1 ? t.toFixed(0) : t.toFixed(1)}</text>`);
  }
  out.push(`<text x="${left - 8}" y="${px(axisY - 2)}" text-anchor="end">time (ms)</text></g>`);
  const compact = S * per > COMPACT_ABOVE_OPS;
  for (let s = 0; s < S; s++) {
    const y = top + s * (rowHeight + rowGap);
    out.push(`<g class="row" data-stage="${s}">`);
    // Thin rows: label every fourth stage (and the last), at a readable size.
    if (rowHeight >= 10 || s % 4 === 0 || s === S - 1) {
      out.push(`<text class="stage-label" x="${left - 8}" y="${px(y + rowHeight / 2 + 3.5)}" font-size="${Math.max(9, Math.min(11, rowHeight))}" text-anchor="end" fill="#3e4c59">stage ${s}</text>`);
    }
    out.push(`<rect class="idle" x="${left}" y="${px(y)}" width="${px(endMs * scale)}" height="${rowHeight}" fill="url(#idle)"/>`);
    const showLabels = rowHeight >= 11;
    const fontSize = Math.min(10, rowHeight - 5);
    const labels: string[] = [];
    // Blocks sit at y = 0 of a group moved to the row: x, width and the label are all a block needs.
    let blocks = `<g class="blocks${compact ? ' compact' : ''}" transform="translate(0 ${px(y)})">`;
    const h = `" height="${rowHeight}"/>`;
    const v = `v${rowHeight}h-`;
    for (const code of run.order[s]) {
      const k = s * per + code;
      const x0 = left + run.start[k] * scale;
      const w = (run.end[k] - run.start[k]) * scale;
      const kind = opKind(code);
      const mb = opMicrobatch(code);
      if (compact) {
        // One sub-path per op, in run order, one path per kind, in integer 1/100 px (the path is
        // scaled by 0.01 in x): the same blocks at a fraction of the bytes and time.
        const xi = Math.round(x0 * 100);
        const wi = Math.round((x0 + w) * 100) - xi;
        const sink = SINKS[kind];
        sink.text('M');
        sink.int(xi);
        sink.text(' 0h');
        sink.int(wi);
        sink.text(v);
        sink.int(wi);
        sink.text('z');
        continue;
      }
      blocks += '<rect class="' + OP_KINDS[kind] + '" data-op="' + OP_KINDS[kind] + mb + '" x="' + px(x0) + '" width="' + px(w) + h;
      const label = String(mb);
      if (showLabels && w >= 6 * label.length + 3) labels.push(`<text x="${px(x0 + w / 2)}" y="${px(y + rowHeight / 2 + fontSize / 2 - 1)}">${label}</text>`);
    }
    if (compact) for (let kind = 0; kind < 3; kind++) blocks += `<path class="${OP_KINDS[kind]}" transform="scale(0.01 1)" d="${SINKS[kind].take()}"/>`;
    out.push(blocks + '</g>');
    if (labels.length > 0) out.push(`<g class="mb" font-size="${fontSize}" text-anchor="middle" fill="#ffffff">${labels.join('')}</g>`);
    if (rings && rings[s]) renderAllReduce(out, rings[s], s, y, layout);
    out.push('</g>');
  }
  renderMessages(out, panel, top, layout);
  out.push(`<line class="iteration-end" x1="${px(plotRight)}" y1="${px(top - 4)}" x2="${px(plotRight)}" y2="${px(rowsBottom + 4)}" stroke="#1f2933" stroke-width="1.5" stroke-dasharray="4 3"/>`);
  out.push(`<text x="${px(plotRight)}" y="${px(rowsBottom + 15)}" font-size="10" text-anchor="middle" fill="#1f2933">${formatMs(endMs)} ms</text>`);
  out.push('</g>');
}

/** One stage's ring all-reduce: a bar from when its replicas are done to when its ring ends, labelled when wide enough. */
function renderAllReduce(out: string[], ring: TimelineAllReduce, stage: number, y: number, layout: TimelineLayout): void {
  const { left, scale, rowHeight } = layout;
  if (!(ring.endMs > ring.startMs)) return;
  const x0 = left + ring.startMs * scale;
  const w = (ring.endMs - ring.startMs) * scale;
  const fill = ring.slow ? SLOW_ALL_REDUCE_COLOR : ALL_REDUCE_COLOR;
  const label = `all-reduce ${formatMs(ring.endMs - ring.startMs)} ms${ring.note ? ` (${ring.note})` : ''}`;
  out.push(
    `<rect class="all-reduce${ring.slow ? ' slow' : ''}" data-stage="${stage}" data-start-ms="${px(ring.startMs)}" data-end-ms="${px(ring.endMs)}" x="${px(x0)}" y="${px(y)}" width="${px(w)}" height="${rowHeight}" fill="${fill}" stroke="#ffffff" stroke-width="0.5"><title>${escapeXml(`stage ${stage} ${label}`)}</title></rect>`,
  );
  const fontSize = Math.min(10, rowHeight - 5);
  if (rowHeight >= 11 && w >= 6 * label.length + 6) {
    out.push(`<text class="all-reduce-label" x="${px(x0 + w / 2)}" y="${px(y + rowHeight / 2 + fontSize / 2 - 1)}" font-size="${fontSize}" text-anchor="middle" fill="${ring.slow ? '#ffffff' : '#1f2933'}">${escapeXml(label)}</text>`);
  }
}

function renderMessages(out: string[], panel: TimelinePanel, top: number, layout: TimelineLayout): void {
  const slow = new Set(panel.slowLinks ?? []);
  const m = panel.run.messages;
  const { left, scale, rowHeight, rowGap } = layout;
  const rowMid = (s: number) => top + s * (rowHeight + rowGap) + rowHeight / 2;
  const noteX = layout.width - RIGHT + 10;
  for (const link of [...slow].sort((a, b) => a - b)) {
    if (link < 0 || link + 1 >= panel.run.stages) continue;
    const yMid = top + (link + 1) * (rowHeight + rowGap) - rowGap / 2;
    const note = panel.linkNotes?.[link];
    out.push(`<g class="slow-link" data-link="${link}"><line x1="${px(noteX - 4)}" y1="${px(rowMid(link))}" x2="${px(noteX - 4)}" y2="${px(rowMid(link + 1))}" stroke="${MESSAGE_COLOR}" stroke-width="3"/>`);
    out.push(`<text x="${px(noteX + 2)}" y="${px(yMid + 4)}" font-size="11" font-weight="bold" fill="${MESSAGE_COLOR}">${escapeXml(`link ${link}-${link + 1}${note ? ' ' + note : ''}`)}</text></g>`);
  }
  if (!m || slow.size === 0) return;
  out.push(`<g class="messages" stroke="${MESSAGE_COLOR}" stroke-width="1" stroke-opacity="0.75" fill="none">`);
  for (let k = 0; k < m.count; k++) {
    const link = m.link[k];
    if (!slow.has(link)) continue;
    const forward = m.direction[k] === 0;
    const from = forward ? link : link + 1;
    const to = forward ? link + 1 : link;
    out.push(
      `<line class="msg ${forward ? 'fwd' : 'bwd'}" data-link="${link}" data-mb="${m.microbatch[k]}" x1="${px(left + m.sentMs[k] * scale)}" y1="${px(rowMid(from))}" x2="${px(left + m.arriveMs[k] * scale)}" y2="${px(rowMid(to))}" marker-end="url(#arrow)"/>`,
    );
  }
  out.push('</g>');
}

function renderLegend(out: string[], left: number, y: number, allReduce: boolean): void {
  const items: Array<[string, string]> = [
    [OP_COLORS[0], 'F forward'],
    [OP_COLORS[1], 'B backward (inputs)'],
    [OP_COLORS[2], 'W backward (weights)'],
    ['url(#idle)', 'idle (bubble)'],
    ...(allReduce ? ([[ALL_REDUCE_COLOR, 'ring all-reduce'], [SLOW_ALL_REDUCE_COLOR, 'ring with a slow link']] as Array<[string, string]>) : []),
  ];
  out.push(`<g class="legend" font-size="11" fill="#3e4c59">`);
  let x = left;
  for (const [fill, label] of items) {
    out.push(`<rect x="${x}" y="${y - 9}" width="14" height="11" fill="${fill}" stroke="#9aa5b1" stroke-width="0.5"/><text x="${x + 19}" y="${y}">${escapeXml(label)}</text>`);
    x += 36 + label.length * 6;
  }
  out.push(`<line x1="${x}" y1="${y - 4}" x2="${x + 22}" y2="${y - 4}" stroke="${MESSAGE_COLOR}" stroke-width="1.5" marker-end="url(#arrow)"/><text x="${x + 28}" y="${y}">message on a slow link</text>`);
  out.push('</g>');
}
