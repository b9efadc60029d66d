/**
 * Operations against a running daemon fed by emulated ranks (protocol v1 over a real Redis) with a
 * 30 ms straggler on link 2: a live scrape passes `promtool check metrics`; a real Prometheus
 * (Debian package, its own port and storage) scrapes the daemon, answers PromQL with the
 * straggler's link delay and evaluates the alert rules on it; a job the replica lets go leaves
 * no series behind. Every wait is bounded; nothing asserts how long anything takes.
 */
import { INestApplication } from '@nestjs/common';
import Redis from 'ioredis';
import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JobRegistry } from '../src/daemon/jobs/job-registry.service';
import { stepDelay } from '../src/emulator/delay/step-delay';
import { DEFAULT_EMULATION, EmulatedJob } from '../src/emulator/emulated-job';
import { RankGroup } from '../src/emulator/rank-group';
import { uniform4 } from '../src/emulator/scenarios';
import { waitFor } from './support/fake-job';
import { ROOT, run } from './support/ops';
import { redisUrlFor, startDaemon, testConfig } from './support/test-daemon';

const REDIS_URL = redisUrlFor(10);
const redis = new Redis(REDIS_URL);
const jobId = `test-ops-${process.pid}-${Date.now().toString(36)}`;
const SLOW_LINK = 2;
const DELAY_MS = 30;
const startedAt = Date.now() / 1000;
let daemon: { app: INestApplication; url: string } | null = null;
let group: RankGroup | null = null;
let prometheus: ChildProcess | null = null;
let prometheusLog = '';
let prometheusDir: string | null = null;
/** Prometheus' HTTP API answers are checked field by field; `any` keeps that terse. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

async function scrape(): Promise<string> {
  const response = await fetch(`${daemon!.url}/metrics`);
  expect(response.status).toBe(200);
  return response.text();
}

/** The value of one series in exposition text (labels in any order), or undefined. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function stopPrometheus(): Promise<void> {
  const child = prometheus;
  prometheus = null;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
  await exited;
  clearTimeout(timer);
}

beforeAll(async () => {
  daemon = await startDaemon(testConfig((c) => (c.handshake.leadMs = 2000), REDIS_URL));
  // The 4-stage profile of e2e.test.ts: 30 ms on link 2-3 from iteration 10, never healing.
  const job = new EmulatedJob(jobId, uniform4(), 1, stepDelay([{ fromIteration: 10, links: [SLOW_LINK], delayMs: DELAY_MS }]), { ...DEFAULT_EMULATION, seed: 7 });
  group = new RankGroup(redis, job, { lockstep: true, deviceActivations: [8, 8, 8, 8], hostActivations: 64 });
  await group.register();
  await group.connect();
  // Run until the straggler is detected and the job switched to an adapted schedule with delegation,
  // and the healthy yardstick (a gauge priced beside the control step, on a planning worker) is set.
  for (let i = 0; i < 120; i++) {
    await group.step();
    if (i < 20) continue;
    const text = await scrape();
    const adapted = sample(text, 'pipemorph_stragglers', { job: jobId, kind: 'pipeline' }) === 1 && (sample(text, 'pipemorph_delegated_ranks', { job: jobId }) ?? 0) > 0;
    if (adapted && sample(text, 'pipemorph_predicted_iteration_seconds', { job: jobId, schedule: 'healthy' }) !== undefined) return;
  }
  throw new Error(`the daemon did not adapt job ${jobId} to the straggler within 120 iterations`);
}, 180000);

afterAll(async () => {
  await stopPrometheus();
  if (prometheusDir) rmSync(prometheusDir, { recursive: true, force: true });
  await daemon?.app.close();
  await group?.cleanup();
  await redis.quit();
});

describe('metrics of a running daemon', () => {
  it('pass promtool check metrics', async () => {
    const text = await scrape();
    const result = run('promtool', ['check', 'metrics'], text);
    expect(`${result.stdout}${result.stderr}`).toBe('');
    expect(result.status).toBe(0);
  });

  it('describe the straggler, the adapted schedule, ingest and ownership', async () => {
    const text = await scrape();
    const job = { job: jobId };
    const delay = sample(text, 'pipemorph_link_extra_delay_seconds', { job: jobId, link: String(SLOW_LINK) })!;
    expect(delay).toBeGreaterThan(0.02);
    expect(delay).toBeLessThan(0.045);
    expect(sample(text, 'pipemorph_link_extra_delay_seconds', { job: jobId, link: '0' })).toBeLessThan(0.005);
    expect(sample(text, 'pipemorph_link_extra_delay_observed_seconds_count', { job: jobId, link: String(SLOW_LINK) })).toBeGreaterThan(0);
    expect(sample(text, 'pipemorph_stragglers', { job: jobId, kind: 'pipeline' })).toBe(1);
    expect(sample(text, 'pipemorph_schedule_version', job)).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'pipemorph_delegated_ranks', job)).toBe(2);
    expect(sample(text, 'pipemorph_replans_total', { job: jobId, kind: 'straggler' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'pipemorph_publishes_total', { job: jobId, outcome: 'committed' })).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'pipemorph_publishes_total', { job: jobId, outcome: 'fenced' })).toBe(0);
    expect(sample(text, 'pipemorph_handshake_aborts_total', { job: jobId, reason: 'timeout' })).toBe(0);
    expect(sample(text, 'pipemorph_schedule_last_commit_timestamp_seconds', job)).toBeGreaterThanOrEqual(Math.floor(startedAt));
    const current = sample(text, 'pipemorph_predicted_iteration_seconds', { job: jobId, schedule: 'current' })!;
    const staticPlan = sample(text, 'pipemorph_predicted_iteration_seconds', { job: jobId, schedule: 'static' })!;
    const healthy = sample(text, 'pipemorph_predicted_iteration_seconds', { job: jobId, schedule: 'healthy' })!;
    const committed = JSON.parse((await redis.get(group!.keys.schedule))!);
    expect(committed.reason.kind).toBe('straggler');
    expect(current).toBeLessThan(staticPlan); // the adapted schedule beats the static plan under the straggler
    expect(current).toBeLessThan((committed.prediction.newMs / 1000 + staticPlan) / 2); // near the prediction made for it
    expect(healthy).toBeLessThanOrEqual(current);
    expect(healthy).toBeGreaterThan(0);
    expect(sample(text, 'pipemorph_ingest_messages_total', { type: 'report', result: 'accepted' })).toBeGreaterThanOrEqual(4 * 20);
    expect(sample(text, 'pipemorph_ingest_messages_total', { type: 'ack', result: 'accepted' })).toBeGreaterThan(0);
    expect(sample(text, 'pipemorph_ingest_messages_total', { type: 'report', result: 'rejected' })).toBe(0);
    expect(sample(text, 'pipemorph_ingest_last_read_timestamp_seconds', {})).toBeGreaterThanOrEqual(Math.floor(startedAt));
    expect(sample(text, 'pipemorph_jobs_owned', {})).toBe(1);
    expect(sample(text, 'pipemorph_jobs_registered', {})).toBe(1);
    expect(sample(text, 'pipemorph_job_lease_epoch', job)).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'pipemorph_build_info', { version: '0.1.0' })).toBe(1);
    expect(sample(text, 'process_cpu_seconds_total', {})).toBeGreaterThan(0);
  });
});

describe('a real Prometheus scraping the daemon', () => {
  it('answers PromQL with the straggler link delay and evaluates the alert rules on it', async () => {
    prometheusDir = mkdtempSync(join(tmpdir(), 'pipemorph-prometheus-'));
    const port = await freePort();
    const target = new URL(daemon!.url).host;
    const config = [
      'global:',
      '  scrape_interval: 1s',
      '  evaluation_interval: 1s',
      'rule_files:',
      `  - ${JSON.stringify(join(ROOT, 'deploy/prometheus/pipemorph.rules.yml'))}`,
      'scrape_configs:',
      '  - job_name: pipemorph',
      '    honor_labels: true # as the ServiceMonitor: the series keep their training-job label',
      '    metrics_path: /metrics',
      '    static_configs:',
      `      - targets: [${JSON.stringify(target)}]`,
      '',
    ].join('\n');
    writeFileSync(join(prometheusDir, 'prometheus.yml'), config);
    expect(run('promtool', ['check', 'config', join(prometheusDir, 'prometheus.yml')]).status).toBe(0);
    prometheus = spawn('prometheus', [
      `--config.file=${join(prometheusDir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(prometheusDir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--storage.tsdb.retention.time=1h',
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    prometheus.stdout!.on('data', (chunk) => (prometheusLog += chunk));
    prometheus.stderr!.on('data', (chunk) => (prometheusLog = (prometheusLog + chunk).slice(-20000)));
    const api = `http://127.0.0.1:${port}`;
    const query = async (promql: string): Promise<Json[]> => {
      const response = await fetch(`${api}/api/v1/query?query=${encodeURIComponent(promql)}`);
      const body = (await response.json()) as Json;
      if (body.status !== 'success') throw new Error(`${promql}: ${JSON.stringify(body)}`);
      return body.data.result;
    };

    try {
      await waitFor('Prometheus to be ready', async () => {
        if (prometheus?.exitCode !== null) throw new Error(`prometheus exited (${prometheus?.exitCode})`);
        return fetch(`${api}/-/ready`).then((r) => r.ok, () => false);
      }, 30000, 200);
      const up = await waitFor('a successful scrape of the daemon', async () => {
        const result = await query('up{job="pipemorph"} == 1');
        return result.length === 1 && result;
      }, 30000, 250);
      expect(up[0].metric.instance).toBe(target);

      const links = await waitFor('the link delay series', async () => {
        const result = await query(`pipemorph_link_extra_delay_seconds{job="${jobId}"}`);
        return result.length === 3 && result;
      }, 30000, 250);
      const slow = links.find((r) => r.metric.link === String(SLOW_LINK));
      expect(slow).toBeDefined();
      expect(Number(slow.value[1])).toBeGreaterThan(0.02);
      expect(Number(slow.value[1])).toBeLessThan(0.045);
      const worst = await query(`topk(1, pipemorph_link_extra_delay_seconds{job="${jobId}"})`);
      expect(worst.map((r) => r.metric.link)).toEqual([String(SLOW_LINK)]);
      const buckets = await query(`sum by (le) (pipemorph_link_extra_delay_observed_seconds_bucket{job="${jobId}",link="${SLOW_LINK}"})`);
      expect(buckets.length).toBeGreaterThan(5);

      // The rules load and evaluate without error on this data; the straggler alert is on its way to firing.
      const groups = await waitFor('every rule evaluated', async () => {
        const body = (await (await fetch(`${api}/api/v1/rules`)).json()) as Json;
        const rules = body.data.groups.flatMap((g: Json) => g.rules);
        return rules.length > 0 && rules.every((r: { health: string }) => r.health !== 'unknown') && rules;
      }, 30000, 250);
      expect(groups.filter((r: { health: string }) => r.health !== 'ok').map((r: { name: string; lastError: string }) => `${r.name}: ${r.lastError}`)).toEqual([]);
      const alerts = await waitFor('the straggler alert', async () => {
        const body = (await (await fetch(`${api}/api/v1/alerts`)).json()) as Json;
        const list = body.data.alerts as Array<{ labels: Record<string, string>; state: string }>;
        // Rules evaluated before the first scrape may have left PipemorphDown pending: wait for the next evaluations.
        return list.some((a) => a.labels.alertname === 'PipemorphStragglerDetected') && list.every((a) => a.labels.alertname === 'PipemorphStragglerDetected') && list;
      }, 30000, 250);
      expect(alerts.find((a) => a.labels.alertname === 'PipemorphStragglerDetected')!.labels).toMatchObject({ job: jobId, kind: 'pipeline', severity: 'info' });
      // A healthy daemon whose adapted schedule absorbs the straggler raises nothing else.
      expect(alerts.map((a) => a.labels.alertname).filter((name) => name !== 'PipemorphStragglerDetected')).toEqual([]);
    } catch (error) {
      throw new Error(`${(error as Error).message}\n--- prometheus log (tail) ---\n${prometheusLog.slice(-4000)}`);
    } finally {
      await stopPrometheus();
    }
  }, 120000);
});

describe('a job the replica lets go', () => {
  it('leaves no series behind', async () => {
    expect(await scrape()).toContain(`job="${jobId}"`);
    await daemon!.app.get(JobRegistry).expire(jobId);
    await waitFor('the job series to go', async () => !(await scrape()).includes(`job="${jobId}"`), 10000, 100);
    // ...and they stay gone: maintenance (every second here) and the ingest loop keep running.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const text = await scrape();
    expect(text.split('\n').filter((l) => l.includes(jobId))).toEqual([]);
    expect(sample(text, 'pipemorph_jobs_owned', {})).toBe(0);
  });
});
