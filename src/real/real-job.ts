import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PipelineProfile } from '../core/pipeline/pipeline-profile.type';
import { PublishedSchedule, Registration } from '../protocol/protocol-v1.type';

/** The interpreter with Debian's python3-torch and python3-redis (scripts/ensure-python-*.sh). */
export const PYTHON = '/usr/bin/python3';
const ROOT = join(__dirname, '..', '..', ...(__dirname.includes(join('dist', 'src')) ? ['..'] : []));
export const PYTHON_CLIENT = join(ROOT, 'clients', 'python');

/** What pipemorph.launch writes (clients/python/README.md): each rank's own records, merged per iteration. */
export interface RealJobResult {
  ranks: Array<{ rank: number; iterations: Array<{ iteration: number; version: number; ms: number }> }>;
  iterations: Array<{ iteration: number; versions: number[]; ms: number }>;
  mixedIterations: number[];
  meanIterationMs: number;
}

export interface RealJobOptions {
  profile: PipelineProfile;
  iterations: number;
  compute: 'sleep' | 'torch';
  /** Delay spec (src/emulator/delay/delay-spec.ts syntax, also step:), applied by the ranks' senders. */
  delays: string;
  /** A static schedule (no daemon), or follow the daemon at `redisUrl` for `jobId`. */
  schedule?: PublishedSchedule;
  redisUrl?: string;
  jobId?: string;
  registration?: Registration;
  hidden?: number;
  rows?: number;
  timeoutS?: number;
}

/** A fresh temporary folder for one job's files, and a writer of files in it (JSON unless given a string) that returns their paths. */
export function jobFiles(prefix: string): { dir: string; file(name: string, content: unknown): string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return {
    dir,
    file(name: string, content: unknown): string {
      const path = join(dir, name);
      writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
      return path;
    },
  };
}

/**
 * Runs one job of real rank processes (one per stage, torch.distributed gloo on 127.0.0.1) through
 * clients/python's launcher and returns what the ranks measured in wall-clock time.
 */
export function runRealJob(o: RealJobOptions): Promise<RealJobResult> {
  const { dir, file } = jobFiles('pipemorph-real-');
  const p = o.profile;
  const args = ['-m', 'pipemorph.launch', '--stages', `${p.stages}`, '--microbatches', `${p.microbatches}`, '--iterations', `${o.iterations}`,
    '--compute', o.compute, '--profile', file('profile.json', { fMs: p.fMs, bMs: p.bMs, wMs: p.wMs }), '--delays', file('delays.txt', o.delays),
    '--timeout-s', `${o.timeoutS ?? 120}`, '--out', join(dir, 'result.json')];
  if (o.hidden) args.push('--hidden', `${o.hidden}`);
  if (o.rows) args.push('--rows', `${o.rows}`);
  if (o.schedule) args.push('--schedule', file('schedule.json', o.schedule));
  else {
    if (!o.redisUrl || !o.jobId) throw new Error('runRealJob: give a schedule, or redisUrl and jobId');
    args.push('--redis', o.redisUrl, '--job', o.jobId);
    if (o.registration) args.push('--register', file('registration.json', o.registration));
  }
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, args, { cwd: PYTHON_CLIENT, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`pipemorph.launch exited ${code}: ${stderr.trim().split('\n').pop() ?? ''}`));
      resolve(JSON.parse(readFileSync(join(dir, 'result.json'), 'utf8')) as RealJobResult);
    });
  });
}

/** The registration a real job of `profile` sends: one node per stage, device memory in activations. */
export function realRegistration(jobId: string, profile: PipelineProfile, deviceActivations: number[]): Registration {
  const stages = profile.stages;
  return {
    type: 'register', protocol: 1, jobId, stages, microbatches: profile.microbatches, dp: 1, tp: 1,
    ranks: Array.from({ length: stages }, (_, r) => ({ rank: r, dp: 0, pp: r, tp: 0, node: `real-${r}` })),
    memory: { deviceBytes: deviceActivations.map((a) => a * 1e9), activationBytes: new Array(stages).fill(1e9), hostBytes: 64e9 },
    computeMs: { fMs: profile.fMs, bMs: profile.bMs, wMs: profile.wMs },
    network: { latencyMs: Math.min(...profile.linkMs), nominalGBps: 1000 },
  };
}

function kept(result: RealJobResult, from: number, to: number): number[] {
  return result.iterations.slice(Math.max(0, Math.min(from, result.iterations.length - 1)), to).map((it) => it.ms);
}

/** Mean iteration time over iterations [from, to) of a run, as the ranks measured it. */
export function meanMs(result: RealJobResult, from: number, to = result.iterations.length): number {
  const xs = kept(result, from, to);
  return xs.reduce((a, x) => a + x, 0) / xs.length;
}

/** Median iteration time over iterations [from, to): robust to a few iterations slowed by other processes on the machine. */
export function medianMs(result: RealJobResult, from: number, to = result.iterations.length): number {
  const xs = kept(result, from, to).sort((a, b) => a - b);
  const mid = xs.length >> 1;
  return xs.length % 2 ? xs[mid] : (xs[mid - 1] + xs[mid]) / 2;
}
