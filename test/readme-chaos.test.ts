/** The chaos table in docs/faults.md is the last recorded run (bench/results/chaos.json, written by npm run test:chaos). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

it('docs/faults.md chaos table equals bench/results/chaos.json', () => {
  const root = join(__dirname, '..');
  const { rows } = JSON.parse(readFileSync(join(root, 'bench/results/chaos.json'), 'utf8')) as { rows: Array<Record<string, string | number | boolean>> };
  const doc = readFileSync(join(root, 'docs/faults.md'), 'utf8');
  for (const r of rows) {
    const line = `| ${r.fault} | ${r.recoverMs} | ${r.reportsLost} | ${r.versionsReused} | ${r.mixedIterations} | ${r.splitBrainWrites} | ${r.switchedAfter ? 'yes' : 'no'} |`;
    expect(doc).toContain(line);
  }
  const start = doc.indexOf('# Faults it survives');
  const end = doc.indexOf('What makes it so');
  expect(start).toBeGreaterThanOrEqual(0);
  expect(end).toBeGreaterThan(start);
  const section = doc.slice(start, end);
  const tableRows = section.split('\n').filter((l) => l.startsWith('| ') && /\| (yes|no) \|$/.test(l));
  expect(tableRows).toHaveLength(rows.length);
  // The README links to it.
  expect(readFileSync(join(root, 'README.md'), 'utf8')).toContain('(docs/faults.md)');
});
