import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { jobTimelineSvg } from '../daemon/api/job-view.model';
import { JobRuntime } from '../daemon/jobs/job-runtime';

/**
 * Writes the before/after timeline of each switch a job makes (what GET /jobs/:id/timeline.svg
 * shows right after the commit: both schedules simulated under the link estimates that caused
 * it) to `dir`, one SVG per switch; `capture` is called once per iteration.
 */
export class SwitchTimelines {
  readonly dir: string;
  readonly written: string[] = [];
  private seen = new Map<string, number>();

  constructor(dir: string) {
    this.dir = resolve(dir);
  }

  /** Returns the path written when the job committed a new version since the last call. */
  capture(runtime: JobRuntime | undefined): string | null {
    const current = runtime?.history.current;
    const replaced = runtime?.history.replaced;
    if (!runtime || !current || !replaced || this.seen.get(runtime.jobId) === current.version) return null;
    this.seen.set(runtime.jobId, current.version);
    const svg = jobTimelineSvg(runtime);
    if (svg === null) return null;
    mkdirSync(this.dir, { recursive: true });
    const path = join(this.dir, `${runtime.jobId}-v${replaced.version}-to-v${current.version}.svg`);
    writeFileSync(path, svg);
    this.written.push(path);
    return path;
  }
}
