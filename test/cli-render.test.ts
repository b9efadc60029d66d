/**
 * `pipemorph render` on the built binary (npm test builds first): an SVG on stdout, the same bytes
 * for the same input, and the one-line user-error contract of the other commands.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..');
const BIN = join(ROOT, 'dist/src/cli/main.js');
const MEGATRON = join(ROOT, 'bench/profiles/megatron-gpt-8stage-32mb.json');
const dir = mkdtempSync(join(tmpdir(), 'pipemorph-render-'));
/** The paper's Fig. 4 pipeline: 4 stages, 12 microbatches, every op 10 ms. */
const UNIFORM = { stages: 4, microbatches: 12, fMs: [10, 10, 10, 10], bMs: [10, 10, 10, 10], wMs: [10, 10, 10, 10], linkMs: [0, 0, 0] };

function run(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function file(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

function expectUserError(result: { code: number | null; stdout: string; stderr: string }, pattern: RegExp): void {
  expect(result.code).toBe(2);
  expect(result.stdout).toBe('');
  expect(result.stderr.trim().split('\n')).toHaveLength(1);
  expect(result.stderr).toMatch(/^pipemorph: /);
  expect(result.stderr).toMatch(pattern);
}

beforeAll(() => {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build first`);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('pipemorph render', () => {
  it('renders the Megatron plan against static ZeroBubble under a straggler, deterministically', () => {
    const args = ['render', '--profile', MEGATRON, '--policy', 'adaptive', '--delay', '6=120', '--compare', 'zb'];
    const first = run(...args);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(first.stdout.trimEnd().endsWith('</svg>')).toBe(true);
    const titles = [...first.stdout.matchAll(/class="panel-title"[^>]*>([^<]*)</g)].map((m) => m[1]);
    expect(titles).toHaveLength(2);
    expect(titles[0]).toMatch(/^zb \(healthy ZeroBubble plan, unchanged\) · iteration \d+ ms · bubble rate \d+\.\d%$/);
    expect(titles[1]).toMatch(/^policy adaptive · iteration \d+ ms/);
    expect(first.stdout.match(/<rect class="[FBW]" data-op=/g)).toHaveLength(2 * 8 * 96);
    expect(first.stdout).toContain('<g class="slow-link" data-link="6">');
    expect(run(...args).stdout).toBe(first.stdout);
  });

  it('renders a schedule file (a plan output) under the profile: Fig. 4 at 390 ms', () => {
    const plan = run('plan', '--profile', file('u.json', UNIFORM), '--warmup', '7,5,3,1');
    const svg = run('render', '--profile', join(dir, 'u.json'), '--schedule', file('s.json', plan.stdout));
    expect(svg.code).toBe(0);
    expect(svg.stdout).toContain('data-iteration-ms="390"');
    expect(svg.stdout.match(/<rect class="[FBW]" data-op=/g)).toHaveLength(4 * 36);
  });

  it('refuses bad input with one line and exit code 2', () => {
    const profile = file('u2.json', UNIFORM);
    expectUserError(run('render', '--profile', profile), /exactly one of --schedule S.json or --policy/);
    expectUserError(run('render', '--profile', profile, '--policy', 'adaptive', '--schedule', 'x.json'), /exactly one of/);
    expectUserError(run('render', '--profile', profile, '--policy', 'fastest'), /--policy must be one of/);
    expectUserError(run('render', '--profile', profile, '--policy', 'adaptive', '--compare', 'zz'), /--compare must be one of .*zb/);
    expectUserError(run('render', '--profile', profile, '--policy', 'adaptive', '--delay', '9=10'), /--delay names link 9/);
    expectUserError(run('render', '--profile', profile, '--schedule', file('bad.json', [['F0'], [], [], []])), /misses/);
    expectUserError(run('render', '--profile', file('p.json', '{"stages": -1'), '--policy', 'adaptive'), /not valid JSON/);
    expectUserError(run('render', '--profile', profile, '--policy', 'adaptive', '--colour', 'red'), /unknown option --colour/);
  });
});
