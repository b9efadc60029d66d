/**
 * Per-job overrides on the daemon's services (in-memory store, manual clock): applied without a
 * restart at the next discovery, in the decisions and the decision log, refused when invalid, and
 * read by a replica that takes the job over before its first decision. Each claim has a twin
 * that shows the check can fail.
 */
import { JobOverrides } from '../../protocol/job-overrides';
import { jobKeys } from '../../protocol/redis-keys';
import { JobRuntime } from '../jobs/job-runtime';
import { ingestPass, metricValue, registeredJob, registration, runIterations, ServiceHarness, serviceHarness } from '../../../test/support/service-harness';

const spec = registration('ovr');

/** Writes the key as the operator's Redis user would (whatever it held before). */
async function writeKey(h: ServiceHarness, doc: Partial<JobOverrides> | string | null): Promise<void> {
  const text = doc === null ? null : typeof doc === 'string' ? doc : JSON.stringify({ version: 1, setBy: 'alice', reason: 'noisy link', ...doc });
  await h.store.replaceOverrides(spec.jobId, undefined, text);
}

/** A discovery, then the overrides read it started (it runs between the job's control steps). */
async function discover(h: ServiceHarness): Promise<void> {
  await h.registry.discover();
  for (const job of h.registry.all()) await job.serialize(async () => undefined);
}

/** Past the re-plan interval, one control step. */
async function step(h: ServiceHarness, job: JobRuntime): Promise<void> {
  h.clock.advance(Math.max(0, job.switching.notBefore - h.clock.now()));
  await h.control.evaluate(job);
}

describe('per-job overrides: switching paused', () => {
  it('makes and logs the decisions as paused, never prepares; lifted, the same straggler is switched', async () => {
    const h = serviceHarness();
    const job = await registeredJob(h, spec);
    await writeKey(h, { pauseSwitching: true });
    await discover(h);
    expect(job.overrides.inForce?.version).toBe(1);
    const iteration = await runIterations(h, spec, 0, 12);
    await runIterations(h, spec, iteration, 8, { link: 1, extraMs: 60 });
    await step(h, job);
    await step(h, job);
    expect(job.switching.handshake).toBeNull();
    expect(h.store.controlEvents(spec.jobId).map((e) => e.type)).toEqual(['commit']); // the initial plan only
    const paused = job.decisions.recent().filter((d) => d.verdict === 'paused');
    expect(paused.length).toBeGreaterThan(0);
    expect(paused[paused.length - 1]).toMatchObject({ kind: 'straggler', overrides: true, scheduleVersion: null });
    expect(paused[paused.length - 1].reason).toMatch(/switching paused for the job \(would have been: gain/);
    expect(await metricValue(h, 'pipemorph_decisions_total', { job: spec.jobId, verdict: 'paused' })).toBeGreaterThan(0);
    expect(await metricValue(h, 'pipemorph_job_paused', { job: spec.jobId, what: 'switching' })).toBe(1);
    expect(await metricValue(h, 'pipemorph_overrides_version', { job: spec.jobId })).toBe(1);

    // The twin: the pause lifted (key deleted), the next step takes the same straggler.
    await writeKey(h, null);
    await discover(h);
    expect(job.overrides.inForce).toBeNull();
    await step(h, job);
    expect(job.switching.handshake?.decision.kind).toBe('straggler');
    expect(h.store.controlEvents(spec.jobId).map((e) => e.type)).toEqual(['commit', 'prepare']);
    const last = job.decisions.recent().at(-1)!;
    expect(last).toMatchObject({ verdict: 'taken', overrides: false });
    expect(job.overrides.changes.map((c) => [c.action, c.seen, c.version, c.setBy])).toEqual([
      ['applied', 'poll', 1, 'alice'],
      ['cleared', 'poll', null, null],
    ]);
    expect(await metricValue(h, 'pipemorph_job_paused', { job: spec.jobId, what: 'switching' })).toBe(0);
  });

  it('still switches for a NIC failure while switching is paused, and the decision record says why', async () => {
    const h = serviceHarness();
    const job = await registeredJob(h, spec);
    await writeKey(h, { pauseSwitching: true });
    await discover(h);
    let iteration = await runIterations(h, spec, 0, 12);
    for (let k = 0; k < 2; k++, iteration++) {
      h.clock.advance(100);
      for (const r of spec.ranks) {
        const links = [];
        for (const [peerPp, link] of [[r.pp + 1, r.pp], [r.pp - 1, r.pp - 1]] as const) {
          if (peerPp < 0 || peerPp >= spec.stages) continue;
          links.push({ peer: peerPp, kind: 'pipeline', bytes: 1 << 24, medianMs: 1, maxMs: 1.2, delegated: false, error: link === 1 ? 'nic-failure' : null });
        }
        const report = { type: 'report', protocol: 1, jobId: spec.jobId, rank: r.rank, iteration, scheduleVersion: job.committed!.version, computeMs: { f: 10, b: 10, w: 10 }, links };
        await h.store.append(jobKeys(spec.jobId).reports, JSON.stringify(report), 100000);
      }
      await ingestPass(h);
    }
    await step(h, job);
    expect(job.switching.handshake?.decision.kind).toBe('nic-failure');
    const record = job.decisions.recent().at(-1)!;
    expect(record).toMatchObject({ kind: 'nic-failure', verdict: 'taken', overrides: true });
    expect(record.reason).toMatch(/taken although switching is paused for the job: a failed NIC without delegation stalls it/);
  });
});

describe('per-job overrides: detection', () => {
  it('with detection paused, measures the slow link but flags nothing and decides nothing; lifted, it is flagged and switched at once', async () => {
    const h = serviceHarness();
    const job = await registeredJob(h, spec);
    const iteration = await runIterations(h, spec, 0, 12);
    await writeKey(h, { pauseDetection: true });
    await discover(h);
    await runIterations(h, spec, iteration, 8, { link: 1, extraMs: 60 });
    await step(h, job);
    const link = job.detector.snapshot().pipelineLinks.find((l) => l.link === 1)!;
    expect(link.straggler).toBe(false);
    expect(link.extraMs).toBeGreaterThan(50); // measured on
    expect(job.switching.handshake).toBeNull();
    expect(job.decisions.recent().filter((d) => d.kind !== 'initial')).toEqual([]);
    expect(await metricValue(h, 'pipemorph_stragglers', { job: spec.jobId, kind: 'pipeline' })).toBe(0);
    // The twin: lifted, the straggler is there at once (no new samples needed) and switched.
    await writeKey(h, null);
    await discover(h);
    expect(job.detector.snapshot().pipelineLinks.find((l) => l.link === 1)!.straggler).toBe(true);
    await step(h, job);
    expect(job.switching.handshake?.decision.kind).toBe('straggler');
  });

  it('reconfigures the detector in place: a raised enterAfter holds a straggler the defaults flag, with what was learned kept', async () => {
    const run = async (enterAfter: number | null) => {
      const h = serviceHarness();
      const job = await registeredJob(h, spec);
      const iteration = await runIterations(h, spec, 0, 12);
      const baseline = job.detector.snapshot().pipelineLinks[1].baselineMs;
      if (enterAfter !== null) {
        await writeKey(h, { detection: { enterAfter, severeEnterAfter: enterAfter } });
        await discover(h);
        expect(job.detector.config.enterAfter).toBe(enterAfter);
        expect(job.detector.snapshot().pipelineLinks[1]).toMatchObject({ baselineMs: baseline, samples: 12 }); // nothing relearned
      }
      await runIterations(h, spec, iteration, 4, { link: 1, extraMs: 60 });
      return job.detector.snapshot().pipelineLinks[1].straggler;
    };
    expect(await run(6)).toBe(false);
    expect(await run(null)).toBe(true); // the twin: the configuration's enterAfter flags it
  });
});

describe('per-job overrides: cost knobs', () => {
  it("declines a switch the job's own switch cost does not pay for, and takes it with the configuration's", async () => {
    const run = async (overrides: boolean) => {
      const h = serviceHarness();
      const job = await registeredJob(h, spec);
      if (overrides) {
        await writeKey(h, { control: { switchCostMs: 1e6 } });
        await discover(h);
      }
      await runIterations(h, spec, 0, 12);
      await runIterations(h, spec, 12, 8, { link: 1, extraMs: 60 });
      await step(h, job);
      return job.decisions.recent().at(-1)!;
    };
    const declined = await run(true);
    expect(declined).toMatchObject({ kind: 'straggler', verdict: 'declined', overrides: true });
    expect(declined.cost?.costMs).toBe(2e6);
    expect(await run(false)).toMatchObject({ kind: 'straggler', verdict: 'taken', overrides: false });
  });
});

describe('per-job overrides: bad input', () => {
  it.each<[string, string, RegExp]>([
    ['not JSON', '{"version": 1,', /not JSON/],
    ['a schema violation', JSON.stringify({ version: 1, setBy: 'bob', reason: 'r', detection: { enterAfter: 0 } }), /\/detection\/enterAfter must be >= 1/],
    ['an unknown knob', JSON.stringify({ version: 1, setBy: 'bob', reason: 'r', detection: { enterAfterr: 3 } }), /unknown field "enterAfterr"/],
    ['knobs the merged configuration refuses', JSON.stringify({ version: 1, setBy: 'bob', reason: 'r', detection: { windowSize: 3, baselineWarmup: 1000 } }), /baselineWarmup 1000 is unreasonably large/],
    ['a missing setBy', JSON.stringify({ version: 1, reason: 'r' }), /misses field "setBy"/],
  ])('refuses %s written to the key: counted, kept in the rejected stream, logged as a change, what was in force stays', async (_what, bad, reason) => {
    const h = serviceHarness();
    const job = await registeredJob(h, spec);
    await writeKey(h, { pauseSwitching: true });
    await discover(h);
    await writeKey(h, bad);
    await discover(h);
    await discover(h); // an unchanged key is not refused again
    expect(job.overrides.inForce?.version).toBe(1);
    expect(job.overrides.pauseSwitching).toBe(true);
    expect(await metricValue(h, 'pipemorph_overrides_total', { source: 'leader', result: 'rejected' })).toBe(1);
    const rejected = h.store.entries(jobKeys(spec.jobId).rejected);
    expect(rejected).toHaveLength(1);
    expect(rejected[0].message).toBe(bad);
    expect(rejected[0].fields?.reason).toMatch(/^overrides: /);
    expect(rejected[0].fields?.reason).toMatch(reason);
    expect(job.overrides.changes.at(-1)).toMatchObject({ action: 'rejected', seen: 'poll' });
    // The twin: a valid document after it is applied.
    await writeKey(h, { version: 2, pauseSwitching: false });
    await discover(h);
    expect(job.overrides.inForce?.version).toBe(2);
    expect(job.overrides.pauseSwitching).toBe(false);
  });
});

describe('per-job overrides: failover', () => {
  async function takeOver(withOverrides: boolean): Promise<{ b: ServiceHarness; taken: JobRuntime }> {
    const a = serviceHarness();
    await registeredJob(a, spec);
    if (withOverrides) {
      await writeKey(a, { pauseSwitching: true, detection: { leaveAfter: 7 } });
      await discover(a);
    }
    await runIterations(a, spec, 0, 12);
    await runIterations(a, spec, 12, 8, { link: 1, extraMs: 60 });
    // A stops; its lease runs out on the clock and B takes the job.
    const b = serviceHarness({ store: a.store, clock: a.clock, ownerId: 'replica-b' });
    a.clock.advance(a.config.jobs.leaseMs + 1);
    await b.registry.discover();
    const taken = b.registry.get(spec.jobId)!;
    await b.ingest.claimForAdopted(); // the history replay
    await step(b, taken);
    return { b, taken };
  }

  it('a replica taking the job over reads the overrides before its first decision', async () => {
    const { b, taken } = await takeOver(true);
    expect(taken.overrides.changes[0]).toMatchObject({ action: 'applied', seen: 'adoption', version: 1 });
    expect(taken.detector.config.leaveAfter).toBe(7);
    expect(taken.switching.handshake).toBeNull();
    const decided = taken.decisions.recent();
    expect(decided.length).toBeGreaterThan(0);
    expect(decided.every((d) => d.verdict === 'paused' && d.overrides)).toBe(true);
    expect(b.store.controlEvents(spec.jobId).map((e) => e.type)).toEqual(['commit']);
  });

  it('can fail: without overrides the replica that takes over switches for the same straggler', async () => {
    const { taken } = await takeOver(false);
    expect(taken.switching.handshake?.decision.kind).toBe('straggler');
  });

  it('the same replica taking the job again keeps what was in force when the key is refused meanwhile', async () => {
    const h = serviceHarness();
    const job = await registeredJob(h, spec);
    await writeKey(h, { pauseSwitching: true });
    await discover(h);
    await writeKey(h, '{broken');
    const again = (await h.registry.adopt(spec.jobId))!;
    expect(again).not.toBe(job);
    expect(again.overrides.inForce?.version).toBe(1);
    expect(again.overrides.pauseSwitching).toBe(true);
    expect(again.overrides.changes.map((c) => c.action)).toEqual(['applied', 'rejected']);
  });

  it('writes the overrides in force back when Redis lost the job', async () => {
    const h = serviceHarness();
    await registeredJob(h, spec);
    await writeKey(h, { pauseSwitching: true });
    await discover(h);
    const text = await h.store.readOverrides(spec.jobId);
    await h.store.forgetJob(spec.jobId, 0);
    expect(await h.store.readOverrides(spec.jobId)).toBeNull();
    await discover(h);
    expect(await h.store.readOverrides(spec.jobId)).toBe(text);
    expect(h.registry.get(spec.jobId)!.overrides.pauseSwitching).toBe(true);
  });
});

describe('per-job overrides: the API side (OverridesService.write)', () => {
  it('sets version and setAt, refuses a stale version, and a body the merged configuration refuses', async () => {
    const h = serviceHarness();
    await registeredJob(h, spec);
    h.clock.advance(1000);
    const first = await h.overrides.write(spec.jobId, JSON.stringify({ setBy: 'carol', reason: 'tuning', detection: { enterAfter: 4 } }));
    expect(first).toMatchObject({ status: 'written', overrides: { version: 1, setAt: h.clock.now(), setBy: 'carol' } });
    expect(await h.overrides.write(spec.jobId, JSON.stringify({ version: 1, setBy: 'carol', reason: 'again' }))).toMatchObject({ status: 'conflict' });
    expect(await h.overrides.write(spec.jobId, JSON.stringify({ version: 2, setBy: 'carol', reason: 'again' }))).toMatchObject({ status: 'written', overrides: { version: 2 } });
    const bad = await h.overrides.write(spec.jobId, JSON.stringify({ setBy: 'carol', reason: 'r', detection: { enterAfter: 0, ewmaAlpha: 2 } }));
    expect(bad.status).toBe('invalid');
    expect(bad.status === 'invalid' && [...bad.problems].sort()).toEqual(['/detection/enterAfter must be >= 1', '/detection/ewmaAlpha must be <= 1']); // every problem at once
    expect(await h.overrides.write('nope', '{}')).toEqual({ status: 'not-registered' });
    expect(JSON.parse((await h.store.readOverrides(spec.jobId))!).version).toBe(2); // refused writes changed nothing
    expect(await metricValue(h, 'pipemorph_overrides_total', { source: 'api', result: 'applied' })).toBe(2);
    expect(await metricValue(h, 'pipemorph_overrides_total', { source: 'api', result: 'conflict' })).toBe(1);
    expect(await metricValue(h, 'pipemorph_overrides_total', { source: 'api', result: 'rejected' })).toBe(2);
  });
});
