import { escapeXml } from './escape-xml';
import { renderHeatStripSvg } from './heat-strip-svg';
import { JobPageView } from './job-page.type';
import { PAGE_CSS } from './page-css';

const CSS = `${PAGE_CSS}tr.in-force td{background:#eef6ff;font-weight:600}
.ok{color:#2e7d32}
.straggler-list li{color:#c81e1e;margin:2px 0}
.kind{display:inline-block;font-size:11px;border-radius:3px;padding:1px 6px;background:#fde2e1;color:#a51d1d;margin-right:6px}
.muted{color:#7b8794;font-size:12px}
a{color:#2563eb}
.timeline svg{max-width:100%;height:auto}
`;

function ms(value: number | null | undefined): string {
  return value === null || value === undefined || !Number.isFinite(value) ? '-' : `${value.toFixed(0)} ms`;
}

/**
 * The job page: stragglers, link delays as a heat strip over recent iterations, versions with
 * their reasons and predicted vs measured iteration times, and the before/after timeline. One
 * self-contained HTML document: inline CSS and SVG, no script, no external asset. Text escaped.
 */
export function renderJobPage(view: JobPageView): string {
  const e = escapeXml;
  const out: string[] = [];
  out.push('<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">', `<title>pipemorph · ${e(view.jobId)}</title>`, `<style>${CSS}</style></head><body>`);
  out.push(`<header><h1>pipemorph job <span id="job-id">${e(view.jobId)}</span></h1><div class="facts">`);
  out.push(`<span>${view.stages} stages x ${view.microbatches} microbatches, ${view.dp} data-parallel ${view.dp === 1 ? 'replica' : 'replicas'}</span>`);
  out.push(`<span>iteration ${view.iteration >= 0 ? view.iteration : '-'}</span><span>iteration time ${e(ms(view.iterationMs))}</span>`);
  out.push(`<span>schedule ${view.scheduleVersion === null ? 'none yet' : 'v' + view.scheduleVersion}</span>`);
  if (view.handshake) out.push(`<span>switching: ${e(view.handshake)}</span>`);
  out.push('</div></header><main>');

  out.push(`<section id="stragglers"><h2>Stragglers (${view.stragglers.length})</h2>`);
  if (view.stragglers.length === 0) out.push('<p class="ok">No straggler: every link and rank is within its learned healthy level.</p>');
  else {
    out.push('<ul class="straggler-list">');
    for (const s of view.stragglers) out.push(`<li class="straggler" data-kind="${e(s.kind)}"><span class="kind">${e(s.kind)}</span>${e(s.where)}: +${e(s.extraMs.toFixed(1))} ms${s.note ? ` <span class="muted">(${e(s.note)})</span>` : ''}</li>`);
    out.push('</ul>');
  }
  out.push('</section>');

  out.push(`<section id="link-delays"><h2>Pipeline link delays, last ${view.heat.iterations.length} iterations</h2>`);
  if (view.heat.rows.length === 0 || view.heat.iterations.length === 0) out.push('<p class="muted">No link samples yet.</p>');
  else out.push(renderHeatStripSvg(view.heat));
  if (view.heat.droppedSamples) out.push(`<p class="muted">${view.heat.droppedSamples} link samples not kept (older than the last ${view.heat.iterations.length} iterations, or naming a link outside the job).</p>`);
  if (view.heat.hiddenRows > 0) out.push(`<p class="muted">${view.heat.hiddenRows} more links not shown (the page shows stragglers and the slowest links first).</p>`);
  out.push('</section>');

  out.push('<section id="versions"><h2>Schedule versions</h2>');
  if (view.versions.length === 0) out.push('<p class="muted">No schedule published yet.</p>');
  else {
    out.push('<table><thead><tr><th>version</th><th>from iteration</th><th>reason</th><th>predicted</th><th>measured</th><th>detail</th></tr></thead><tbody>');
    for (const v of [...view.versions].reverse()) {
      const predicted = `${ms(v.predictedMs)}${v.previousPredictedMs !== null ? ` <span class="muted">(was ${e(ms(v.previousPredictedMs))})</span>` : ''}`;
      out.push(
        `<tr class="version${v.inForce ? ' in-force' : ''}" data-version="${v.version}"><td>v${v.version}${v.inForce ? ' (in force)' : ''}</td><td class="num">${v.fromIteration}</td><td>${e(v.reason)}</td><td class="num">${predicted}</td><td class="num">${e(ms(v.measuredMs))}</td><td>${e(v.detail)}</td></tr>`,
      );
    }
    out.push('</tbody></table><p class="muted">Measured: mean of the iteration times the ranks report (else the daemon\'s estimate from the pace of reports) while the version ran.</p>');
  }
  out.push('</section>');

  out.push(`<section id="timeline" class="timeline"><h2>Timeline: the schedule in force and the one it replaced, simulated under the current link estimates</h2>`);
  if (view.dp > 1) out.push('<p class="muted">Each panel runs under its own layout; where the job described its data-parallel all-reduce, each stage\'s ring is drawn after its last op (red: a slow ring link), as the predictions price it.</p>');
  out.push(view.timelineSvg ?? '<p class="muted">No schedule yet.</p>');
  out.push(`<p class="muted"><a href="${e(view.links.timeline)}">timeline.svg</a> · <a href="${e(view.links.json)}">job JSON</a></p></section>`);
  out.push('</main></body></html>');
  return out.join('\n') + '\n';
}
