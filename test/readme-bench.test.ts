/**
 * Benchmark tables (docs/benchmarks.md) and the README's headline numbers equal what the committed
 * bench results say (bench/readme-tables.ts renders every marked block of README.md and docs/*.md).
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { BENCH_SOURCES } from '../bench/bench-sources';
import { markdownFiles, markedBlocks, markedFiles, missingResults, renderMarkdown, RENDERERS, unknownBlocks } from '../bench/readme-tables';
import { staleness } from '../bench/stale';

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

describe('benchmark tables', () => {
  it('docs/benchmarks.md has every bench table as a marked block', () => {
    // The README's headline, the demo's tables (README.md, docs/demo.md) and re-balancing's (docs/rebalancing.md) and real-rank detection's (docs/real-ranks.md) live elsewhere.
    const tables = Object.keys(RENDERERS).filter((name) => !['headline', 'demo', 'demo-dp', 'rebalance-planning', 'rebalance-slow-rank', 'detection-real'].includes(name));
    expect(tables).toEqual(expect.arrayContaining(['real', 'topology', 'prediction', 'e2e', 'e2e-dp', 'e2e-paced', 'engine-speed', 'engine-quality', 'engine-optimum', 'engine-time-limit', 'engine-device', 'daemon', 'optimal-line', 'render', 'soak']));
    expect(markedBlocks(benchmarks)).toEqual(tables);
  });

  it("the README has the headline block, and it names the numbers it is rendered from", () => {
    expect(markedBlocks(readme)).toEqual(['demo', 'headline']);
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

  it('every marked block has its results file: a missing one fails, it does not leave the block as it was (issue 30)', () => {
    for (const path of markedFiles(root)) expect({ file: relative(root, path), missing: missingResults(readFileSync(path, 'utf8'), results) }).toEqual({ file: relative(root, path), missing: [] });
    // Twin: the results without detection.json.
    const dir = mkdtempSync(join(tmpdir(), 'pipemorph-results-'));
    try {
      cpSync(results, dir, { recursive: true });
      rmSync(join(dir, 'detection.json'));
      expect(missingResults(benchmarks, dir)).toEqual(['detection', 'detection-goals']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('every results file declares the sources it measures (npm run bench:stale), and an undeclared one is reported stale', () => {
    const files = readdirSync(results).filter((f) => f.endsWith('.json')).map((f) => f.replace(/\.json$/, ''));
    expect(files.filter((f) => !(f in BENCH_SOURCES))).toEqual([]);
    const dir = mkdtempSync(join(tmpdir(), 'pipemorph-results-'));
    try {
      cpSync(join(results, 'render.json'), join(dir, 'mystery.json'));
      expect(staleness(dir)).toEqual([expect.objectContaining({ results: 'mystery.json', stale: true, why: 'no sources declared in bench/bench-sources.ts' })]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('each rendered table says what it was measured at', () => {
    const block = benchmarks.slice(benchmarks.indexOf('<!-- bench:render -->'), benchmarks.indexOf('<!-- /bench:render -->'));
    expect(block).toMatch(/<sub>(Measured at commit [0-9a-f]{10}|Not stamped)/);
  });
});
