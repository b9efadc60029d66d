import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// A fresh clone has nothing beside it: code, tests, benchmarks and scripts may read only files the
// repository carries. This would have caught two specs reading ../shared/data (issue 10).
describe('repository hygiene', () => {
  const root = join(__dirname, '..');
  const outsideRefs = /\.\.\/shared\/|\/work\/shared|shared\/(data|seeds)\//;

  function trackedSources(): string[] {
    const out = execFileSync('git', ['ls-files', 'src', 'test', 'bench', 'scripts', 'clients', '.ci'], { cwd: root, encoding: 'utf8' });
    return out.split('\n').filter((f) => /\.(ts|js|py|sh)$/.test(f) || f === '.ci/run');
  }

  it('no tracked source names a path outside the repository', () => {
    const offenders: string[] = [];
    for (const file of trackedSources()) {
      if (file === 'test/repo-hygiene.test.ts') continue;
      const text = readFileSync(join(root, file), 'utf8');
      text.split('\n').forEach((line, i) => {
        if (outsideRefs.test(line)) offenders.push(`${file}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(offenders).toEqual([]);
  });

  it('the check itself flags a line that reads ../shared', () => {
    expect(outsideRefs.test("readFileSync('../../shared/data/x.json')")).toBe(true);
  });
});
