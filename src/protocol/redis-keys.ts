/**
 * Redis key layout of protocol v1. Every key of a job carries the Redis Cluster hash tag
 * `{<jobId>}`, so one job lives in one slot and multi-key scripts work on a cluster.
 */
export const REGISTRATIONS_STREAM = 'pipemorph:registrations';
/** Registrations that failed validation (they name no valid job to file them under). */
export const REJECTED_REGISTRATIONS_STREAM = 'pipemorph:rejected';
/** Set of known job ids. */
export const JOBS_INDEX = 'pipemorph:jobs';
/** Sorted set of live daemon replicas: member = replica (owner) id, score = when its heartbeat expires (Redis's clock, ms). */
export const REPLICAS_INDEX = 'pipemorph:replicas';
/** Stream entries carry one field holding the JSON message. */
export const MESSAGE_FIELD = 'm';

export const JOB_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

export interface JobKeys {
  /** Accepted registration (JSON string). */
  spec: string;
  /** Stream rank -> daemon: reports and acks. */
  reports: string;
  /** Stream of messages the daemon rejected, with the reason. */
  rejected: string;
  /** Committed schedule in force (JSON string). */
  schedule: string;
  /** Prepared, not yet committed schedule (JSON string), absent when none. */
  pending: string;
  /** Stream daemon -> ranks: prepare, commit, abort. */
  control: string;
  /** Counter of schedule versions (INCR). */
  version: string;
  /** Counter of fencing epochs (INCR when a daemon replica takes the job). */
  epoch: string;
  /** Ownership lease of the daemon replica driving the job. */
  owner: string;
  /**
   * Present while the owner offers the job to a replica under its fair share (value: the owner's
   * id, with the lease's TTL): the taker moves the lease to itself in one step, so the job is never
   * without a leader while it changes hands (JobRegistry).
   */
  offer: string;
  /**
   * Per-job overrides (JSON string, schemas/job-overrides.v1.schema.json), absent when none:
   * written by the operator (the API, or the operator's Redis user), never by ranks; read by the
   * leading replica.
   */
  overrides: string;
}

export function jobKeys(jobId: string): JobKeys {
  const p = `pipemorph:{${jobId}}:`;
  return {
    spec: p + 'spec',
    reports: p + 'reports',
    rejected: p + 'rejected',
    schedule: p + 'schedule',
    pending: p + 'pending',
    control: p + 'control',
    version: p + 'version',
    epoch: p + 'epoch',
    owner: p + 'owner',
    offer: p + 'offer',
    overrides: p + 'overrides',
  };
}

/**
 * The fleet view's evidence (docs/fleet.md): one key per job, written by the job's leading replica
 * with a TTL, and a set indexing them. Every key carries the hash tag `{fleet:view}` (a colon, so
 * no job id can take it), so that one MGET reads all of them on Redis Cluster; they are small and
 * bounded (fleet.maxLinksPerJob), so one slot holds them well. The `fleet:` before the tag keeps
 * them apart from the per-job keys `pipemorph:{<job>}:*`, which tools match by that shape.
 */
export const FLEET_INDEX = 'pipemorph:fleet:{fleet:view}:jobs';

export function fleetEvidenceKey(jobId: string): string {
  return `pipemorph:fleet:{fleet:view}:job:${jobId}`;
}
