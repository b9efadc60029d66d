import { escapeXml } from '../render/escape-xml';
import { PAGE_CSS } from '../render/page-css';
import { FleetNodeEvidence, FleetView } from './fleet-view.type';

const CSS = `${PAGE_CSS}.kind{display:inline-block;font-size:11px;border-radius:3px;padding:1px 6px;background:#fde2e1;color:#a51d1d}
.action{color:#52606d}
.ok{color:#2e7d32}
.muted{color:#7b8794;font-size:12px}
a{color:#2563eb}
.rack{display:flex;align-items:center;margin:3px 0}
.rack .name{width:120px;font-size:12px;color:#52606d;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.node{width:22px;height:22px;margin-right:3px;border-radius:3px;border:2px solid transparent;box-sizing:border-box}
.node.suspect{border-color:#1f2933}
.legend span{display:inline-block;width:14px;height:14px;border-radius:3px;vertical-align:middle;margin:0 4px 0 12px}
`;

/** Green (healthy) to red (every link slow), grey without evidence. */
function heat(n: FleetNodeEvidence): string {
  const links = n.slowLinks + n.healthyLinks;
  const compute = n.compute.slow + n.compute.healthy;
  if (links + compute === 0) return '#cbd2d9';
  const f = Math.max(links > 0 ? n.slowLinks / links : 0, compute > 0 ? n.compute.slow / compute : 0);
  const hue = Math.round(120 * (1 - f));
  return `hsl(${hue},70%,${f > 0 ? 50 : 60}%)`;
}

/** A job's page on the replica that leads it, from /fleet/view. */
const jobLink = (jobId: string) => `<a href="../jobs/${encodeURIComponent(jobId)}/view">${escapeXml(jobId)}</a>`;

/**
 * The fleet page: the suspects with their evidence, reasons, runbook steps and links to the
 * affected jobs' pages, then a heat map of the nodes by locality (rack), and the slow locality
 * pairs. One self-contained HTML document: inline CSS, no script, no external asset. Text escaped.
 */
export function renderFleetPage(view: FleetView & { replica?: string; computedAt?: number }): string {
  const e = escapeXml;
  const out: string[] = [];
  out.push('<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">', '<title>pipemorph · fleet</title>', `<style>${CSS}</style></head><body>`);
  out.push('<header><h1>pipemorph fleet view</h1><div class="facts">');
  out.push(`<span>${view.jobs.length} jobs</span><span>${view.nodes.length} nodes</span><span id="suspect-count">${view.suspects.length} ${view.suspects.length === 1 ? 'suspect' : 'suspects'}</span>`);
  if (view.asOf > 0) out.push(`<span>evidence as of ${e(new Date(view.asOf).toISOString())}</span>`);
  if (view.replica) out.push(`<span>served by ${e(view.replica)}</span>`);
  out.push('</div></header><main>');

  out.push('<section id="suspects"><h2>Suspects</h2>');
  if (view.suspects.length === 0) out.push('<p class="ok">None: no evidence points at a NIC, uplink, boundary, node pair or GPU.</p>');
  else {
    out.push('<table><tr><th>suspect</th><th>confidence</th><th>evidence</th><th>jobs</th></tr>');
    for (const s of view.suspects) {
      out.push(
        `<tr class="suspect" data-id="${e(s.id)}"><td><span class="kind">${e(s.kind)}</span> ${e(s.id.slice(s.id.indexOf(':') + 1))}</td><td class="num">${s.confidence.toFixed(2)}</td>` +
          `<td>${e(s.reason)}<br><span class="action">${e(s.action)}</span></td><td>${s.jobs.map(jobLink).join(', ')}</td></tr>`,
      );
    }
    out.push('</table>');
  }
  out.push('</section>');

  const suspectNodes = new Set(view.suspects.flatMap((s) => (s.kind === 'nic' || s.kind === 'compute' ? s.nodes : [])));
  const byLocality = new Map<string, FleetNodeEvidence[]>();
  for (const n of view.nodes) {
    const key = n.locality ?? '(no locality)';
    (byLocality.get(key) ?? byLocality.set(key, []).get(key)!).push(n);
  }
  out.push('<section id="heat-map"><h2>Nodes by locality</h2>');
  out.push('<p class="muted legend">share of a node\'s links (or compute) slow:<span style="background:hsl(120,70%,60%)"></span>none<span style="background:hsl(60,70%,50%)"></span>half<span style="background:hsl(0,70%,50%)"></span>all; outlined: a suspect</p>');
  const uplinks = new Set(view.suspects.filter((s) => s.kind === 'uplink').flatMap((s) => s.localities));
  for (const [loc, nodes] of [...byLocality].sort((p, q) => (p[0] < q[0] ? -1 : 1))) {
    out.push(`<div class="rack"><span class="name"${uplinks.has(loc) ? ' style="color:#c81e1e;font-weight:600"' : ''} title="${e(loc)}">${e(loc)}</span>`);
    for (const n of nodes) {
      const title = `${n.node}: ${n.slowLinks} of ${n.slowLinks + n.healthyLinks} links slow, to ${n.slowPeers} peers${n.extraMs > 0 ? ` (up to +${n.extraMs.toFixed(1)} ms)` : ''}; compute ${n.compute.slow} of ${n.compute.slow + n.compute.healthy} ranks slow; jobs ${n.jobs.join(', ') || '-'}`;
      out.push(`<div class="node${suspectNodes.has(n.node) ? ' suspect' : ''}" data-node="${e(n.node)}" style="background:${heat(n)}" title="${e(title)}"></div>`);
    }
    out.push('</div>');
  }
  if (view.nodes.length === 0) out.push('<p class="muted">No evidence yet.</p>');
  out.push('</section>');

  const slowBoundaries = view.boundaries.filter((b) => b.slowLinks > 0);
  out.push('<section id="boundaries"><h2>Localities with slow links</h2>');
  if (slowBoundaries.length === 0) out.push('<p class="ok">None.</p>');
  else {
    out.push('<table><tr><th>between</th><th>slow links</th><th>healthy links</th><th>extra</th><th>jobs</th></tr>');
    for (const b of slowBoundaries) out.push(`<tr><td>${b.a === b.b ? `inside ${e(b.a)}` : `${e(b.a)} | ${e(b.b)}`}</td><td class="num">${b.slowLinks}</td><td class="num">${b.healthyLinks}</td><td class="num">+${b.extraMs.toFixed(1)} ms</td><td>${b.slowJobs.map(jobLink).join(', ')}</td></tr>`);
    out.push('</table>');
  }
  out.push('</section></main></body></html>');
  return out.join('\n');
}
