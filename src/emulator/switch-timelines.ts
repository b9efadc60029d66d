import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fetchTimelineSvg } from './job-detail.client';

/**
 * Writes the before/after timeline of each switch a job makes (GET /jobs/:id/timeline.svg right
 * after the commit: both schedules simulated under the link estimates that caused it) to `dir`,
 * one SVG per switch; `capture` is called once per iteration with the version GET /jobs/:id names.
 */
export class SwitchTimelines {
  readonly dir: string;
  readonly written: string[] = [];
  private seen = new Map<string, number>();

  constructor(dir: string) {
    this.dir = resolve(dir);
  }

  /** Returns the path written when the job committed a new version since the last call. */
  async capture(baseUrl: string, jobId: string, version: number | null): Promise<string | null> {
    if (version === null) return null;
    const before = this.seen.get(jobId);
    this.seen.set(jobId, version);
    if (before === undefined || before === version) return null;
    const svg = await fetchTimelineSvg(baseUrl, jobId);
    if (svg === null) return null;
    mkdirSync(this.dir, { recursive: true });
    const path = join(this.dir, `${jobId}-v${before}-to-v${version}.svg`);
    writeFileSync(path, svg);
    this.written.push(path);
    return path;
  }
}
