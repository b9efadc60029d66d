import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { assertTestDatabase, redisUrlFor } from './support/test-daemon';

// A fresh clone has nothing beside it: code, tests, benchmarks and scripts may read only files the
// repository carries. This would have caught two specs reading the shared data folder beside the checkout (issue 10).
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

  it('the check itself flags a line that reads the shared folder beside the checkout', () => {
    // Built from parts, so that this file does not itself name the path it forbids.
    const outside = ['..', '..', 'shared', 'data', 'x.json'].join('/');
    expect(outsideRefs.test(`readFileSync('${outside}')`)).toBe(true);
  });
});

describe('test groups (scripts/run-jest-groups.js)', () => {
  const group = process.env.PIPEMORPH_TEST_GROUP;
  afterEach(() => {
    if (group === undefined) delete process.env.PIPEMORPH_TEST_GROUP;
    else process.env.PIPEMORPH_TEST_GROUP = group;
  });

  it('a daemon of the own-db group may not use database 0; the shared group may', () => {
    process.env.PIPEMORPH_TEST_GROUP = 'own-db';
    expect(() => assertTestDatabase(redisUrlFor(0))).toThrow(/database 0/);
    expect(() => assertTestDatabase('redis://127.0.0.1:6379')).toThrow(/database 0/);
    expect(() => assertTestDatabase(redisUrlFor(12))).not.toThrow();
    process.env.PIPEMORPH_TEST_GROUP = 'shared';
    expect(() => assertTestDatabase(redisUrlFor(0))).not.toThrow();
  });

  it('the own-db group is every test file with a database of its own, and the Python suite', () => {
    const own = execFileSync(process.execPath, [join(__dirname, '..', 'scripts', 'run-jest-groups.js'), '--list'], { encoding: 'utf8' }).trim().split('\n');
    expect(own).toContain('test/python-runtime.test.ts');
    expect(own).toContain('test/daemon.test.ts');
    expect(own).not.toContain('test/reliability.test.ts');
  });
});
