/**
 * The job page is reachable from where an operator starts: the Grafana dashboard's job panels
 * (data links) and the job alerts' runbooks in docs/operations.md.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..');

interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { y: number };
  fieldConfig?: { defaults?: { links?: Array<{ title: string; url: string }> } };
}

describe('links to the job page', () => {
  const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy/grafana/pipemorph.dashboard.json'), 'utf8'));
  const panels = dashboard.panels as Panel[];
  const ingestRow = panels.find((p) => p.type === 'row' && p.title === 'Ingest')!;

  it('every panel of the training-job row links to the job page and the timeline of $job', () => {
    const jobPanels = panels.filter((p) => p.type !== 'row' && p.gridPos.y < ingestRow.gridPos.y);
    expect(jobPanels.length).toBeGreaterThanOrEqual(10);
    for (const p of jobPanels) {
      const urls = (p.fieldConfig?.defaults?.links ?? []).map((l) => l.url);
      expect({ panel: p.title, urls }).toEqual({ panel: p.title, urls: ['${daemon}/jobs/${job}/view', '${daemon}/jobs/${job}/timeline.svg'] });
    }
    const daemon = dashboard.templating.list.find((v: { name: string }) => v.name === 'daemon');
    expect(daemon).toMatchObject({ type: 'textbox' });
    expect(daemon.query).toMatch(/^https?:\/\//);
  });

  it('the job alerts\' runbooks send the operator to the job page', () => {
    const docs = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
    const section = (name: string) => docs.split(`### ${name}\n`)[1].split('\n### ')[0];
    for (const alert of ['PipemorphStragglerDetected', 'PipemorphStragglerNotAbsorbed', 'PipemorphRanksNotAcknowledging']) {
      expect({ alert, links: section(alert).includes('/jobs/<job>/view') || section(alert).includes('(#the-job-page)') }).toEqual({ alert, links: true });
    }
    expect(docs).toContain('### The job page');
  });
});
