import { escapeXml } from './escape-xml';
import { HeatStrip } from './job-page.type';
import { px } from './timeline-svg';

const LABEL_WIDTH = 230;
const ROW = 16;

/** White -> orange -> dark red for 0 -> 1 (share of the strip's largest extra delay). */
export function heatColor(share: number): string {
  const t = Math.max(0, Math.min(1, share));
  const stops: Array<[number, number, number]> = [[246, 248, 240], [253, 174, 97], [215, 48, 39], [120, 10, 20]];
  const pos = t * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(pos));
  const f = pos - i;
  const c = stops[i].map((v, k) => Math.round(v + (stops[i + 1][k] - v) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

/**
 * Link delays as a heat strip: one row per link, one cell per recent iteration coloured by the
 * delay above the link's learned baseline, straggling links marked; a bar row of iteration times
 * on top. Deterministic and escaped like the timeline.
 */
export function renderHeatStripSvg(strip: HeatStrip): string {
  const columns = strip.iterations.length;
  const cell = columns > 0 ? Math.max(4, Math.min(20, Math.floor(900 / columns))) : 14;
  const barsHeight = 40;
  const top = barsHeight + 12;
  const width = LABEL_WIDTH + Math.max(1, columns) * cell + 90;
  const height = top + strip.rows.length * ROW + 34;
  const extraOf = (row: HeatStrip['rows'][number], v: number) => (Number.isFinite(v) ? Math.max(0, v - (Number.isFinite(row.baselineMs) ? row.baselineMs : 0)) : Number.NaN);
  let maxExtra = 1;
  for (const row of strip.rows) for (const v of row.values) if (extraOf(row, v) > maxExtra) maxExtra = extraOf(row, v);
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" class="heat-strip" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica,Arial,sans-serif">`);
  // Iteration times as bars.
  const maxMs = Math.max(1e-9, ...strip.iterationMs.filter((ms) => Number.isFinite(ms)));
  out.push(`<g class="iteration-bars"><text x="${LABEL_WIDTH - 8}" y="${barsHeight / 2 + 4}" font-size="11" text-anchor="end" fill="#3e4c59">iteration time (max ${escapeXml(maxMs.toFixed(0))} ms)</text>`);
  strip.iterationMs.forEach((ms, c) => {
    if (!Number.isFinite(ms)) return;
    const h = (ms / maxMs) * barsHeight;
    out.push(`<rect x="${LABEL_WIDTH + c * cell + 0.5}" y="${px(barsHeight - h + 4)}" width="${cell - 1}" height="${px(h)}" fill="#7b8794"><title>iteration ${strip.iterations[c]}: ${ms.toFixed(1)} ms</title></rect>`);
  });
  out.push('</g>');
  strip.rows.forEach((row, r) => {
    const y = top + r * ROW;
    const cls = row.straggler ? 'heat-row straggler' : 'heat-row';
    out.push(`<g class="${cls}" data-row="${r}">`);
    out.push(`<text x="${LABEL_WIDTH - 8}" y="${y + 11.5}" font-size="11" text-anchor="end" fill="${row.straggler ? '#c81e1e' : '#3e4c59'}"${row.straggler ? ' font-weight="bold"' : ''}>${escapeXml((row.straggler ? '⚠ ' : '') + row.label)}</text>`);
    row.values.forEach((v, c) => {
      const extra = extraOf(row, v);
      const fill = Number.isFinite(extra) ? heatColor(extra / maxExtra) : '#e4e7eb';
      const tip = Number.isFinite(v) ? `${row.label}, iteration ${strip.iterations[c]}: ${v.toFixed(2)} ms (+${extra.toFixed(2)} ms over baseline)` : `${row.label}, iteration ${strip.iterations[c]}: not reported`;
      out.push(`<rect x="${LABEL_WIDTH + c * cell}" y="${y}" width="${cell - 1}" height="${ROW - 2}" fill="${fill}"><title>${escapeXml(tip)}</title></rect>`);
    });
    out.push('</g>');
  });
  const axisY = top + strip.rows.length * ROW + 12;
  out.push(`<g class="heat-axis" font-size="10" fill="#616e7c">`);
  const every = Math.max(1, Math.ceil(columns / 8));
  strip.iterations.forEach((it, c) => {
    if (c % every === 0 || c === columns - 1) out.push(`<text x="${LABEL_WIDTH + c * cell + cell / 2}" y="${axisY}" text-anchor="middle">${it}</text>`);
  });
  out.push(`<text x="${LABEL_WIDTH - 8}" y="${axisY}" text-anchor="end">iteration</text>`);
  // Colour scale.
  const sx = LABEL_WIDTH + Math.max(1, columns) * cell + 14;
  for (let k = 0; k < 5; k++) out.push(`<rect x="${sx}" y="${top + k * 12}" width="12" height="11" fill="${heatColor(1 - k / 4)}"/><text x="${sx + 16}" y="${top + k * 12 + 9}">+${escapeXml(((maxExtra * (4 - k)) / 4).toFixed(1))}</text>`);
  out.push(`<text x="${sx}" y="${top - 4}">ms over baseline</text>`);
  out.push('</g></svg>');
  return out.join('\n');
}
