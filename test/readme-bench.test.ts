/**
 * Benchmark tables (docs/benchmarks.md) and the README's headline numbers equal what the committed
 * bench results say (bench/readme-tables.ts renders every marked block of README.md and docs/*.md).
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { BENCH_SOURCES, sourcesOf } from '../bench/bench-sources';
import { markdownFiles, markedBlocks, markedFiles, missingResults, renderMarkdown, RENDERERS, unknownBlocks } from '../bench/readme-tables';
import { sourcesCommitOf, staleness } from '../bench/stale';
import { importClosure } from '../src/support/import-graph';

const root = join(__dirname, '..');
const results = join(root, 'bench', 'results');
const read = (file: string) => readFileSync(join(root, file), 'utf8');
const benchmarks = read('docs/benchmarks.md');
const readme = read('README.md');

/** A copy of `text` with the first whole number in a table cell after `marker` raised by one. */
function tamper(text: string, marker: string): string {
  const start = text.indexOf(marker);
  expect(start).toBeGreaterThanOrEqual(0);
  return text.slice(0, start) + text.slice(start).replace(/\| (\d+) \|/, (_m, n: string) => `| ${Number(n) + 1} |`);
}

/** Blocks that live outside docs/benchmarks.md, by file (the rest are all there). */
const ELSEWHERE: Record<string, string[]> = {
  'README.md': ['headline', 'demo', 'demo-act2-findings', 'render-caption'],
  'docs/demo.md': ['demo-act1', 'demo-act1-findings', 'demo-act2', 'demo-act2-findings'],
  'docs/pictures.md': ['render-caption'],
  'docs/operations.md': ['prediction-kinds', 'capacity'],
  'docs/real-ranks.md': ['detection-real'],
  'docs/rebalancing.md': ['rebalance-planning', 'rebalance-slow-rank'],
  'docs/oracle-gap.md': ['oracle-gap', 'oracle-gap-sweep'],
  'docs/faults.md': ['chaos', 'chaos-scale'],
};
/** Blocks in docs/benchmarks.md as well as elsewhere. */
const ALSO_IN_BENCHMARKS = ['prediction-kinds', 'detection-real', 'chaos-scale'];

/** Lines of `text` that measure something outside a marked block: a "Measured at commit" line between blocks, a closing marker with no open block. */
function orphanedMeasurements(text: string): string[] {
  const out: string[] = [];
  let open: string | null = null;
  text.split('\n').forEach((line, i) => {
    const start = /<!-- bench:([\w-]+) -->/.exec(line);
    const end = /<!-- \/bench:([\w-]+) -->/.exec(line);
    if (start) open = start[1];
    else if (end) {
      if (open !== end[1]) out.push(`line ${i + 1}: ${line.trim()} closes no open block`);
      open = null;
    } else if (open === null && line.includes('Measured at commit')) out.push(`line ${i + 1}: ${line.slice(line.indexOf('Measured at commit')).trim()}`);
  });
  return out;
}

/** A copy of bench/results without `file` (a results file missing). */
function resultsWithout(file: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'pipemorph-results-'));
  for (const name of readdirSync(results)) if (name !== file) copyFileSync(join(results, name), join(dir, name));
  return dir;
}

describe('benchmark tables', () => {
  it('docs/benchmarks.md has every bench table as a marked block, the other files theirs, and every renderer is used', () => {
    const elsewhere = new Set(Object.values(ELSEWHERE).flat().filter((name) => !ALSO_IN_BENCHMARKS.includes(name)));
    const tables = Object.keys(RENDERERS).filter((name) => !elsewhere.has(name));
    expect(tables).toEqual(expect.arrayContaining(['real', 'topology', 'prediction', 'e2e', 'e2e-dp', 'e2e-paced', 'engine-speed', 'engine-quality', 'engine-optimum', 'engine-time-limit', 'engine-device', 'daemon', 'optimal-line', 'render', 'soak', 'detection-real', 'prediction-kinds', 'scale-tail', 'daemon-loop']));
    expect(markedBlocks(benchmarks).sort()).toEqual(tables.sort());
    for (const [file, names] of Object.entries(ELSEWHERE)) expect({ file, blocks: markedBlocks(read(file)).sort() }).toEqual({ file, blocks: [...names].sort() });
    const used = new Set(markedFiles(root).flatMap((path) => markedBlocks(readFileSync(path, 'utf8'))));
    expect(Object.keys(RENDERERS).filter((name) => !used.has(name))).toEqual([]);
  });

  it('no hand-typed demo table or timeline figures are left in the README', () => {
    const outside = readme.replace(/<!-- bench:([a-z0-9-]+) -->[\s\S]*?<!-- \/bench:\1 -->/g, '');
    expect(outside).not.toMatch(/phase +iterations +mean ms/);
    expect(outside).not.toMatch(/bubble rate \d/);
    expect(outside).not.toMatch(/\d+ ms -> \d+ ms/);
  });

  it('README.md and docs/benchmarks.md hold no table outside the rendered blocks (a table typed by hand is caught)', () => {
    const handTables = (text: string) =>
      text
        .replace(/<!-- bench:([a-z0-9-]+) -->[\s\S]*?<!-- \/bench:\1 -->/g, '')
        .replace(/```[\s\S]*?```/g, '')
        .split('\n')
        // A row with a cell that is a figure (a number, maybe with a unit), not one that merely names something with a digit.
        .filter((line) => /^\|/.test(line) && /\|\s*\**[-+]?\d[\d.,]*(\s*\/\s*[-+]?\d[\d.,]*)*\s*(ms|s|x|%|MB|kB|µs)?\s*(\([^)]*\))?\**\s*(?=\|)/.test(line));
    expect(handTables(readme)).toEqual([]);
    expect(handTables(benchmarks)).toEqual([]);
    // The twin: a row typed below a block is found.
    const typed = benchmarks.replace('<!-- /bench:render -->', '<!-- /bench:render -->\n\n| case | render |\n|---|---|\n| 8 stages | 0.6 ms |');
    expect(handTables(typed)).toEqual(['| 8 stages | 0.6 ms |']);
  });

  it("the README has the headline block, and it names the numbers it is rendered from", () => {
    expect(markedBlocks(readme)).toEqual(expect.arrayContaining(['headline']));
    const body = readme.slice(readme.indexOf('<!-- bench:headline -->'), readme.indexOf('<!-- /bench:headline -->'));
    expect(body).toMatch(/\d+\.\d\dx/);
    expect(body).toContain('(docs/benchmarks.md#');
  });

  it('renders every Markdown file that holds markers: README.md and docs/benchmarks.md', () => {
    const files = markedFiles(root).map((path) => relative(root, path));
    expect(files).toEqual(expect.arrayContaining(['README.md', 'docs/benchmarks.md']));
    expect(markdownFiles(root).map((path) => relative(root, path))).toEqual(expect.arrayContaining(['README.md', 'docs/benchmarks.md', 'docs/operations.md']));
  });

  it('every marker names a block the renderer knows', () => {
    for (const path of markdownFiles(root)) expect({ file: relative(root, path), unknown: unknownBlocks(readFileSync(path, 'utf8')) }).toEqual({ file: relative(root, path), unknown: [] });
    expect(unknownBlocks('<!-- bench:e2e-typo -->\n| 1 |\n<!-- /bench:e2e-typo -->')).toEqual(['e2e-typo']);
  });

  it('every marked block equals its rendering from bench/results (npm run readme:tables rewrites them)', () => {
    for (const path of markedFiles(root)) {
      const text = readFileSync(path, 'utf8');
      expect({ file: relative(root, path), text: renderMarkdown(text, results) }).toEqual({ file: relative(root, path), text });
    }
  });

  it('every marked block has its results file, and a missing one fails the rendering', () => {
    for (const path of markedFiles(root)) expect({ file: relative(root, path), missing: missingResults(readFileSync(path, 'utf8'), results) }).toEqual({ file: relative(root, path), missing: [] });
    // The twin: the demo's results gone, the README's demo blocks cannot be rendered and say so.
    const without = resultsWithout('demo.json');
    try {
      expect(missingResults(readme, without)).toEqual(['bench:demo: demo.json', 'bench:demo-act2-findings: demo.json']);
      expect(() => renderMarkdown(readme, without)).toThrow(/no results for bench:demo: demo\.json/);
      // A block of several files fails on any one of them.
      const noEngine = resultsWithout('engine.json');
      try {
        expect(() => renderMarkdown(readme, noEngine)).toThrow(/bench:headline: engine\.json/);
      } finally {
        rmSync(noEngine, { recursive: true, force: true });
      }
    } finally {
      rmSync(without, { recursive: true, force: true });
    }
  });

  it('every results file declares the sources it measures (bench/bench-sources.ts)', () => {
    const files = readdirSync(results).filter((f) => f.endsWith('.json')).map((f) => f.replace(/\.json$/, ''));
    expect(files.filter((name) => !BENCH_SOURCES[name])).toEqual([]);
  });

  it('a bench that starts the daemon measures its planning worker too, which the daemon loads by path, not by import', () => {
    for (const name of ['daemon', 'scale', 'scale-out', 'chaos-scale', 'real']) expect({ name, worker: sourcesOf(root, name)!.includes('src/daemon/planning/planning.worker.ts') }).toEqual({ name, worker: true });
    // The twin: the imports alone leave it out, so a change to it would have left every result fresh.
    expect(importClosure(root, BENCH_SOURCES.daemon.entries)).not.toContain('src/daemon/planning/planning.worker.ts');
  });

  it('bench:stale calls a result measured before its sources last changed stale, one measured at that change fresh, and an unstamped one stale', () => {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
    const sourcesCommit = sourcesCommitOf(sourcesOf(root, 'render')!)!;
    const stamp = (commit: string) => ({ commit, dirty: false, measuredAt: '2026-01-01T00:00:00.000Z', command: 'npm run bench:render', machine: { cores: 2, loadBefore: [0, 0, 0], loadAfter: [0, 0, 0], node: 'v20' } });
    const dir = mkdtempSync(join(tmpdir(), 'pipemorph-stale-'));
    try {
      const write = (name: string, body: object) => writeFileSync(join(dir, `${name}.json`), JSON.stringify(body));
      write('render', { bench: 'render', stamp: stamp(sourcesCommit) });
      write('engine', { bench: 'engine' });
      const at = Object.fromEntries(staleness(dir).map((row) => [row.results, row.stale]));
      expect(at).toEqual({ 'render.json': false, 'engine.json': true });
      // The twin: the same result stamped at the commit before that change is stale.
      write('render', { bench: 'render', stamp: stamp(git('rev-parse', `${sourcesCommit}^`)) });
      expect(staleness(dir).find((row) => row.results === 'render.json')?.stale).toBe(true);
      // A dirty tree is not the commit it names.
      write('render', { bench: 'render', stamp: { ...stamp(sourcesCommit), dirty: true } });
      expect(staleness(dir).find((row) => row.results === 'render.json')?.stale).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rendering is idempotent', () => {
    const once = renderMarkdown(benchmarks, results);
    expect(renderMarkdown(once, results)).toBe(once);
    const readmeOnce = renderMarkdown(readme, results);
    expect(renderMarkdown(readmeOnce, results)).toBe(readmeOnce);
  });

  it('catches a number changed by hand in docs/benchmarks.md', () => {
    const tampered = tamper(benchmarks, '<!-- bench:real -->');
    expect(tampered).not.toBe(benchmarks);
    expect(renderMarkdown(tampered, results)).not.toBe(tampered);
    expect(renderMarkdown(tampered, results)).toBe(benchmarks);
  });

  it("catches a number changed by hand in the README's headline paragraph", () => {
    const start = readme.indexOf('<!-- bench:headline -->');
    const tampered = readme.slice(0, start) + readme.slice(start).replace(/(\d+)\.(\d\d)x/, (_m, a: string, b: string) => `${a}.${b === '99' ? '98' : String(Number(b) + 1).padStart(2, '0')}x`);
    expect(tampered).not.toBe(readme);
    expect(renderMarkdown(tampered, results)).toBe(readme);
  });

  it('no measurement is left outside a rendered block: no unmatched marker, no "Measured at commit" line between blocks', () => {
    for (const path of markdownFiles(root)) expect({ file: relative(root, path), orphans: orphanedMeasurements(readFileSync(path, 'utf8')) }).toEqual({ file: relative(root, path), orphans: [] });
    // Twin: a rendered block's old tail left behind after its closing marker (docs/rebalancing.md had one).
    const orphan = '<!-- bench:x -->\n| 1 |\n<sub>Measured at commit abc on 2026-12-07</sub>\n<!-- /bench:x -->\n\n<sub>Measured at commit def on 2026-11-28</sub>\n<!-- /bench:x -->\n';
    expect(orphanedMeasurements(orphan)).toEqual(['line 6: Measured at commit def on 2026-11-28</sub>', 'line 7: <!-- /bench:x --> closes no open block']);
  });

  it('each rendered table says what it was measured at', () => {
    const block = benchmarks.slice(benchmarks.indexOf('<!-- bench:render -->'), benchmarks.indexOf('<!-- /bench:render -->'));
    expect(block).toMatch(/<sub>(Measured at commit [0-9a-f]{10}|Not stamped)/);
  });
});
