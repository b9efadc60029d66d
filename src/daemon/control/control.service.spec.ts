import { JobRuntime } from '../jobs/job-runtime';
import { ingestPass, metricValue, registeredJob, registration, reportIteration, runIterations, serviceHarness, stragglingJob } from '../../../test/support/service-harness';

const spec = registration('ctl');

describe('ControlService', () => {
  it('publishes the initial plan of a new job at once', async () => {
    const h = serviceHarness();
    const job = await registeredJob(h, spec);
    expect(job.committed!.reason.kind).toBe('initial');
    expect(job.needsEvaluation).toBe(false);
  });

  it('waits out the re-plan interval on the clock before switching for a straggler', async () => {
    const h = serviceHarness();
    const { job } = await stragglingJob(h, spec);
    const committedAt = job.committed!.createdAt;
    expect(job.detector.snapshot().pipelineLinks.some((l) => l.straggler)).toBe(true);
    expect(job.switching.handshake).toBeNull(); // deferred, not dropped
    expect(job.needsEvaluation).toBe(true);
    h.clock.advance(committedAt + h.config.control.minReplanIntervalMs - 1 - h.clock.now());
    await h.control.evaluate(job);
    expect(job.switching.handshake).toBeNull();
    h.clock.advance(1);
    await h.control.evaluate(job);
    expect(job.switching.handshake?.decision.kind).toBe('straggler');
  });

  it('publishes nothing when the lease is lost in the middle of a pass, and lets go of the job', async () => {
    const h = serviceHarness();
    const { job } = await stragglingJob(h, spec);
    h.clock.advance(h.config.control.minReplanIntervalMs);
    // Another replica takes the job while this one decides: the decision is made, the write is fenced.
    const decide = h.planning.decide.bind(h.planning);
    jest.spyOn(h.planning, 'decide').mockImplementationOnce(async (...args) => {
      h.store.stealLease(spec.jobId, 'replica-b', h.config.jobs.leaseMs);
      return decide(...args);
    });
    await h.control.evaluate(job);
    expect(await metricValue(h, 'pipemorph_replans_total', { kind: 'straggler' })).toBe(1);
    expect(job.switching.handshake).toBeNull();
    expect(h.store.controlEvents(spec.jobId).map((e) => e.type)).toEqual(['commit']);
    await h.registry.discover(); // the lease renewal fails: the job is dropped
    expect(h.registry.get(spec.jobId)).toBeUndefined();
    expect(job.released).toBe(true);
    expect(await metricValue(h, 'pipemorph_lease_losses_total')).toBe(1);
    await h.control.evaluate(job); // a step queued before the drop decides nothing
    expect(h.store.controlEvents(spec.jobId)).toHaveLength(1);
  });

  it('decides nothing for a runtime released while its handshake was expiring', async () => {
    const h = serviceHarness();
    const { job } = await stragglingJob(h, spec);
    h.clock.advance(h.config.control.minReplanIntervalMs);
    jest.spyOn(h.publisher, 'expire').mockImplementationOnce(async () => h.registry.drop(spec.jobId));
    await h.control.evaluate(job);
    expect(job.switching.handshake).toBeNull();
    expect(await metricValue(h, 'pipemorph_replans_total')).toBe(0);
  });

  it('decides nothing for a job taken over until its history is replayed', async () => {
    const a = serviceHarness();
    await registeredJob(a, spec);
    await runIterations(a, spec, 0, 12);
    // Replica A stops (no renewal); its lease expires on the clock and B takes the job.
    const b = serviceHarness({ store: a.store, clock: a.clock, ownerId: 'replica-b' });
    a.clock.advance(a.config.jobs.leaseMs + 1);
    await b.registry.discover();
    const taken = b.registry.get(spec.jobId)!;
    expect(taken.epoch).toBe(2);
    await b.control.evaluate(taken);
    expect(taken.needsEvaluation).toBe(true);
    expect(await metricValue(b, 'pipemorph_replans_total')).toBe(0);
    await b.ingest.claimForAdopted();
    expect(taken.historyReplayed).toBe(true);
    expect(taken.progress.maxIteration).toBe(11); // the detector learned what A had seen
  });
});

describe('ControlService: two-phase reaction (control.refinePlanner)', () => {
  /** Commits the open handshake by acknowledging it for every reporting rank. */
  async function commitOpen(h: ReturnType<typeof serviceHarness>, job: JobRuntime): Promise<void> {
    const open = job.switching.handshake!;
    for (const r of job.reporting) {
      await h.publisher.onAck(job, { type: 'ack', protocol: 1, jobId: job.jobId, rank: r.rank, version: open.schedule.version, epoch: job.epoch, iteration: Math.max(0, job.progress.maxIteration), accepted: true }, h.clock.now());
    }
  }

  /** The policies of the decisions asked of the planning pool from here on. */
  function recordPolicies(h: ReturnType<typeof serviceHarness>): string[] {
    const policies: string[] = [];
    const decide = h.planning.decide.bind(h.planning);
    h.planning.decide = (input, config) => {
      if (input.current) policies.push(config.planner);
      return decide(input, config);
    };
    return policies;
  }

  it('switches on the fast plan first, then plans once more with the refining policy and switches again for its gain', async () => {
    const h = serviceHarness({ config: (c) => (c.control.refinePlanner = 'search') });
    // Link 1 slower by 120 ms: Alg. 2 predicts 675 ms, the search 644 ms (warm-up 16,16,3,1), above minGain.
    const job = await registeredJob(h, spec);
    await runIterations(h, spec, 0, 12);
    await runIterations(h, spec, 12, 8, { link: 1, extraMs: 120 });
    const policies = recordPolicies(h);
    h.clock.advance(Math.max(0, job.switching.notBefore - h.clock.now()));
    await h.control.evaluate(job);
    const first = job.switching.handshake!;
    expect(first.schedule.reason.detail).toMatch(/re-planned \(adaptive\)/);
    expect(policies).toEqual(['adaptive']); // the first reaction is not held up by the refinement
    expect(job.needsEvaluation).toBe(true); // the refinement is asked for
    await commitOpen(h, job);
    h.clock.advance(Math.max(0, job.switching.notBefore - h.clock.now()));
    await h.control.evaluate(job);
    await h.control.settled(); // the refinement, then the step it triggers
    expect(policies).toEqual(['adaptive', 'adaptive', 'search', 'adaptive']);
    expect(job.refinedFor).toBe('0:1');
    const second = job.switching.handshake!;
    expect(second.schedule.reason.detail).toMatch(/re-planned \(search\)/);
    expect(second.schedule.prediction.newMs).toBeLessThan(first.schedule.prediction.newMs);
    expect(second.schedule.version).toBeGreaterThan(first.schedule.version);
    // Once per set of straggling links: later steps do not search again.
    await commitOpen(h, job);
    h.clock.advance(h.config.control.minReplanIntervalMs);
    await h.control.evaluate(job);
    await h.control.settled();
    expect(policies.filter((p) => p === 'search')).toHaveLength(1);
  });

  /** A job with its first plan committed and the refinement (search) held until `release` is called. */
  async function heldRefinement(h: ReturnType<typeof serviceHarness>) {
    const job = await registeredJob(h, spec);
    await runIterations(h, spec, 0, 12);
    const iteration = await runIterations(h, spec, 12, 8, { link: 1, extraMs: 120 });
    h.clock.advance(Math.max(0, job.switching.notBefore - h.clock.now()));
    await h.control.evaluate(job);
    await commitOpen(h, job);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const decide = h.planning.decide.bind(h.planning);
    h.planning.decide = async (input, config, lane) => {
      if (config.planner === 'search') await held;
      return decide(input, config, lane);
    };
    const firstVersion = job.committed!.version;
    h.clock.advance(Math.max(0, job.switching.notBefore - h.clock.now()));
    await h.control.evaluate(job); // starts the refinement and returns without it
    return { job, iteration, release, firstVersion };
  }

  it('does not wait for the refinement: the job steps again while it runs, and its plan is switched to once made', async () => {
    const h = serviceHarness({ config: (c) => (c.control.refinePlanner = 'search') });
    const { job, release, firstVersion } = await heldRefinement(h);
    expect(job.refinedFor).toBe('0:1');
    expect(job.switching.handshake).toBeNull();
    await h.control.evaluate(job); // a step with the refinement still running: not held up by it
    expect(job.switching.handshake).toBeNull();
    release();
    await h.control.settled();
    expect(job.switching.handshake?.schedule.reason.detail).toMatch(/re-planned \(search\)/);
    expect(job.switching.handshake!.schedule.version).toBeGreaterThan(firstVersion);
  });

  it('drops a refinement made for links that no longer straggle (can fail: the same links still straggling take it)', async () => {
    const h = serviceHarness({ config: (c) => (c.control.refinePlanner = 'search') });
    const { job, iteration, release } = await heldRefinement(h);
    // Healed while the refinement ran (passes that wait for the steps only: the refinement is held).
    for (let i = iteration; i < iteration + 30; i++) {
      h.clock.advance(100);
      await reportIteration(h, spec, i);
      await ingestPass(h, 'steps');
    }
    h.clock.advance(h.config.control.minReplanIntervalMs);
    await h.control.evaluate(job);
    if (job.switching.handshake) await commitOpen(h, job); // the return to the initial plan
    const committed = job.committed!.version;
    const judged = job.decisions.recent().length;
    h.clock.advance(h.config.control.minReplanIntervalMs);
    release();
    await h.control.settled();
    expect(job.decisions.recent()).toHaveLength(judged); // not even put to the cost gate
    expect(job.switching.handshake).toBeNull();
    expect(job.committed!.version).toBe(committed);
    expect(job.committed!.reason.detail).not.toMatch(/search/);
  });

  /** The harness job at 60 ms on link 1: its first plan switched to and committed, then one more step `wait(h, job)` ms later. */
  async function firstPlanThenStep(refinePlanner: 'none' | 'search', wait: (h: ReturnType<typeof serviceHarness>, job: JobRuntime) => number) {
    const h = serviceHarness({ config: (c) => (c.control.refinePlanner = refinePlanner) });
    const { job } = await stragglingJob(h, spec);
    const policies = recordPolicies(h);
    h.clock.advance(Math.max(0, job.switching.notBefore - h.clock.now()));
    await h.control.evaluate(job);
    await commitOpen(h, job);
    h.clock.advance(wait(h, job));
    await h.control.evaluate(job);
    return { h, job, policies };
  }

  it('can fail: with refinePlanner none the job is never planned by another policy', async () => {
    const { job, policies } = await firstPlanThenStep('none', (h) => h.config.control.minReplanIntervalMs);
    expect(policies.every((p) => p === 'adaptive')).toBe(true);
    expect(job.refinedFor).toBeNull();
  });

  it('runs no refinement where a lower bound shows no plan could be worth a switch (60 ms on link 1: Alg. 2 is within minGain of it)', async () => {
    const { job, policies, h } = await firstPlanThenStep('search', (h, j) => Math.max(0, j.switching.notBefore - h.clock.now()));
    await h.control.settled();
    expect(policies).toEqual(['adaptive', 'adaptive']);
    expect(job.refinedFor).toBeNull();
  });

  it('forgets the refinement once no link straggles, so the next straggler is refined again', async () => {
    const h = serviceHarness({ config: (c) => (c.control.refinePlanner = 'search') });
    const job = await registeredJob(h, spec);
    await runIterations(h, spec, 0, 12);
    const iteration = await runIterations(h, spec, 12, 8, { link: 1, extraMs: 120 });
    h.clock.advance(Math.max(0, job.switching.notBefore - h.clock.now()));
    await h.control.evaluate(job);
    await commitOpen(h, job);
    h.clock.advance(Math.max(0, job.switching.notBefore - h.clock.now()));
    await h.control.evaluate(job);
    expect(job.refinedFor).toBe('0:1');
    if (job.switching.handshake) await commitOpen(h, job);
    await runIterations(h, spec, iteration, 30); // healthy again
    h.clock.advance(h.config.control.minReplanIntervalMs);
    await h.control.evaluate(job);
    expect(job.refinedFor).toBeNull();
  });
});

describe('ControlService: the healthy yardstick', () => {
  /** Two replicas with an all-reduce; every ring link of stage 1 slower by `ringExtraMs`. */
  async function ringJob(jobId: string, ringExtraMs: number): Promise<number> {
    const h = serviceHarness();
    const spec = { ...registration(jobId, 4, 2), dataParallel: { gradientBytes: [1e9, 1e9, 1e9, 1e9] } };
    const job = await registeredJob(h, spec);
    for (let iteration = 0; iteration < 20; iteration++) {
      h.clock.advance(100);
      for (const r of spec.ranks) {
        const links = [];
        for (const peerPp of [r.pp + 1, r.pp - 1]) if (peerPp >= 0 && peerPp < 4) links.push({ peer: r.dp * 4 + peerPp, kind: 'pipeline', bytes: 1 << 24, medianMs: 1, maxMs: 1.2, delegated: false, error: null });
        const ms = 0.1 + (r.pp === 1 && iteration >= 10 ? ringExtraMs : 0);
        links.push({ peer: (1 - r.dp) * 4 + r.pp, kind: 'data-parallel', bytes: 1 << 22, medianMs: ms, maxMs: ms, delegated: false, error: null });
        const report = { type: 'report', protocol: 1, jobId, rank: r.rank, iteration, scheduleVersion: job.committed!.version, computeMs: { f: 10, b: 10, w: 10 }, links };
        await h.store.append(`pipemorph:{${jobId}}:reports`, JSON.stringify(report), 100000);
      }
      await ingestPass(h);
    }
    h.clock.advance(60000); // past the healthy yardstick's cache
    await h.control.evaluate(job);
    return metricValue(h, 'pipemorph_predicted_iteration_seconds', { job: jobId, schedule: 'healthy' });
  }

  it('leaves slow ring links out, as it leaves out slow pipeline links', async () => {
    const healthy = await ringJob('ring-ok', 0);
    const slow = await ringJob('ring-slow', 30);
    expect(healthy).toBeGreaterThan(0);
    expect(slow).toBeCloseTo(healthy, 6);
  });
});
