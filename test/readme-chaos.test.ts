/** The README's chaos table is the last recorded run (bench/results/chaos.json, written by npm run test:chaos). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

it('README chaos table equals bench/results/chaos.json', () => {
  const root = join(__dirname, '..');
  const { rows } = JSON.parse(readFileSync(join(root, 'bench/results/chaos.json'), 'utf8')) as { rows: Array<Record<string, string | number | boolean>> };
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  for (const r of rows) {
    const line = `| ${r.fault} | ${r.recoverMs} | ${r.reportsLost} | ${r.versionsReused} | ${r.mixedIterations} | ${r.splitBrainWrites} | ${r.switchedAfter ? 'yes' : 'no'} |`;
    expect(readme).toContain(line);
  }
  const section = readme.slice(readme.indexOf('### Faults it survives'), readme.indexOf('What makes it so'));
  const tableRows = section.split('\n').filter((l) => l.startsWith('| ') && /\| (yes|no) \|$/.test(l));
  expect(tableRows).toHaveLength(rows.length);
});
