import { ControlDecision } from '../core/control/control-decision.type';
import { DecisionRecord } from '../core/control/decision-record.type';
import { DetectionSnapshot } from '../core/detect/detection.type';
import { PipemorphConfig } from '../daemon/config/pipemorph-config.type';
import { RankReport, Registration } from '../protocol/protocol-v1.type';
import { ReplayJob, ReplaySwitch } from './replay-job';
import { REPLAY_EPOCH_MS } from './run-scenario';

/** Ranks written from the protocol (ProtocolRanks, LognormalRanks): a registration and each iteration's reports. */
export interface OutsideRanks {
  registration(): Registration;
  reports(iteration: number, version: number): RankReport[];
  /** Called when a switch takes effect (closed-loop ranks: a re-balance changes the layers each rank computes). */
  switchedTo?(decision: ControlDecision): void;
}

export interface DrivenRun {
  switches: ReplaySwitch[];
  records: DecisionRecord[];
  replay: ReplayJob;
}

/**
 * `iterations` of the ranks through a replayed daemon (the daemon's own control loop), one every
 * `msPerIteration`; each rank reports the version in force at its iteration. `tamper` may rewrite
 * each detection snapshot (twins that break a rule on purpose).
 */
export function driveRanks(ranks: OutsideRanks, iterations: number, config: PipemorphConfig, msPerIteration = 1000, tamper?: (s: DetectionSnapshot, t: number) => void): DrivenRun {
  const replay = new ReplayJob(ranks.registration(), config);
  const records: DecisionRecord[] = [];
  replay.onDecision = (r) => records.push(r);
  if (tamper) {
    const snapshot = replay.job.detector.snapshot.bind(replay.job.detector);
    replay.job.detector.snapshot = () => {
      const s = snapshot();
      tamper(s, replay.job.progress.maxIteration);
      return s;
    };
  }
  const switches: ReplaySwitch[] = [];
  const first = replay.endIteration(REPLAY_EPOCH_MS);
  if (first) switches.push(first);
  for (let t = 0; t < iterations; t++) {
    const now = REPLAY_EPOCH_MS + (t + 1) * msPerIteration;
    const inForce = [...switches].reverse().find((s) => s.effectiveIteration <= t);
    for (const s of switches) if (s.effectiveIteration === t) ranks.switchedTo?.(s.decision);
    for (const r of ranks.reports(t, inForce?.version ?? 1)) replay.observe(r, now);
    const s = replay.endIteration(now);
    if (s) switches.push(s);
  }
  return { switches, records, replay };
}
