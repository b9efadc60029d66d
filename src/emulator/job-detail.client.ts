/**
 * What the demo reads of a job, from the daemon's public API (GET /jobs/:id, specified by
 * schemas/jobs-api.v1.schema.json): no access to the daemon's memory, so the demo shows only what
 * any client could see.
 */
export interface JobDetail {
  jobId: string;
  scheduleVersion: number | null;
  handshake: { version: number; effectiveIteration: number; acked: number; of: number } | null;
  links: {
    pipeline: Array<{ dp: number; link: number; extraMs: number; straggler: boolean }>;
    dataParallel: Array<{ fromRank: number; toRank: number; straggler: boolean }>;
  };
}

/** GET /jobs/:id from the daemon at `baseUrl`; null while the daemon does not own the job (404). */
export async function fetchJobDetail(baseUrl: string, jobId: string): Promise<JobDetail | null> {
  const response = await fetch(`${baseUrl}/jobs/${encodeURIComponent(jobId)}`);
  if (response.status === 404) return null;
  if (!response.ok) throw new Error(`GET /jobs/${jobId}: ${response.status}`);
  return (await response.json()) as JobDetail;
}

/** GET /jobs/:id/timeline.svg: the last switch's before/after timeline, or null when there is none yet. */
export async function fetchTimelineSvg(baseUrl: string, jobId: string): Promise<string | null> {
  const response = await fetch(`${baseUrl}/jobs/${encodeURIComponent(jobId)}/timeline.svg`);
  if (response.status === 404) return null;
  if (!response.ok) throw new Error(`GET /jobs/${jobId}/timeline.svg: ${response.status}`);
  return response.text();
}
