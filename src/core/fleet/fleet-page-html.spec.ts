import { DEFAULT_FLEET_CONFIG } from './fleet-config.type';
import { renderFleetPage } from './fleet-page-html';
import { buildFleetView } from './fleet-view';
import { JobFleetEvidence } from './job-fleet-evidence.type';

function job(jobId: string, nodes: string[], bad: string | null): JobFleetEvidence {
  return {
    jobId,
    at: 0,
    localities: Object.fromEntries(nodes.map((n) => [n, n === 'bad' ? 'rack<1>' : 'rack-2'])),
    links: nodes.slice(1).map((n, i) => {
      const [a, b] = [nodes[i], n].sort();
      const slow = a === bad || b === bad;
      return { a, b, healthy: slow ? 0 : 9, slow: slow ? 9 : 0, extraMs: slow ? 20 : 0 };
    }),
    compute: [],
  };
}
// Node bad's NIC slows jobs a&1 and b; job c runs on their other nodes, healthy.
const fleet = [job('a&1', ['a1', 'bad', 'a2'], 'bad'), job('b', ['b1', 'bad', 'b2'], 'bad'), job('c', ['a1', 'a2', 'b1', 'b2'], null)];

describe('renderFleetPage', () => {
  const html = renderFleetPage(buildFleetView(fleet, DEFAULT_FLEET_CONFIG));

  it('lists the suspect with its reason and runbook step, and links the affected jobs\' pages (escaped)', () => {
    expect(html).toContain('data-id="nic:bad"');
    expect(html).toContain('drain node bad');
    expect(html).toContain('<a href="../jobs/a%261/view">a&amp;1</a>');
    expect(html).toContain('<a href="../jobs/b/view">b</a>');
  });

  it('draws every node in its locality, the suspect outlined, names escaped', () => {
    expect(html).toContain('<div class="node suspect" data-node="bad"');
    expect(html).toContain('title="rack&lt;1&gt;"');
    expect(html).not.toContain('rack<1>');
    expect(html.match(/class="node( suspect)?"/g)).toHaveLength(5);
  });

  it('twin: healed evidence shows no suspect and nothing outlined', () => {
    const healed = renderFleetPage(buildFleetView(fleet.map((j) => ({ ...j, links: j.links.map((l) => ({ ...l, healthy: l.healthy + l.slow, slow: 0, extraMs: 0 })) })), DEFAULT_FLEET_CONFIG));
    expect(healed).toContain('0 suspects');
    expect(healed).not.toContain('node suspect');
    expect(healed).not.toMatch(/<script/);
  });
});
