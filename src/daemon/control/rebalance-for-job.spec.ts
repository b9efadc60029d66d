import { jobKeys } from '../../protocol/redis-keys';
import { Registration } from '../../protocol/protocol-v1.type';
import { ingestPass, metricValue, registeredJob, registration, serviceHarness, ServiceHarness } from '../../../test/support/service-harness';
import { JobRuntime } from '../jobs/job-runtime';
import { effectiveKnobs } from '../overrides/effective-knobs';
import { jobsApiProblem } from '../../../test/support/jobs-api-schema';
import { compileSchema } from '../../protocol/schema-validator';
import scheduleSchema from '../../../schemas/schedule.v1.schema.json';

const scheduleCheck = compileSchema(scheduleSchema);
/** GET /jobs/:id/decisions as the API answers it (JSON). */
const decisionsBody = (job: JobRuntime) => JSON.parse(JSON.stringify({ jobId: job.jobId, total: job.decisions.count, decisions: job.decisions.recent(), overrideChanges: job.overrides.changes }));

/** 4 stages of 6 layers (2 ms F, B and W each: 12 ms per stage), 16 microbatches, one replica. */
function layered(jobId: string, dp = 1): Registration {
  return {
    ...registration(jobId, 4, dp),
    layers: { fMs: new Array(24).fill(2), bMs: new Array(24).fill(2), wMs: new Array(24).fill(2), stateBytes: new Array(24).fill(1e9), activationBytes: new Array(24).fill(1e8), perStage: [6, 6, 6, 6] },
  };
}

/** Every rank's report of `iteration`, link 2 `link2ExtraMs` slower, rank 1's (stage 1 of replica 0) compute `slow` times the declared (or the split in force's) layer times. */
async function report(h: ServiceHarness, spec: Registration, iteration: number, slow: number, perStage: readonly number[], link2ExtraMs = 0): Promise<void> {
  const v = h.registry.get(spec.jobId)?.committed?.version ?? 0;
  for (const r of spec.ranks) {
    const links = [];
    for (const peer of [r.pp - 1, r.pp + 1]) {
      const ms = 1 + (Math.min(peer, r.pp) === 2 ? link2ExtraMs : 0);
      if (peer >= 0 && peer < spec.stages) links.push({ peer: r.dp * spec.stages + peer, kind: 'pipeline', bytes: 1 << 24, medianMs: ms, maxMs: ms * 1.2, delegated: false, error: null });
    }
    const ms = 2 * perStage[r.pp] * (r.rank === 1 ? slow : 1);
    await h.store.append(jobKeys(spec.jobId).reports, JSON.stringify({ type: 'report', protocol: 1, jobId: spec.jobId, rank: r.rank, iteration, scheduleVersion: v, computeMs: { f: ms, b: ms, w: ms }, links }), 100000);
  }
}

/** 12 healthy iterations, then 12 with stage 1 1.5x slower, then a control step past the re-plan interval. */
async function slowStage(h: ServiceHarness, spec: Registration, before: (job: JobRuntime) => void = () => {}): Promise<JobRuntime> {
  const job = await registeredJob(h, spec);
  before(job);
  for (let i = 0; i < 24; i++) {
    h.clock.advance(100);
    await report(h, spec, i, i < 12 ? 1 : 1.5, [6, 6, 6, 6]);
    await ingestPass(h);
  }
  expect(job.detector.snapshot().compute.find((c) => c.rank === 1)?.straggler).toBe(true);
  h.clock.advance(h.config.control.minReplanIntervalMs);
  await h.control.evaluate(job);
  return job;
}

describe('re-balancing in the control step', () => {
  it('moves layers off a confirmed compute straggler: logged as taken, the prepared schedule carries the new split', async () => {
    const h = serviceHarness();
    const spec = layered('rb-take');
    const job = await slowStage(h, spec);
    const logged = job.decisions.recent().filter((d) => d.kind === 'rebalance');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ verdict: 'taken', rebalance: { slowRanks: [{ rank: 1, pp: 1 }], currentSplit: [6, 6, 6, 6], split: [7, 3, 7, 7], exact: true } });
    expect(logged[0].rebalance!.speed.map((s) => Math.round(s * 100) / 100)).toEqual([1, 1.5, 1, 1]);
    expect(logged[0].reason).toMatch(/^re-balanced: split \[7,3,7,7\]/);
    const schedule = job.handshake!.schedule;
    expect(schedule.reason.kind).toBe('rebalance');
    expect(schedule.layers).toEqual({
      version: 1,
      sinceVersion: schedule.version,
      perStage: [7, 3, 7, 7],
      moves: [
        { firstLayer: 6, lastLayer: 6, fromStage: 1, toStage: 0, bytes: 1e9 },
        { firstLayer: 10, lastLayer: 11, fromStage: 1, toStage: 2, bytes: 2e9 },
        { firstLayer: 17, lastLayer: 17, fromStage: 2, toStage: 3, bytes: 1e9 },
      ],
    });
    // Stage times of the new split priced at the measured speeds: 7 x 2 ms and 3 x 2 x 1.5 ms per op.
    expect(scheduleCheck.check(JSON.parse(JSON.stringify(schedule)))).toBeNull();
    expect(jobsApiProblem('decisions', decisionsBody(job))).toBeNull();
    expect(schedule.prediction.newMs).toBeLessThan(0.85 * schedule.prediction.previousMs!);
    expect(await metricValue(h, 'pipemorph_decisions_total', { kind: 'rebalance', verdict: 'taken' })).toBe(1);
    expect(await metricValue(h, 'pipemorph_replans_total', { kind: 'rebalance' })).toBe(1);
    // The same inputs again decide nothing new.
    await h.control.evaluate(job);
    expect(job.decisions.recent().filter((d) => d.kind === 'rebalance')).toHaveLength(1);
  });

  it('once committed, keeps the split in later schedules (moves empty) and prices the job with it', async () => {
    const h = serviceHarness();
    const spec = layered('rb-carry');
    const job = await slowStage(h, spec);
    const { version } = job.handshake!.schedule;
    for (const rank of [0, 1, 2, 3]) await h.publisher.onAck(job, { type: 'ack', protocol: 1, jobId: spec.jobId, rank, version, epoch: job.epoch, iteration: 25, accepted: true }, h.clock.now());
    expect(job.committed!.layers).toMatchObject({ version: 1, sinceVersion: version, perStage: [7, 3, 7, 7] });
    // The ranks run the new split (stage 1 still 1.5x slower), then link 2 slows by 40 ms: a straggler switch carries the split over.
    for (let i = 24; i < 44; i++) {
      h.clock.advance(100);
      await report(h, spec, i, 1.5, [7, 3, 7, 7], i >= 32 ? 40 : 0);
      await ingestPass(h);
    }
    h.clock.advance(h.config.control.minReplanIntervalMs);
    await h.control.evaluate(job);
    const next = job.handshake!.schedule;
    expect(next.reason.kind).toBe('straggler');
    expect(next.layers).toEqual({ version: 1, sinceVersion: version, perStage: [7, 3, 7, 7], moves: [] });
    // The split in force is what the measured speeds ask for: no re-balance was decided again.
    expect(job.decisions.recent().filter((d) => d.kind === 'rebalance' && d.verdict === 'taken')).toHaveLength(1);
    // Compared as under the registered split, the neighbours that took layers on are healthy and the slow rank is still slow.
    expect(job.detector.snapshot().compute.map((c) => [c.rank, c.straggler])).toEqual([[0, false], [1, true], [2, false], [3, false]]);
    // Planned with the split in force's stage times: stage 1 runs 3 layers at 1.5x (9 ms per op), the others 7 (14 ms).
    expect(job.controlInput(job.detector.snapshot()).fMs).toEqual([14, 9, 14, 14]);
  });

  it('moves the layers back once the rank has healed', async () => {
    const h = serviceHarness();
    const spec = layered('rb-back');
    const job = await slowStage(h, spec);
    const { version } = job.handshake!.schedule;
    for (const rank of [0, 1, 2, 3]) await h.publisher.onAck(job, { type: 'ack', protocol: 1, jobId: spec.jobId, rank, version, epoch: job.epoch, iteration: 25, accepted: true }, h.clock.now());
    // Stage 1 runs its 3 layers at full speed again: its straggler episode ends, the split in force is no longer the best.
    for (let i = 24; i < 48; i++) {
      h.clock.advance(100);
      await report(h, spec, i, 1, [7, 3, 7, 7]);
      await ingestPass(h);
    }
    expect(job.detector.snapshot().compute.some((c) => c.straggler)).toBe(false);
    h.clock.advance(h.config.control.minReplanIntervalMs);
    await h.control.evaluate(job);
    const back = job.decisions.recent().filter((d) => d.kind === 'rebalance').pop()!;
    expect(back).toMatchObject({ verdict: 'taken', rebalance: { slowRanks: [], currentSplit: [7, 3, 7, 7], split: [6, 6, 6, 6] } });
    expect(job.handshake!.schedule.layers).toMatchObject({ version: 2, perStage: [6, 6, 6, 6], moves: [{ firstLayer: 6, lastLayer: 6, fromStage: 0, toStage: 1 }, { firstLayer: 10, lastLayer: 11, fromStage: 2, toStage: 1 }, { firstLayer: 17, lastLayer: 17, fromStage: 3, toStage: 2 }] });
  });

  it('with two replicas, prices the slow replica and moves the same layers in both', async () => {
    const h = serviceHarness();
    const job = await slowStage(h, layered('rb-dp2', 2));
    const logged = job.decisions.recent().filter((d) => d.kind === 'rebalance');
    expect(logged).toMatchObject([{ verdict: 'taken', rebalance: { slowRanks: [{ rank: 1, pp: 1 }], split: [7, 3, 7, 7] } }]);
    expect(logged[0].rebalance!.speed.map((x) => Math.round(x * 100) / 100)).toEqual([1, 1.5, 1, 1]);
    expect(job.handshake!.schedule.pipelines.map((p) => p.dpReplicas)).toEqual([[0, 1]]);
    expect(job.handshake!.schedule.layers?.perStage).toEqual([7, 3, 7, 7]);
  });

  it('declines when the handoff does not pay back, saying why, and publishes nothing', async () => {
    const h = serviceHarness({ config: (c) => (c.rebalance.handoffGBps = 0.001) });
    const job = await slowStage(h, layered('rb-decline'));
    const logged = job.decisions.recent().filter((d) => d.kind === 'rebalance');
    expect(logged).toHaveLength(1);
    expect(logged[0].verdict).toBe('declined');
    expect(logged[0].reason).toMatch(/^declined: split .* against re-planning alone on \[6,6,6,6\] .* below rebalance.minGain 5.0%$/);
    expect(job.handshake).toBeNull();
    expect(jobsApiProblem('decisions', decisionsBody(job))).toBeNull();
  });

  it('declines a re-balance whose gain over the straggler\'s expected iterations does not pay the switch, saying why', async () => {
    const h = serviceHarness({ config: (c) => (c.control.switchCostMs = 1e7) });
    const job = await slowStage(h, layered('rb-switch'));
    const logged = job.decisions.recent().filter((d) => d.kind === 'rebalance');
    expect(logged).toHaveLength(1);
    expect(logged[0].verdict).toBe('declined');
    expect(logged[0].reason).toMatch(/^declined: split \[7,3,7,7\] .*, but [\d.]+ ms\/iteration over an expected 100 iterations after \d+ lead iterations \(\d+ ms\) does not beat the handoff and the switch \(10000400 ms\)$/);
    expect(logged[0].cost!.costMs).toBeGreaterThan(logged[0].cost!.benefitMs);
    expect(job.handshake).toBeNull();
    expect(jobsApiProblem('decisions', decisionsBody(job))).toBeNull();
  });

  it('prices the switch with the job\'s own overrides when it has any', async () => {
    const h = serviceHarness();
    const doc = { version: 1 as const, setBy: 'alice', reason: 'expensive switches', control: { switchCostMs: 1e7 } };
    const job = await slowStage(h, layered('rb-switch-override'), (j) => j.overrides.set(doc, effectiveKnobs(h.config, doc), JSON.stringify(doc)));
    const logged = job.decisions.recent().filter((d) => d.kind === 'rebalance');
    expect(logged.map((d) => d.verdict)).toEqual(['declined']);
    expect(logged[0].reason).toMatch(/does not beat the handoff and the switch \(10000400 ms\)$/);
  });

  it('twin: the same switch cost with cost-aware switching off is not priced: the re-balance is taken', async () => {
    const h = serviceHarness({ config: (c) => ((c.control.switchCostMs = 1e7), (c.control.costAware = false)) });
    const job = await slowStage(h, layered('rb-switch-off'));
    expect(job.decisions.recent().filter((d) => d.kind === 'rebalance').map((d) => d.verdict)).toEqual(['taken']);
  });

  it('leaves a job without layers to re-planning alone', async () => {
    const h = serviceHarness();
    const job = await slowStage(h, registration('rb-none', 4));
    expect(job.decisions.recent().some((d) => d.kind === 'rebalance')).toBe(false);
  });
});
