import { ControlDecision } from '../../core/control/control-decision.type';
import { PublishedSchedule } from '../../protocol/protocol-v1.type';

/** A prepared schedule waiting for every reporting rank's acknowledgement. */
export interface OpenHandshake {
  readonly schedule: PublishedSchedule;
  readonly deadline: number;
  readonly acked: ReadonlySet<number>;
  readonly decision: ControlDecision;
}

/**
 * A job's schedule switches as SchedulePublisher runs them (docs/protocol.md): the open
 * handshake, when the next prepare may start (re-plan interval, back-off after aborts), when
 * the last re-map was committed, and how many prepares, commits and aborts there were. Only the
 * publisher changes it; the control loop and the API read it.
 */
export class SwitchState {
  private open: { schedule: PublishedSchedule; deadline: number; acked: Set<number>; decision: ControlDecision } | null = null;
  private earliestPrepare = 0;
  private consecutiveAborts = 0;
  private remapCommittedAt = 0;
  private reservedVersion: number | null = null;
  private readonly counts = { prepares: 0, commits: 0, aborts: 0 };

  get handshake(): OpenHandshake | null {
    return this.open;
  }

  /** Earliest time the next prepare may start (min interval, back-off after an abort). */
  get notBefore(): number {
    return this.earliestPrepare;
  }

  /** Aborts since the last commit: the lead and the back-off double with each. */
  get abortStreak(): number {
    return this.consecutiveAborts;
  }

  /** When the last re-map was committed (0: never). */
  get lastRemapAt(): number {
    return this.remapCommittedAt;
  }

  get counters(): Readonly<{ prepares: number; commits: number; aborts: number }> {
    return { ...this.counts };
  }

  /** A prepare was stored: the handshake is open until `deadline`. */
  opened(schedule: PublishedSchedule, deadline: number, decision: ControlDecision): void {
    this.open = { schedule, deadline, acked: new Set(), decision };
    this.counts.prepares++;
  }

  /** A rank acknowledged the open handshake. */
  acknowledged(rank: number): void {
    this.open?.acked.add(rank);
  }

  /** The open handshake was committed (`ok`) or its commit refused; it is closed either way. */
  closedByCommit(ok: boolean): void {
    this.open = null;
    if (!ok) return;
    this.counts.commits++;
    this.consecutiveAborts = 0;
  }

  /** The open handshake was aborted: no prepare before `now` plus the back-off for this streak of aborts. */
  closedByAbort(now: number, backoffMs: (streak: number) => number): void {
    this.open = null;
    this.counts.aborts++;
    this.consecutiveAborts++;
    this.earliestPrepare = now + backoffMs(this.consecutiveAborts);
  }

  /** A version allocated ahead of the publish that will use it (taken while a decision is planned). */
  get reserved(): number | null {
    return this.reservedVersion;
  }

  reserve(version: number): void {
    this.reservedVersion = version;
  }

  /**
   * The reserved version for a publish, once: only when it is still above every version the job
   * has known since (`floor`); one at or below it is dropped and a fresh one must be allocated.
   */
  takeReserved(floor: number): number | null {
    const version = this.reservedVersion;
    this.reservedVersion = null;
    return version !== null && version > floor ? version : null;
  }

  /** A schedule was committed at `now` (with or without a handshake): the next prepare waits `minIntervalMs`. */
  committed(now: number, remap: boolean, minIntervalMs: number): void {
    if (remap) this.remapCommittedAt = now;
    this.earliestPrepare = now + minIntervalMs;
  }
}
