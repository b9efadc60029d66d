/**
 * What every results file records about its own measurement (issue 30, item 1): the commit it was
 * measured at (and whether the tree differed from it), the machine (cores, load average before and
 * after the run, Node), when and the command. `npm run bench:stale` compares the commit with the
 * last commit that changed the sources the bench declares (bench/bench-sources.ts); the rendered
 * tables print it under each table.
 */
import { execFileSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { isAbsolute, join, relative } from 'node:path';

export interface ResultsStamp {
  commit: string;
  /** Tracked files differed from the commit (what was measured is not exactly the commit). */
  dirty: boolean;
  measuredAt: string;
  command: string;
  machine: { cores: number; loadBefore: number[]; loadAfter: number[]; node: string };
}

/** The repository's root, from src/support/ or dist/src/support/. */
export const REPO_ROOT = join(__dirname, '..', '..', ...(__dirname.includes(join('dist', 'src')) ? ['..'] : []));

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
}

/** `npm run NAME` when npm ran it, else the node command line (paths relative to the repository). */
function defaultCommand(): string {
  const event = process.env.npm_lifecycle_event;
  if (event) return `npm run ${event}`;
  return ['node', ...process.argv.slice(1).map((arg) => (isAbsolute(arg) ? relative(REPO_ROOT, arg) : arg))].join(' ');
}

const load = () => loadavg().map((x) => Math.round(x * 100) / 100);

/**
 * Starts a measurement: the load average now; the returned function gives the stamp, with the load
 * average then, to write into the results.
 */
export function startStamp(command = defaultCommand()): () => ResultsStamp {
  const loadBefore = load();
  const commit = git(['rev-parse', 'HEAD']) || 'unknown';
  // Results files are written by the run itself: only other tracked files count as a difference.
  const dirty = git(['status', '--porcelain', '--untracked-files=no', '--', '.', ':!bench/results', ':!README.md', ':!docs']) !== '';
  return () => ({
    commit,
    dirty,
    measuredAt: new Date().toISOString(),
    command,
    machine: { cores: cpus().length, loadBefore, loadAfter: load(), node: process.version },
  });
}

/** One line that says what a rendered table was measured on, for under the table. */
export function stampLine(stamp: ResultsStamp | undefined): string {
  if (!stamp) return '<sub>Not stamped: measured before results recorded their commit (`npm run bench:stale` lists it).</sub>';
  const m = stamp.machine;
  return `<sub>Measured at commit ${stamp.commit.slice(0, 10)}${stamp.dirty ? ' (with uncommitted changes)' : ''} on ${stamp.measuredAt.slice(0, 10)}, ${m.cores} cores, load average ${m.loadBefore[0]} before and ${m.loadAfter[0]} after, Node ${m.node}: \`${stamp.command}\`.</sub>`;
}
