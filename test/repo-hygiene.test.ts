import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { importCycles, importGraph, layerViolations } from './support/import-graph';
import { assertTestDatabase, redisUrlFor, sameServer } from './support/test-daemon';

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
    expect(() => assertTestDatabase('redis://127.0.0.1:6543')).toThrow(/database 0/);
    expect(() => assertTestDatabase(redisUrlFor(12))).not.toThrow();
    process.env.PIPEMORPH_TEST_GROUP = 'shared';
    expect(() => assertTestDatabase(redisUrlFor(0))).not.toThrow();
  });

  it("no test daemon may use the Redis the suite was started with (any database of it); the suite's own may", () => {
    const saved = process.env.PIPEMORPH_USER_REDIS_URL;
    try {
      process.env.PIPEMORPH_USER_REDIS_URL = 'redis://127.0.0.1:6379';
      expect(() => assertTestDatabase('redis://127.0.0.1:6379/7')).toThrow(/may hold a user's data/);
      expect(() => assertTestDatabase('redis://localhost:6379')).toThrow(/may hold a user's data/);
      expect(() => assertTestDatabase('redis://127.0.0.1:6543/7')).not.toThrow();
      // Twin: without the suite's word on the caller's Redis (a test run outside npm test), nothing is refused.
      delete process.env.PIPEMORPH_USER_REDIS_URL;
      expect(() => assertTestDatabase('redis://127.0.0.1:6379/7')).not.toThrow();
    } finally {
      if (saved === undefined) delete process.env.PIPEMORPH_USER_REDIS_URL;
      else process.env.PIPEMORPH_USER_REDIS_URL = saved;
    }
  });

  it("npm test leaves the Redis at REDIS_URL alone: the jest groups run against a redis-server of their own", () => {
    const script = readFileSync(join(__dirname, '..', 'scripts', 'run-jest-groups.js'), 'utf8');
    expect(script).toMatch(/REDIS_URL: redisUrl/);
    expect(process.env.PIPEMORPH_TEST_GROUP === undefined || process.env.PIPEMORPH_USER_REDIS_URL !== undefined).toBe(true);
    if (process.env.PIPEMORPH_USER_REDIS_URL) expect(sameServer(process.env.PIPEMORPH_USER_REDIS_URL, process.env.REDIS_URL ?? '')).toBe(false);
  });

  it('the own-db group is every test file with a database of its own, and the Python suite', () => {
    const own = execFileSync(process.execPath, [join(__dirname, '..', 'scripts', 'run-jest-groups.js'), '--list'], { encoding: 'utf8' }).trim().split('\n');
    expect(own).toContain('test/python-runtime.test.ts');
    expect(own).toContain('test/daemon.test.ts');
    expect(own).not.toContain('test/reliability.test.ts');
  });

  describe('layering (issue 30, item 6)', () => {
    const root = join(__dirname, '..');
    const graph = importGraph(root, 'src');

    it('src has no import cycle (job-controller and remap-decision imported each other)', () => {
      expect(importCycles(graph)).toEqual([]);
      // Twin: the cycle there was, put back in a copy of the graph, is found.
      const broken = new Map(graph);
      broken.set('src/core/control/pipeline-plans.ts', [...(graph.get('src/core/control/pipeline-plans.ts') ?? []), 'src/core/control/job-controller.ts']);
      expect(importCycles(broken).length).toBeGreaterThan(0);
    });

    it('the core imports nothing outside it; the emulator neither the real ranks nor the demo, which composes both above them', () => {
      expect(layerViolations(graph, 'src/core', ['src/daemon', 'src/emulator', 'src/real', 'src/demo', 'src/replay', 'src/corpus', 'src/cli', 'src/protocol', 'src/support'])).toEqual([]);
      expect(layerViolations(graph, 'src/emulator', ['src/real', 'src/demo'])).toEqual([]);
      expect(layerViolations(graph, 'src/real', ['src/demo'])).toEqual([]);
      // Twin: the demo's import of the real act, were it still in the emulator, is named.
      const broken = new Map(graph);
      broken.set('src/emulator/demo.ts', ['src/real/real-act.ts']);
      expect(layerViolations(broken, 'src/emulator', ['src/real', 'src/demo'])).toEqual(['src/emulator/demo.ts -> src/real/real-act.ts']);
    });
  });
});
