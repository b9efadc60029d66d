/**
 * `npm run bench:stale`: which results in bench/results were measured before the last commit that
 * changed the sources they measure (bench/bench-sources.ts), and which record no commit at all.
 * Prints one JSON object; exits 0 (a report), or 1 with --check when any is stale.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sourcesOf } from './bench-sources';
import { REPO_ROOT, ResultsStamp } from '../src/support/results-stamp';

export interface Staleness {
  results: string;
  /** Measured at; null when the file records no commit. */
  commit: string | null;
  /** The newest commit that changed the bench's sources. */
  sourcesCommit: string | null;
  stale: boolean;
  why: string;
}

function git(args: string[]): { ok: boolean; out: string } {
  try {
    return { ok: true, out: execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() };
  } catch {
    return { ok: false, out: '' };
  }
}

/** Specs beside the code change no measurement: a commit that touches only them leaves results fresh. */
const NOT_MEASURED = [':(exclude,glob)**/*.spec.ts'];

/** The newest commit that changed a bench's sources, or null when none did (or git is not there). */
export function sourcesCommitOf(sources: string[]): string | null {
  return git(['log', '-1', '--format=%H', '--', ...sources, ...NOT_MEASURED]).out || null;
}

/** The staleness of every results file in `dir`. */
export function staleness(dir = join(REPO_ROOT, 'bench', 'results')): Staleness[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => {
      const name = file.replace(/\.json$/, '');
      const stamp = (JSON.parse(readFileSync(join(dir, file), 'utf8')) as { stamp?: ResultsStamp }).stamp;
      const sources = sourcesOf(REPO_ROOT, name);
      const sourcesCommit = sources ? sourcesCommitOf(sources) : null;
      if (!sources) return { results: file, commit: stamp?.commit ?? null, sourcesCommit, stale: true, why: 'no sources declared in bench/bench-sources.ts' };
      if (!stamp) return { results: file, commit: null, sourcesCommit, stale: true, why: 'not stamped: measured before results recorded their commit' };
      if (stamp.dirty) return { results: file, commit: stamp.commit, sourcesCommit, stale: true, why: 'measured with uncommitted changes' };
      // Fresh when the sources' newest change is the measured commit or one of its ancestors.
      const fresh = sourcesCommit !== null && (sourcesCommit === stamp.commit || git(['merge-base', '--is-ancestor', sourcesCommit, stamp.commit]).ok);
      return { results: file, commit: stamp.commit, sourcesCommit, stale: !fresh, why: fresh ? 'measured at or after the last change to its sources' : `its sources changed in ${sourcesCommit?.slice(0, 10)} after it was measured` };
    });
}

if (require.main === module) {
  const rows = staleness();
  const stale = rows.filter((r) => r.stale);
  process.stdout.write(`${JSON.stringify({ bench: 'stale', head: git(['rev-parse', 'HEAD']).out, stale: stale.length, fresh: rows.length - stale.length, rows }, null, 2)}\n`);
  if (process.argv.includes('--check') && stale.length > 0) process.exit(1);
}
