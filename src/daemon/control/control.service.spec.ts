import { metricValue, registeredJob, registration, runIterations, serviceHarness, stragglingJob } from '../../../test/support/service-harness';

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
    const nextVersion = h.store.nextVersion.bind(h.store);
    jest.spyOn(h.store, 'nextVersion').mockImplementationOnce(async (...args) => {
      h.store.stealLease(spec.jobId, 'replica-b', h.config.jobs.leaseMs);
      return nextVersion(...args);
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
