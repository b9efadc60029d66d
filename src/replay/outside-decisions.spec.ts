import { DetectionSnapshot } from '../core/detect/detection.type';
import { loadConfig } from '../daemon/config/load-config';
import { PipemorphConfig } from '../daemon/config/pipemorph-config.type';
import { ProtocolRanks } from './protocol-ranks.fixture';
import { DrivenRun, driveRanks } from './drive-ranks.fixture';

/**
 * Issue 29: decisions on telemetry shaped like an outside rank model's (ProtocolRanks: Pareto(1.3)
 * medians on every direction, links a millisecond above their registered nominal), through the
 * daemon's own control loop (ReplayJob) with the shipped configuration. Each property has a twin
 * that breaks it on purpose.
 */
const shipped = (): PipemorphConfig => {
  const c = loadConfig({});
  return { ...c, control: { ...c.control, refinePlanner: 'none' } };
};

type Run = DrivenRun;

/** `iterations` of the ranks through a replayed daemon, 1 s per iteration; `tamper` may rewrite each snapshot (twins). */
const drive = (ranks: ProtocolRanks, iterations: number, config = shipped(), tamper?: (s: DetectionSnapshot, t: number) => void): Run => driveRanks(ranks, iterations, config, 1000, tamper);

const after = (run: Run, kind?: string) => run.switches.filter((s) => s.decision.kind !== 'initial' && (!kind || s.decision.kind === kind));

describe('decisions on outside-shaped telemetry (issue 29)', () => {
  // dp 0 link 1, forward: two mild samples, then one 150 ms spike, then healthy again.
  const SPIKE_AT = 300;
  const spikeRanks = () => {
    const ranks = new ProtocolRanks('spike', 7);
    const spike = [8.9, 6.2, 151];
    ranks.extraMs = (t, dp, link, dir) => (dp === 0 && link === 1 && dir === 'fwd' && t >= SPIKE_AT && t < SPIKE_AT + 3 ? spike[t - SPIKE_AT] - ranks.linkMs : 0);
    return ranks;
  };

  // With the runs a noisy job asks for (ChanceRuns) this fabric needs more than three bad samples in a
  // row, so the spike never makes a straggler at all; the sizing rule must hold without that help.
  const unraised = (): PipemorphConfig => {
    const c = shipped();
    return { ...c, detection: { ...c.detection, severeChanceRate: 1 } };
  };

  it.each([
    ['shipped', shipped],
    ['runs not raised by the noise', unraised],
  ])('one spike after two mild samples makes no switch (%s): the straggler is sized by the median of the samples that made it', (_name, config) => {
    const run = drive(spikeRanks(), SPIKE_AT + 40, config());
    expect(after(run)).toEqual([]);
    // It was a straggler, of the mild samples' size: the decisions about it (if any) saw under 10 ms, never the spike.
    const sizes = run.records.flatMap((r) => r.evidence.links.filter((l) => l.dp === 0 && l.link === 1).map((l) => l.extraMs));
    for (const ms of sizes) expect(ms).toBeLessThan(10);
  });

  it('twin: sized by its newest sample, the same spike re-plans the job for 150 ms', () => {
    // The rule before issue 29: the straggler's size is its newest sample's extra delay while young.
    let newest = 0;
    const ranks = spikeRanks();
    const extra = ranks.extraMs;
    ranks.extraMs = (t, dp, link, dir) => {
      const x = extra(t, dp, link, dir);
      if (dp === 0 && link === 1 && dir === 'fwd') newest = x;
      return x;
    };
    const run = drive(ranks, SPIKE_AT + 40, unraised(), (s) => {
      for (const l of s.pipelineLinks) if (l.dp === 0 && l.link === 1 && l.straggler) l.extraMs = l.forwardExtraMs = Math.max(newest, 0);
    });
    expect(after(run, 'straggler').length).toBeGreaterThan(0);
  });

  it('a link at its healthy time reads 0 extra though its registered nominal is a millisecond optimistic', () => {
    const run = drive(new ProtocolRanks('baseline', 3), 200);
    const links = run.replay.job.detector.snapshot().pipelineLinks;
    // The window median at the learned baseline: the extra of a link's newest samples is noise around 0, the baseline what it runs.
    for (const l of links) {
      expect(l.baselineMs).toBeGreaterThan(ranks_linkMs() - 0.05);
      expect(l.medianMs - l.baselineMs).toBeLessThan(0.3);
    }
  });

  // A job whose switch costs a second: going back gains too little iteration time to pay for it alone.
  const costly = (c = shipped()): PipemorphConfig => ({ ...c, control: { ...c.control, switchCostMs: 1000 } });

  it('a healed job returns to delegation off and its initial warm-ups within 30 iterations of healing', () => {
    const ranks = new ProtocolRanks('healed', 11);
    const ON = 200;
    const HEAL = 260;
    ranks.extraMs = (t, dp, link) => (dp === 0 && link === 2 && t >= ON && t < HEAL ? 25 : 0);
    const run = drive(ranks, HEAL + 60, costly());
    const straggler = after(run, 'straggler');
    expect(straggler.length).toBeGreaterThan(0);
    expect(straggler[0].decision.delegation.length).toBeGreaterThan(0);
    const back = after(run, 'recovery').find((s) => s.record.iteration >= HEAL);
    expect(back).toBeDefined();
    if (process.env.PIPEMORPH_SPEC_PRINT) process.stdout.write(`healed: back in force ${back!.effectiveIteration - HEAL} iterations after healing: ${back!.record.reason}\n`);
    expect(back!.effectiveIteration - HEAL).toBeLessThanOrEqual(30);
    expect(back!.decision.delegation).toEqual([]);
  });

  it('twin: resources unpriced and no bound, the healed job keeps its straggler plan', () => {
    const ranks = new ProtocolRanks('healed', 11);
    ranks.extraMs = (t, dp, link) => (dp === 0 && link === 2 && t >= 200 && t < 260 ? 25 : 0);
    const c = costly();
    const free = { ...c, control: { ...c.control, delegatedRankMsPerIteration: 0, warmupMsPerIteration: 0, recoveryWithinIterations: 1000000 } };
    const run = drive(ranks, 320, free);
    expect(after(run, 'straggler').length).toBeGreaterThan(0);
    expect(after(run, 'recovery').filter((s) => s.effectiveIteration <= 290)).toEqual([]);
  });
});

describe('a lasting straggler after a noisy history (issue 29, item 4)', () => {
  // The history: another link flapping +30 ms for 1-2 iterations every 37, and the Pareto medians' mild spells everywhere.
  const flapping = (t: number, dp: number, link: number) => (dp === 1 && link === 0 && t >= 100 && t % 37 < 1 + (t % 2) ? 30 : 0);
  const ONSET = 500;

  // The goals are 6 iterations (median) and 10 (p95) over bench:detection's corpus; here, after a
  // severe flapping link the gate waits out that job's severe spells (1-2 iterations): 7 measured.
  it('a +30 ms pipeline link is in force within 10 iterations of its onset', () => {
    const ranks = new ProtocolRanks('lasting', 5);
    ranks.extraMs = (t, dp, link) => flapping(t, dp, link) + (dp === 0 && link === 2 && t >= ONSET ? 30 : 0);
    const run = drive(ranks, ONSET + 40);
    const reaction = after(run, 'straggler').find((s) => s.record.iteration >= ONSET && s.decision.links.some((l) => l.dp === 0 && l.link === 2));
    if (process.env.PIPEMORPH_SPEC_PRINT) process.stdout.write(`pipeline: in force ${reaction ? reaction.effectiveIteration - ONSET : 'never'}; switches before onset ${after(run).filter((s) => s.record.iteration < ONSET).length}\n${run.records.filter((r) => r.iteration >= ONSET - 1).slice(0, 6).map((r) => `${r.iteration} ${r.kind} ${r.verdict} ${r.reason}`).join('\n')}\n`);
    expect(reaction).toBeDefined();
    expect(reaction!.effectiveIteration - ONSET).toBeLessThanOrEqual(10);
  });

  it('a +30 ms ring link is re-mapped within 10 iterations of its onset', () => {
    const ranks = new ProtocolRanks('ring', 6);
    ranks.extraMs = (t, dp, link) => flapping(t, dp, link);
    ranks.ringExtraMs = (t, from, to) => (from === 1 && to === 5 && t >= ONSET ? 30 : 0);
    const run = drive(ranks, ONSET + 40);
    const reaction = after(run).find((s) => s.record.iteration >= ONSET);
    if (process.env.PIPEMORPH_SPEC_PRINT) process.stdout.write(`ring: ${reaction?.decision.kind} in force ${reaction ? reaction.effectiveIteration - ONSET : 'never'}; declined ${run.records.filter((r) => r.verdict === 'declined' && r.iteration >= ONSET).length}\n`);
    expect(reaction).toBeDefined();
    expect(reaction!.effectiveIteration - ONSET).toBeLessThanOrEqual(10);
  });
});

function ranks_linkMs(): number {
  return new ProtocolRanks('x', 1).linkMs;
}
