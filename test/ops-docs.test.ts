/** docs/operations.md stays complete: every configuration key and every exported pipemorph metric is described. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportedSeriesNames, markdownAnchors, ROOT } from './support/ops';

const doc = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
/** First cells of the Markdown table rows, without backticks. */
const firstCells = doc.split('\n').filter((l) => l.startsWith('| `')).map((l) => l.split('|')[1].trim().replace(/`/g, ''));

function keys(node: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(node).flatMap(([k, v]) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? keys(v as Record<string, unknown>, `${prefix}${k}.`) : [`${prefix}${k}`]));
}

describe('docs/operations.md', () => {
  it('describes every configuration key with its default', () => {
    const config = JSON.parse(readFileSync(join(ROOT, 'config/default.json'), 'utf8'));
    const rows = new Map(doc.split('\n').filter((l) => l.startsWith('| `')).map((l) => [l.split('|')[1].trim().replace(/`/g, ''), l.split('|')[2].trim().replace(/`/g, '')]));
    for (const key of keys(config)) {
      const value = key.split('.').reduce((node, part) => node[part], config);
      expect({ key, default: rows.get(key) }).toEqual({ key, default: String(value) });
    }
  });

  it('describes every pipemorph metric the daemon exports, and no other', async () => {
    const exported = [...(await exportedSeriesNames())].filter((n) => n.startsWith('pipemorph_') && !/_(bucket|sum|count)$/.test(n));
    const documented = firstCells.filter((c) => c.startsWith('pipemorph_'));
    expect([...documented].sort()).toEqual([...exported].sort());
  });

  it('has the sections the README and the runbooks link to', () => {
    const anchors = markdownAnchors(doc);
    for (const anchor of ['install', 'configuration', 'metrics', 'dashboard', 'alerts-and-runbooks', 'scaling-and-upgrades', 'tracing', 'http-endpoints']) expect(anchors).toContain(anchor);
    for (const [, target] of doc.matchAll(/\]\(#([^)]+)\)/g)) expect({ target, exists: anchors.has(target) }).toEqual({ target, exists: true });
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme).toContain('(docs/operations.md)');
  });
});
