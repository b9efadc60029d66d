/**
 * `pipemorph corpus` and `pipemorph replay` on the built binary (npm test builds first): a corpus
 * scenario recorded as JSONL replays to the decisions the benchmark's replay makes, a config
 * change shows in the decisions, bad lines are counted and skipped, bad --set values are refused,
 * and a job's streams in a real Redis replay like its recording.
 */
import Redis from 'ioredis';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { detectionCorpus } from '../src/corpus/corpus';
import { loadConfig } from '../src/daemon/config/load-config';
import { loadMilpSolver } from '../src/daemon/planning/load-milp-solver.util';
import { jobKeys } from '../src/protocol/redis-keys';
import { runScenario } from '../src/replay/run-scenario';
import { RedisServer } from './support/redis-server';
import { runCli } from './cli/run-cli';
import { expectUserError } from './support/cli-user-error';

const ROOT = join(__dirname, '..');
const BIN = join(ROOT, 'dist/src/cli/main.js');
const dir = mkdtempSync(join(tmpdir(), 'pipemorph-replay-'));
/** Small and quick (0.6 s of replay): a 30 ms straggler on a 4-stage job, acted on twice and recovered from. */
const SCENARIO = '4x12 dp2, 30 ms on link 2';
const SCALE = '0.01';
const RECORDING = join(dir, 'recording.jsonl');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(...args: string[]): Run {
  const result = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', maxBuffer: 256 << 20 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Async, so a Redis server in this process keeps answering meanwhile. */
const runAsync = (...args: string[]): Promise<Run> => runCli(...args);

function json(result: Run): any {
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout);
}

/** The switches a replay took besides the first plan, as [iteration, kind]. */
function takenOf(replay: { decisions: Array<{ verdict: string; kind: string; iteration: number }> }): Array<[number, string]> {
  return replay.decisions.filter((d) => d.verdict === 'taken' && d.kind !== 'initial').map((d) => [d.iteration, d.kind]);
}

let recorded: any;

beforeAll(() => {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build first`);
  recorded = json(run('corpus', '--scenario', SCENARIO, '--scale', SCALE, '--out', RECORDING));
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('pipemorph corpus', () => {
  it('writes the registration, then every report of every iteration in order, each with its sentAt', () => {
    const lines = readFileSync(RECORDING, 'utf8').trimEnd().split('\n');
    const registration = JSON.parse(lines[0]);
    expect(registration).toMatchObject({ type: 'register', protocol: 1, jobId: 'corpus-27', stages: 4, dp: 2, microbatches: 12 });
    expect(recorded).toMatchObject({ scenario: SCENARIO, iterations: 700, reports: 700 * 8 });
    expect(lines).toHaveLength(1 + recorded.reports);
    const reports = lines.slice(1).map((l) => JSON.parse(l));
    expect(reports.every((r, k) => r.type === 'report' && r.jobId === 'corpus-27' && r.iteration === Math.floor(k / 8) && typeof r.sentAt === 'number')).toBe(true);
    // Ranks run the schedule the replayed daemon switched to, from its effective iteration.
    const [first] = recorded.switches;
    expect(reports.find((r) => r.iteration === first.effectiveIteration - 1).scheduleVersion).toBe(1);
    expect(reports.find((r) => r.iteration === first.effectiveIteration).scheduleVersion).toBe(2);
  });

  it('names its scenarios, and refuses an unknown one', () => {
    const list = run('corpus', '--list', '--scale', SCALE);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(SCENARIO);
    expect(list.stdout).toContain('8x32 dp4, 40 ms flapping (3 on, 7 off)');
    expectUserError(run('corpus', '--scenario', 'no such job'), /no corpus scenario named "no such job" \(pipemorph corpus --list names them\)/);
  });
});

describe('pipemorph replay', () => {
  it('with the default config reproduces the decisions the benchmark replay makes on the same scenario', async () => {
    const replay = json(run('replay', '--recording', RECORDING, '--json'));
    const config = loadConfig({});
    const sc = detectionCorpus(Number(SCALE)).find((s) => s.name === SCENARIO)!;
    const bench = runScenario(sc, config, await loadMilpSolver());
    expect(bench.switches.length).toBeGreaterThanOrEqual(2);
    expect(takenOf(replay)).toEqual(bench.switches.map((s) => [s.iteration, s.kind]));
    expect(replay.decisions.filter((d: any) => d.verdict === 'taken' && d.kind !== 'initial').map((d: any) => d.effectiveIteration)).toEqual(bench.switches.map((s) => s.effectiveIteration));
    expect(replay.summary).toMatchObject({ reports: 5600, iterations: { first: 0, last: 699, count: 700 }, duplicates: 0, late: 0, rejected: { total: 0 }, switches: bench.switches.length, declined: bench.declined });
    expect(replay.decisions[0]).toMatchObject({ kind: 'initial', verdict: 'taken', scheduleVersion: 1, effectiveIteration: 0 });
  });

  it('keeps time from the reports iteration times when they carry no sentAt: the same decisions', () => {
    const lines = readFileSync(RECORDING, 'utf8').trimEnd().split('\n');
    const unstamped = join(dir, 'unstamped.jsonl');
    writeFileSync(unstamped, [lines[0], ...lines.slice(1).map((l) => { const r = JSON.parse(l); delete r.sentAt; return JSON.stringify(r); })].join('\n') + '\n');
    expect(takenOf(json(run('replay', '--recording', unstamped, '--json')))).toEqual(takenOf(json(run('replay', '--recording', RECORDING, '--json'))));
  });

  it('prints one line per decision and a summary, and draws the SVG', () => {
    const svg = join(dir, 'replay.svg');
    const out = run('replay', '--recording', RECORDING, '--svg', svg);
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    const lines = out.stdout.split('\n');
    expect(lines[0]).toBe(`replay of corpus-27 (4 stages x 12 microbatches, dp 2) from ${RECORDING}`);
    expect(lines).toContainEqual(expect.stringMatching(/^iteration\s+kind\s+verdict\s+version\s+stragglers\s+reason$/));
    expect(lines).toContainEqual(expect.stringMatching(/^start\s+initial\s+taken\s+v1 from 0\s+-\s+first schedule of the job$/));
    for (const s of recorded.switches) expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^${s.iteration}\\s+${s.kind}\\s+taken\\s+v\\d+ from ${s.effectiveIteration}\\s`)));
    expect(out.stdout).toMatch(/^reports: 5600 taken from 700 iterations \(0-699\); 0 duplicates/m);
    expect(out.stdout).toMatch(new RegExp(`^switches: ${recorded.switches.length} taken besides the first plan`, 'm'));
    const picture = readFileSync(svg, 'utf8');
    expect(picture.startsWith('<svg xmlns="http://www.w3.org/2000/svg" class="decision-replay"')).toBe(true);
    expect(picture).toContain('dp 0 link 2-3');
    expect(picture.match(/<g class="switch-marker"/g)).toHaveLength(1 + recorded.switches.length);
  });

  it('counts bad lines and messages with their line number and the reason, skips them, and replays the rest unchanged', () => {
    const lines = readFileSync(RECORDING, 'utf8').trimEnd().split('\n');
    const report = JSON.parse(lines[20]);
    const bad = [
      lines[0],
      ...lines.slice(1, 10),
      '{"type": "report", "rank": 1, oops', // line 11: not JSON
      JSON.stringify({ ...report, links: 'none' }), // line 12: fails the schema
      JSON.stringify({ ...report, rank: 99 }), // line 13: not a reporting rank
      '', // blank: skipped, not counted
      JSON.stringify({ type: 'ack', protocol: 1, jobId: 'corpus-27', rank: 2, version: 2, epoch: 1, iteration: 3, accepted: true }), // line 15: skipped
      ...lines.slice(10),
    ];
    const corrupted = join(dir, 'corrupted.jsonl');
    writeFileSync(corrupted, bad.join('\n') + '\n');
    const replay = json(run('replay', '--recording', corrupted, '--json'));
    expect(replay.summary.rejected.total).toBe(3);
    expect(replay.summary.rejected.first.map((r: any) => r.where)).toEqual(['line 11', 'line 12', 'line 13']);
    expect(replay.summary.rejected.first[0].reason).toMatch(/^not valid JSON/);
    expect(replay.summary.rejected.first[1].reason).toMatch(/^report: .*links/);
    expect(replay.summary.rejected.first[2].reason).toBe('rank 99 is not a reporting rank (tp 0) of job corpus-27');
    expect(replay.summary.rejected.byReason['not valid JSON']).toBe(1);
    expect(replay.summary).toMatchObject({ reports: 5600, skipped: 1 });
    expect(takenOf(replay)).toEqual(recorded.switches.map((s: any) => [s.iteration, s.kind]));
    const text = run('replay', '--recording', corrupted).stdout;
    expect(text).toMatch(/^rejected: 3 \(/m);
    expect(text).toMatch(/^ {2}line 11: not valid JSON: /m);
    expect(text).toContain('  line 13: rank 99 is not a reporting rank (tp 0) of job corpus-27');
  });

  it('refuses a bad --set, a bad registration and wrong options with one line and exit code 2', () => {
    expectUserError(run('replay', '--recording', RECORDING, '--set', 'detection.enterAfter=0'), /invalid config .*detection\.enterAfter must be >= 1 \(given: --set detection\.enterAfter=0\)/);
    expectUserError(run('replay', '--recording', RECORDING, '--set', 'detection.enterAftr=4'), /--set detection\.enterAftr: no config key "detection\.enterAftr"/);
    expectUserError(run('replay', '--recording', RECORDING, '--set', 'control.costAware=maybe'), /control\.costAware must be boolean/);
    expectUserError(run('replay', '--recording', RECORDING, '--set', 'enterAfter'), /--set must look like section\.key=value/);
    expectUserError(run('replay', '--recording', RECORDING, '--set', 'detection.enterAfter=4', '--set', 'detection.enterAfter=5'), /--set detection\.enterAfter given twice/);
    expectUserError(run('replay', '--recording', RECORDING, '--redis', 'redis://127.0.0.1:6379', '--job', 'x'), /exactly one of --recording/);
    expectUserError(run('replay', '--redis', 'redis://127.0.0.1:6379'), /--redis needs --job/);
    expectUserError(run('replay', '--recording', join(dir, 'missing.jsonl')), /cannot read recording/);
    const notRegistration = join(dir, 'no-registration.jsonl');
    writeFileSync(notRegistration, readFileSync(RECORDING, 'utf8').split('\n').slice(1).join('\n'));
    expectUserError(run('replay', '--recording', notRegistration), /line 1 of .* is not a valid registration: registration: /);
    expectUserError(run('replay', '--recording', RECORDING, '--colour', 'red'), /unknown option --colour for "replay"/);
  });

  it('switches many more times on a flapping link with control.costAware=false than with the default (can-fail twin)', () => {
    // The exact refinement (MILP) re-runs on every spell of a flapping link; the planner is the same on both sides, and fast.
    const recording = join(dir, 'flapping.jsonl');
    json(run('corpus', '--scenario', '8x32 dp4, 40 ms flapping (3 on, 7 off)', '--iterations', '500', '--set', 'control.refinePlanner=none', '--out', recording));
    const switches = (...sets: string[]) => json(run('replay', '--recording', recording, '--json', '--set', 'control.refinePlanner=none', ...sets.flatMap((s) => ['--set', s]))).summary.switches;
    const costAware = switches();
    const chasing = switches('control.costAware=false');
    // The first spell answered, its resources given back, then (the link seen to recur) one plan kept through the spells.
    expect(costAware).toBeLessThanOrEqual(3);
    expect(chasing).toBeGreaterThan(20);
  });
});

describe('pipemorph replay --redis', () => {
  let server: RedisServer;
  let redis: Redis;

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = new Redis(server.url());
  });

  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  it("reads the job's spec and its reports stream after the newest registration, a page at a time: the recording's decisions", async () => {
    const lines = readFileSync(RECORDING, 'utf8').trimEnd().split('\n');
    const registration = JSON.parse(lines[0]);
    const keys = jobKeys(registration.jobId);
    await redis.set(keys.spec, JSON.stringify({ registration, registrationId: '1700000000000-0' }));
    // Reports of an earlier registration of the job (a restart), then the marker the daemon writes: left out.
    const stale = JSON.parse(lines[1]);
    await redis.xadd(keys.reports, '*', 'm', JSON.stringify({ ...stale, iteration: 9999, links: stale.links.map((l: any) => ({ ...l, medianMs: 500 })) }));
    await redis.xadd(keys.reports, '*', 'm', JSON.stringify({ type: 'registered', protocol: 1, jobId: registration.jobId, registrationId: '1700000000000-0' }));
    for (let k = 1; k < lines.length; k += 500) {
      const batch = redis.pipeline();
      for (const line of lines.slice(k, k + 500)) batch.xadd(keys.reports, '*', 'm', line);
      await batch.exec();
    }
    await redis.xadd(keys.reports, '*', 'm', '{not json');
    const fromRedis = json(await runAsync('replay', '--redis', server.url(), '--job', registration.jobId, '--json'));
    expect(fromRedis.source).toBe(`${server.url()} job ${registration.jobId}`);
    expect(fromRedis.summary).toMatchObject({ reports: 5600, iterations: { first: 0, last: 699 }, rejected: { total: 1 } });
    expect(fromRedis.summary.rejected.first[0].where).toMatch(/^entry \d+-\d+$/);
    expect(takenOf(fromRedis)).toEqual(takenOf(json(run('replay', '--recording', RECORDING, '--json'))));
    const missing = await runAsync('replay', '--redis', server.url(), '--job', 'no-such-job');
    expectUserError(missing, /no job no-such-job in Redis at .*: key pipemorph:\{no-such-job\}:spec does not exist/);
  });
});
