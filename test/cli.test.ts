/**
 * The CLI contract other tools depend on, exercised on the built binary (npm test builds first).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SLOW_LAST_LINK from '../bench/profiles/device-memory-4x16-slow-last-link.json';
import { expectUserError } from './support/cli-user-error';

const ROOT = join(__dirname, '..');
const BIN = join(ROOT, 'dist/src/cli/main.js');
const MEGATRON = join(ROOT, 'bench/profiles/megatron-gpt-8stage-32mb.json');
const dir = mkdtempSync(join(tmpdir(), 'pipemorph-cli-'));

function run(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function json(...args: string[]): any {
  const result = run(...args);
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout);
}

function file(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

/** The paper's Fig. 4 pipeline: 4 stages, 12 microbatches, every op 10 ms. */
const UNIFORM = { stages: 4, microbatches: 12, fMs: [10, 10, 10, 10], bMs: [10, 10, 10, 10], wMs: [10, 10, 10, 10], linkMs: [0, 0, 0] };

beforeAll(() => {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build first`);
});

describe('pipemorph plan', () => {
  it.each(['initial', 'adaptive', 'search', '1f1b', 'gpipe'])('plans the Megatron profile with policy %s', (policy) => {
    const out = json('plan', '--profile', MEGATRON, '--policy', policy, '--max-evaluations', '200');
    expect(Object.keys(out).sort()).toEqual(['bubbleRate', 'iterationMs', 'policy', 'stages', 'warmup']);
    expect(out.policy).toBe(policy);
    expect(out.warmup).toHaveLength(8);
    expect(out.stages).toHaveLength(8);
    for (const ops of out.stages) expect(new Set(ops).size).toBe(96);
    expect(out.iterationMs).toBeGreaterThan(32 * (41.678 + 38.731 + 32.833) - 1e-6);
    expect(out.bubbleRate).toBeGreaterThan(0);
    expect(out.bubbleRate).toBeLessThan(1);
  });

  it('forces warm-up counts and reproduces the paper Fig. 4 time (390 ms)', () => {
    const out = json('plan', '--profile', file('uniform.json', UNIFORM), '--warmup', '7,5,3,1');
    expect(out.policy).toBe('fixed');
    expect(out.warmup).toEqual([7, 5, 3, 1]);
    expect(out.stages[0].slice(0, 8)).toEqual(['F0', 'F1', 'F2', 'F3', 'F4', 'F5', 'F6', 'B0']);
    expect(out.iterationMs).toBe(390);
  });

  it('adds tolerance and search details only with --details', () => {
    const out = json('plan', '--profile', MEGATRON, '--policy', 'search', '--max-evaluations', '50', '--details');
    expect(out.links).toHaveLength(7);
    expect(out.search.evaluations).toBeLessThanOrEqual(50);
    expect(out.search.timedOut).toBe(false);
    expect(out.inflightCap).toHaveLength(out.warmup.length);
    expect(out.lookAhead).toHaveLength(out.warmup.length);
    out.lookAhead.forEach((flags: string[]) => flags.forEach((f) => expect(['W', 'F', 'WBeforeF', 'WAfterLastB']).toContain(f)));
    expect(out.iterationMs).toBeLessThanOrEqual(out.search.adaptiveIterationMs + 1e-9);
    expect(out.lowerBoundMs).toBeLessThanOrEqual(out.iterationMs + 1e-9);
  });
});

describe('pipemorph plan --memory device', () => {
  // Room for 6 activations per device, 60 ms on the last link (the planner spec's instance).
  const TIGHT = SLOW_LAST_LINK;

  it('plans the search within device memory: faster than Alg. 1, peaks within the limit; the default may use the host', () => {
    const profile = file('tight.json', TIGHT);
    const initial = json('plan', '--profile', profile, '--policy', 'initial');
    const device = json('plan', '--profile', profile, '--policy', 'search', '--max-evaluations', '200', '--memory', 'device', '--details');
    expect(device.warmup).toEqual([6, 6, 6, 1]);
    expect(device.iterationMs).toBeLessThan(initial.iterationMs);
    for (const peak of device.peakMemory) expect(peak).toBeLessThanOrEqual(6000);
    const host = json('plan', '--profile', profile, '--policy', 'search', '--max-evaluations', '200', '--details');
    expect(Math.max(...host.peakMemory)).toBeGreaterThan(6000);
  });

  it('rejects an unknown memory and policies it does not apply to', () => {
    const profile = file('tight.json', TIGHT);
    expectUserError(run('plan', '--profile', profile, '--memory', 'gpu'), /--memory must be host or device/);
    expectUserError(run('plan', '--profile', profile, '--policy', 'gpipe', '--memory', 'device'), /--memory device/);
  });
});

describe('pipemorph plan --policy optimal', () => {
  const SLOW = { stages: 4, microbatches: 8, fMs: [9, 7, 12, 20], bMs: [10, 8, 13, 22], wMs: [5, 4, 6, 10], linkMs: [1, 1, 90] };

  it('solves the MILP from a one-evaluation search without polish, proves it optimal and prints the gap with --details; the schedule replays to its time', () => {
    const profile = file('slow.json', SLOW);
    const out = json('plan', '--profile', profile, '--policy', 'optimal', '--max-evaluations', '1', '--polish-nodes', '0', '--time-limit-ms', '5000', '--details');
    expect(out.policy).toBe('optimal');
    expect(out.optimal.proven).toBe(true);
    expect(out.optimal.gap).toBeLessThan(1e-5);
    expect(out.iterationMs).toBeLessThan(out.optimal.searchIterationMs);
    expect(out.optimal.boundMs).toBeGreaterThanOrEqual(out.lowerBoundMs - 1e-9);
    const replay = json('simulate', '--profile', profile, '--schedule', file('optimal.json', out.stages));
    expect(replay.iterationMs).toBe(out.iterationMs);
    const plain = json('plan', '--profile', profile, '--policy', 'optimal', '--max-evaluations', '1');
    expect(Object.keys(plain).sort()).toEqual(['bubbleRate', 'iterationMs', 'policy', 'stages', 'warmup']);
  });

  it('rejects --time-limit-ms without the optimal policy', () => {
    expectUserError(run('plan', '--profile', file('slow2.json', SLOW), '--policy', 'search', '--time-limit-ms', '5'), /--time-limit-ms/);
  });
});

describe('pipemorph simulate', () => {
  it('replays a plan output and reports the same time as the plan', () => {
    const plan = json('plan', '--profile', MEGATRON, '--policy', 'adaptive');
    const schedule = file('plan.json', plan);
    const out = json('simulate', '--profile', MEGATRON, '--schedule', schedule);
    expect(out.iterationMs).toBe(plan.iterationMs);
    expect(out.bubbleRate).toBe(plan.bubbleRate);
    expect(out.warmup).toEqual(plan.warmup);
    expect(out.timeline).toBeUndefined();
    const bare = json('simulate', '--profile', MEGATRON, '--schedule', file('stages.json', plan.stages), '--timeline');
    expect(bare.iterationMs).toBe(plan.iterationMs);
    expect(bare.timeline.ops).toHaveLength(8 * 96);
    expect(bare.timeline.messages).toHaveLength(2 * 32 * 7);
  });

  it('shows the cost of a static schedule under a straggler (paper Fig. 5: 440 ms at 20 ms)', () => {
    const plan = json('plan', '--profile', file('u.json', UNIFORM), '--warmup', '7,5,3,1');
    const slow = file('slow.json', { ...UNIFORM, linkMs: [20, 0, 0] });
    expect(json('simulate', '--profile', slow, '--schedule', file('p.json', plan)).iterationMs).toBe(440);
  });
});

describe('pipemorph tolerance and compare', () => {
  it('reports the largest delay each link absorbs (Eq. 1)', () => {
    const out = json('tolerance', '--profile', file('t.json', { ...UNIFORM, linkMs: [15, 5, 0] }), '--warmup', '7,5,3,1');
    expect(out.links.map((l: any) => l.toleranceMs)).toEqual([10, 10, 10]);
    expect(out.links.map((l: any) => l.absorbed)).toEqual([false, true, true]);
  });

  it('compares policies under an injected straggler', () => {
    const out = json('compare', '--profile', MEGATRON, '--delay', '6=120', '--budget-ms', '20');
    const byName = Object.fromEntries(out.rows.map((r: any) => [r.name, r.iterationMs]));
    expect(byName.adaptive).toBeLessThan(byName['zb-static']);
    expect(byName.search).toBeLessThanOrEqual(byName.adaptive + 1e-9);
    const table = run('compare', '--profile', MEGATRON, '--delay', '6=120', '--table');
    expect(table.stdout).toMatch(/zb-static/);
  });
});

describe('bad input: one line, exit 2, never a stack trace', () => {
  const schedule = (stages: string[][]) => file('s.json', { stages });
  const ok = () => json('plan', '--profile', file('ok.json', UNIFORM), '--warmup', '4,3,2,1').stages as string[][];

  it.each<[string, () => string[], RegExp]>([
    ['malformed JSON', () => ['plan', '--profile', file('bad.json', '{"stages": 4,')], /not valid JSON/],
    ['a missing file', () => ['plan', '--profile', join(dir, 'nope.json')], /cannot read profile .*ENOENT/],
    ['wrong array length', () => ['plan', '--profile', file('len.json', { ...UNIFORM, fMs: [1, 2] })], /fMs must have 4 entries/],
    ['a negative time', () => ['plan', '--profile', file('neg.json', { ...UNIFORM, bMs: [1, -2, 1, 1] })], /bMs\[1\] must be >= 0/],
    ['a non-finite time', () => ['plan', '--profile', file('inf.json', '{"stages":4,"microbatches":12,"fMs":[1,1,1,1e999],"bMs":[1,1,1,1],"wMs":[1,1,1,1],"linkMs":[0,0,0]}')], /fMs\[3\] must be a finite number/],
    ['an unknown policy', () => ['plan', '--profile', file('u2.json', UNIFORM), '--policy', 'fast'], /--policy must be one of/],
    ['increasing warm-up', () => ['plan', '--profile', file('u3.json', UNIFORM), '--warmup', '1,2,3,4'], /must not increase/],
    ['an unknown command', () => ['frobnicate'], /unknown command "frobnicate"/],
    ['an unknown option', () => ['plan', '--profile', MEGATRON, '--fast'], /option --fast needs a value|unknown option/],
    ['a schedule missing an op', () => {
      const stages = ok();
      stages[2] = stages[2].filter((op) => op !== 'W7');
      return ['simulate', '--profile', file('u4.json', UNIFORM), '--schedule', schedule(stages)];
    }, /stage 2 misses W7/],
    ['a schedule repeating an op', () => {
      const stages = ok();
      stages[1][stages[1].indexOf('W3')] = 'B3';
      return ['simulate', '--profile', file('u5.json', UNIFORM), '--schedule', schedule(stages)];
    }, /stage 1: B3 appears more than once/],
    ['a schedule that deadlocks', () => {
      const stages = ok();
      // Stage 1 puts B0 before its F0: B0 needs F0 on the same stage, so it never becomes ready.
      stages[1] = ['B0', ...stages[1].filter((op) => op !== 'B0')];
      return ['simulate', '--profile', file('u6.json', UNIFORM), '--schedule', schedule(stages)];
    }, /deadlock.*stage 1 waits for B0/],
  ])('rejects %s', (_name, args, pattern) => {
    expectUserError(run(...args()), pattern);
  });
});
