import { HttpException, Logger } from '@nestjs/common';
import { jobKeys, REGISTRATIONS_STREAM } from '../../protocol/redis-keys';
import { ingestPass, metricValue, registeredJob, registration, reportIteration, runIterations, serviceHarness, ServiceHarness, settle } from '../../../test/support/service-harness';

const spec = registration('ing');

async function readiness(h: ServiceHarness): Promise<{ status: number; body: unknown }> {
  try {
    return { status: 200, body: await h.health.ready() };
  } catch (error) {
    if (!(error instanceof HttpException)) throw error;
    return { status: error.getStatus(), body: error.getResponse() };
  }
}

/** Stops the loop: it may be sleeping on the manual clock after a failed pass. */
async function stop(h: ServiceHarness): Promise<void> {
  const stopped = h.ingest.stop();
  h.clock.advance(1000);
  await stopped;
}

describe('IngestService', () => {
  it('claims every adopted job though one claim fails, and claims that one again at the next pass (a loop that stops at the first failure fails it)', async () => {
    const a = serviceHarness();
    const specs = [registration('adopt-a'), registration('adopt-b')];
    for (const s of specs) await registeredJob(a, s);
    for (const s of specs) await runIterations(a, s, 0, 6);
    // Replica A stops; B takes both jobs once the leases expire, and its first history read fails.
    const b = serviceHarness({ store: a.store, clock: a.clock, ownerId: 'replica-b' });
    a.clock.advance(a.config.jobs.leaseMs + 1);
    await b.registry.discover();
    const taken = specs.map((s) => b.registry.get(s.jobId)!);
    expect(taken.every((j) => j !== undefined)).toBe(true);
    b.store.failNext('delivered', new Error('Command timed out'));
    await b.ingest.claimForAdopted();
    expect(taken.map((j) => j.historyReplayed).sort()).toEqual([false, true]); // the other job was not held up
    expect(await metricValue(b, 'pipemorph_ingest_errors_total')).toBe(1);
    await b.ingest.claimForAdopted();
    expect(taken.every((j) => j.historyReplayed)).toBe(true);
    expect(b.registry.takeAdopted()).toEqual([]);
  });

  it('replays the history into a runtime rebuilt while a batch was being read before it takes the batch (a slow link is not learned as healthy)', async () => {
    const h = serviceHarness();
    const job = await registeredJob(h, spec);
    const iteration = await runIterations(h, spec, 0, 12);
    // The loop reads the slow link's first reports; meanwhile the job is rebuilt under a new epoch.
    for (let i = iteration; i < iteration + 8; i++) await reportIteration(h, spec, i, { link: 1, extraMs: 60 });
    const { batches } = await h.store.readNew(h.registry.reportStreams(), h.config.ingest.consumerGroup, h.registry.replicaId, 1000, 0);
    const fresh = (await h.registry.reconcileEpoch(job, job.epoch + 5))!;
    expect(fresh).not.toBe(job);
    expect(fresh.historyReplayed).toBe(false);
    await h.ingest.processStream(batches[0].stream, batches[0].entries);
    expect(fresh.historyReplayed).toBe(true);
    const slow = fresh.detector.snapshot().pipelineLinks.find((l) => l.dp === 0 && l.link === 1)!;
    expect(slow.extraMs).toBeGreaterThan(50); // measured against the healthy baseline of the history
    await h.control.settled();
    await h.ingest.acknowledged();
  });

  it('rejects a bad message with its reason and goes on with the rest of the batch', async () => {
    const h = serviceHarness();
    const job = await registeredJob(h, spec);
    const reports = jobKeys(spec.jobId).reports;
    await h.store.append(reports, '{"type":"report","protocol":1', 1000);
    await h.store.append(reports, JSON.stringify({ type: 'report', protocol: 1, jobId: spec.jobId, rank: 42, iteration: 0, scheduleVersion: 1, computeMs: { f: 1, b: 1, w: 1 }, links: [] }), 1000);
    await ingestPass(h);
    const rejected = h.store.entries(jobKeys(spec.jobId).rejected);
    expect(rejected).toHaveLength(2);
    expect(rejected[1].fields!.reason).toMatch(/rank 42 is not a reporting rank/);
    expect(job.counters.rejected).toBe(2);
    expect(await h.store.pendingCount(reports, h.config.ingest.consumerGroup)).toBe(0); // acknowledged
    // The unparsable one has no type to count under.
    expect(await metricValue(h, 'pipemorph_ingest_messages_total', { type: 'unknown', result: 'rejected' })).toBe(1);
    expect(await metricValue(h, 'pipemorph_ingest_messages_total', { type: 'report', result: 'rejected' })).toBe(1);
  });

  it('leaves a batch unacknowledged when handling it fails on the store, and processes it once claimed again', async () => {
    const h = serviceHarness();
    const job = await registeredJob(h, spec);
    const reports = jobKeys(spec.jobId).reports;
    await h.store.append(reports, 'not json', 1000);
    h.store.failNext('reject', new Error('connection lost'));
    await expect(ingestPass(h)).rejects.toThrow('connection lost');
    expect(await h.store.pendingCount(reports, h.config.ingest.consumerGroup)).toBe(1);
    h.clock.advance(h.config.ingest.claimIdleMs);
    expect(await h.ingest.claimIdle(spec.jobId)).toBe(1);
    expect(h.store.entries(jobKeys(spec.jobId).rejected)).toHaveLength(1);
    expect(h.registry.get(spec.jobId)).toBe(job);
    expect(await h.store.pendingCount(reports, h.config.ingest.consumerGroup)).toBe(0);
  });

  it('processes entries once when a claim is due while a slow read is still in hand (claims run between reads)', async () => {
    const reports = jobKeys(spec.jobId).reports;
    const run = async (claim: (h: ServiceHarness) => Promise<unknown>): Promise<number> => {
      const h = serviceHarness();
      const job = await registeredJob(h, spec);
      // The read delivers (the entries are pending from now on) but its reply is slow to arrive.
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const readNew = h.store.readNew.bind(h.store);
      let slow = true;
      h.store.readNew = async (...args) => {
        const read = await readNew(...args);
        if (slow && read.batches.some((b) => b.stream === reports)) {
          slow = false;
          await gate;
        }
        return read;
      };
      for (let k = 0; k < 3; k++) await h.store.append(reports, 'not json', 1000);
      await h.ingest.start();
      await settle();
      // Past the claim threshold for Redis: maintenance's claim comes due meanwhile.
      h.clock.advance(h.config.ingest.claimIdleMs + 1);
      await claim(h);
      release();
      await settle(60);
      await stop(h);
      return job.counters.rejected;
    };
    expect(await run(async (h) => h.ingest.requestClaim(spec.jobId))).toBe(3);
    // The old way, a claim beside the loop, processes the entries in hand a second time.
    expect(await run((h) => h.ingest.claimIdle(spec.jobId))).toBe(6);
  });

  it('keeps running through failed reads, unready meanwhile (503), ready again once reads succeed', async () => {
    const h = serviceHarness();
    await h.ingest.start();
    await settle();
    expect(await readiness(h)).toEqual({ status: 200, body: { status: 'ok', redis: true, ingest: true } });
    h.store.failNext('readNew', new Error('connect ECONNREFUSED'), Number.POSITIVE_INFINITY);
    await settle();
    expect(await metricValue(h, 'pipemorph_ingest_errors_total')).toBe(1);
    // The loop retries every 500 ms on the clock; after 5 s without a read it is not ready.
    for (let t = 0; t < 11; t++) {
      h.clock.advance(500);
      await settle();
    }
    expect(await metricValue(h, 'pipemorph_ingest_errors_total')).toBeGreaterThanOrEqual(10);
    expect(await readiness(h)).toEqual({ status: 503, body: { status: 'unavailable', redis: true, ingest: false, reason: expect.stringMatching(/^the last \d+ ingest passes failed: connect ECONNREFUSED$/) } });
    h.store.clearFaults();
    h.clock.advance(500);
    await settle();
    expect((await readiness(h)).status).toBe(200);
    await stop(h);
  });

  it('is unready after 3 failed passes in a row, though its last read is recent; one failed pass is not enough (issue 32, item 2)', async () => {
    const h = serviceHarness();
    await h.ingest.start();
    await settle();
    // One failure: a blip, still ready (the twin of the case below).
    h.store.failNext('readNew', new Error('EXECABORT Transaction discarded because of previous errors.'), 1);
    h.clock.advance(500);
    await settle();
    expect((await readiness(h)).status).toBe(200);
    // Every pass fails (a Cluster node given as REDIS_URL): unready at the third, long before the 5 s read window runs out.
    h.store.failNext('readNew', new Error('EXECABORT Transaction discarded because of previous errors.'), Number.POSITIVE_INFINITY);
    for (let t = 0; t < 3; t++) {
      h.clock.advance(500);
      await settle();
    }
    expect(await readiness(h)).toEqual({ status: 503, body: { status: 'unavailable', redis: true, ingest: false, reason: expect.stringMatching(/^the last \d+ ingest passes failed: EXECABORT/) } });
    h.store.clearFaults();
    h.clock.advance(500);
    await settle();
    expect((await readiness(h)).status).toBe(200);
    await stop(h);
  });

  it('is unready at the first pass that gets a Cluster reply (MOVED), says so once in one line with what to set, and is ready once reads succeed (issue 32, item 2)', async () => {
    const h = serviceHarness();
    const errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    try {
      await h.ingest.start();
      await settle();
      const moved = Object.assign(new Error('EXECABORT Transaction discarded because of previous errors.'), { previousErrors: [new Error('MOVED 4913 127.0.0.1:7001')] });
      h.store.failNext('readNew', moved, Number.POSITIVE_INFINITY);
      h.clock.advance(500);
      await settle();
      // One pass is enough: this reply never heals by retrying (the twin, a blip of another kind, stays ready above).
      expect(await readiness(h)).toEqual({ status: 503, body: { status: 'unavailable', redis: true, ingest: false, reason: expect.stringMatching(/is a node of a Redis Cluster \(it answered MOVED\).*set REDIS_CLUSTER_NODES=host:port/) } });
      for (let t = 0; t < 3; t++) {
        h.clock.advance(500);
        await settle();
      }
      expect(errors.mock.calls.filter(([line]) => /is a node of a Redis Cluster/.test(String(line)))).toHaveLength(1);
      h.store.clearFaults();
      h.clock.advance(500);
      await settle();
      expect((await readiness(h)).status).toBe(200);
      await stop(h);
    } finally {
      errors.mockRestore();
    }
  });

  it('answers 503 on readiness while Redis does not answer, and before the loop runs', async () => {
    const h = serviceHarness();
    expect(await readiness(h)).toEqual({ status: 503, body: { status: 'unavailable', redis: true, ingest: false, reason: 'ingest loop not running' } });
    await h.ingest.start();
    await settle();
    h.store.setReachable(false);
    expect(await readiness(h)).toEqual({ status: 503, body: { status: 'unavailable', redis: false, ingest: true, reason: 'Redis does not answer' } });
    await stop(h);
  });

  it('recreates the group of a deleted stream and sets aside one that cannot be read, while other jobs go on', async () => {
    const h = serviceHarness();
    await registeredJob(h, spec);
    const other = registration('ing-other');
    const otherJob = await registeredJob(h, other);
    h.store.dropStream(jobKeys(spec.jobId).reports);
    h.store.breakStream(jobKeys(other.jobId).reports);
    await h.ingest.start();
    await settle();
    expect(await metricValue(h, 'pipemorph_ingest_stream_repairs_total', { result: 'repaired' })).toBe(1);
    expect(await metricValue(h, 'pipemorph_ingest_stream_repairs_total', { result: 'quarantined' })).toBe(1);
    await h.store.append(jobKeys(spec.jobId).reports, 'not json', 1000);
    await h.store.append(REGISTRATIONS_STREAM, '{}', 1000);
    await settle();
    // The repaired stream is read again; the registration too; the broken one is skipped, not fatal.
    expect(h.registry.get(spec.jobId)!.counters.rejected).toBe(1);
    expect(h.store.entries('pipemorph:rejected')).toHaveLength(1);
    expect(otherJob.counters.rejected).toBe(0);
    expect(h.ingest.live).toBe(true);
    await stop(h);
  });

  it('goes on reading, acknowledging and deciding for every job while one job\'s plan is slow', async () => {
    const h = serviceHarness({ config: (c) => (c.control.minReplanIntervalMs = 0) });
    const slowSpec = registration('slow-plan', 4);
    const otherSpec = registration('other', 3);
    const slowJob = await registeredJob(h, slowSpec);
    const other = await registeredJob(h, otherSpec);
    await runIterations(h, slowSpec, 0, 12);
    // Every decision for the 4-stage job waits for `release` (a plan taking as long as the test wants).
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const decide = h.planning.decide.bind(h.planning);
    let heldSteps = 0;
    h.planning.decide = async (input, config) => {
      if (input.stages === 4) {
        heldSteps++;
        await held;
      }
      return decide(input, config);
    };
    const pass = async (spec: typeof slowSpec, iteration: number, slow: { link: number; extraMs: number } | null) => {
      await reportIteration(h, spec, iteration, slow);
      const { batches } = await h.store.readNew(h.registry.reportStreams(), h.config.ingest.consumerGroup, h.registry.replicaId, 1000, 0);
      for (const batch of batches) await h.ingest.processStream(batch.stream, batch.entries);
    };
    for (let it = 12; it < 20; it++) {
      h.clock.advance(100);
      await pass(slowSpec, it, { link: 1, extraMs: 60 });
      await pass(otherSpec, it - 12, null);
    }
    await settle();
    expect(heldSteps).toBe(1); // one step in progress; later triggers wait behind it, coalesced
    // Ingest went on: both jobs' reports were processed while the plan was held, and the other
    // job's acknowledged. The planning job's wait for its decision: a replica taking it over
    // meanwhile would claim them.
    expect(slowJob.counters.reports).toBe(20 * 4);
    expect(other.counters.reports).toBe(8 * 3);
    const pending = (spec: typeof slowSpec) => h.store.pendingCount(jobKeys(spec.jobId).reports, h.config.ingest.consumerGroup);
    expect(await pending(otherSpec)).toBe(0);
    expect(await pending(slowSpec)).toBeGreaterThan(0);
    expect(await h.ingest.claimIdle(slowSpec.jobId, 0)).toBe(0); // not claimed while waiting for the decision
    expect(slowJob.switching.handshake).toBeNull();
    // Can fail: awaiting the decision, as ingest did before, does not get past the held plan.
    const awaited = h.control.evaluate(slowJob).then(() => 'decided');
    expect(await Promise.race([awaited, settle().then(() => 'still planning')])).toBe('still planning');
    release();
    await awaited;
    await h.control.settled();
    await h.ingest.acknowledged();
    expect(slowJob.switching.handshake).not.toBeNull(); // the held step decided on what it saw, and the straggler is answered
    expect(await pending(slowSpec)).toBe(0);
  });

  it('lets the event loop run while it processes a large batch (issue 23, item 5)', async () => {
    // A 4096-rank job's batch of 1000 reports held the loop for 100-250 ms in one task: timers,
    // HTTP, lease renewals and other jobs' steps waited. Now it yields every 10 ms of work.
    const h = serviceHarness();
    const spec = registration('sliced', 16, 64);
    await registeredJob(h, spec);
    for (let i = 0; i < 3; i++) await reportIteration(h, spec, i);
    const { batches } = await h.store.readNew(h.registry.reportStreams(), h.config.ingest.consumerGroup, h.registry.replicaId, 5000, 0);
    expect(batches[0].entries.length).toBe(3 * 16 * 64);
    let timerRan = false;
    let done = false;
    setTimeout(() => (timerRan = !done), 0);
    const started = performance.now();
    await h.ingest.processStream(batches[0].stream, batches[0].entries);
    done = true;
    expect(performance.now() - started).toBeGreaterThan(20); // long enough to need a slice
    expect(timerRan).toBe(true);
    await h.control.settled();
    await h.ingest.acknowledged();
  });
});
