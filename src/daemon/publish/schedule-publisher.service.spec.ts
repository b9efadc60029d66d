import { Ack } from '../../protocol/protocol-v1.type';
import { jobKeys } from '../../protocol/redis-keys';
import { metricValue, preparedJob, registration, runIterations, serviceHarness, stragglingJob } from '../../../test/support/service-harness';

const spec = registration('pub');

function ack(version: number, epoch: number, rank: number, accepted = true): Ack {
  return { type: 'ack', protocol: 1, jobId: spec.jobId, rank, version, epoch, accepted, ...(accepted ? {} : { reason: 'late' }) } as Ack;
}

describe('SchedulePublisher', () => {
  it('commits a prepared switch once every reporting rank acknowledged it', async () => {
    const h = serviceHarness();
    const { job } = await preparedJob(h, spec);
    const version = job.switching.handshake!.schedule.version;
    for (const rank of [0, 1, 2]) await h.publisher.onAck(job, ack(version, job.epoch, rank), h.clock.now());
    expect(job.committed!.version).toBeLessThan(version); // three of four: still open
    await h.publisher.onAck(job, ack(version, job.epoch, 3), h.clock.now());
    expect(job.committed!.version).toBe(version);
    expect(job.switching.handshake).toBeNull();
    expect(job.counters).toMatchObject({ prepares: 1, commits: 1, aborts: 0 });
    expect(h.store.controlEvents(spec.jobId).map((e) => e.type)).toEqual(['commit', 'prepare', 'commit']);
  });

  it('counts the lead from where the ranks are by now: a step between reports gives every rank a read before E (can fail: counted from the last report, the fastest rank hears it at E)', async () => {
    const h = serviceHarness();
    const { job, iteration } = await stragglingJob(h, spec);
    const last = iteration - 1; // the newest report, heard when the clock was at its latest advance
    h.clock.advance(Math.max(0, job.switching.notBefore - h.clock.now()));
    h.clock.advance(250); // 2.5 iterations of 100 ms without a report: a slow pass, a refinement finishing
    const elapsed = h.clock.now() - job.progress.lastSeen(0);
    await h.control.evaluate(job);
    const open = job.switching.handshake!;
    // Protocol sec. 5.1: the fastest rank runs one iteration past what the elapsed time explains and
    // reads control at the start of the next; it must hear the prepare before E to accept it.
    const fastestRuns = last + Math.floor(elapsed / job.progress.iterationMs) + 1;
    expect(elapsed).toBeGreaterThanOrEqual(2 * job.progress.iterationMs);
    expect(fastestRuns + 1).toBeLessThan(open.schedule.effectiveIteration);
  });

  it('aborts at the prepare deadline on the clock, and backs off twice as long after each abort', async () => {
    const h = serviceHarness();
    const { job } = await preparedJob(h, spec);
    const { prepareTimeoutMs, retryBackoffMs } = h.config.handshake;
    h.clock.advance(prepareTimeoutMs - 1);
    await h.publisher.expire(job, h.clock.now());
    expect(job.switching.handshake).not.toBeNull(); // not yet
    h.clock.advance(1);
    await h.publisher.expire(job, h.clock.now());
    expect(job.switching.handshake).toBeNull();
    expect(job.switching.notBefore).toBe(h.clock.now() + retryBackoffMs);
    expect(await metricValue(h, 'pipemorph_handshake_aborts_total', { reason: 'timeout' })).toBe(1);

    h.clock.advance(retryBackoffMs - 1);
    await h.control.evaluate(job);
    expect(job.switching.handshake).toBeNull(); // still backing off
    h.clock.advance(1);
    await h.control.evaluate(job);
    expect(job.switching.handshake).not.toBeNull(); // prepared again, a new version
    h.clock.advance(prepareTimeoutMs);
    await h.publisher.expire(job, h.clock.now());
    expect(job.switching.notBefore).toBe(h.clock.now() + 2 * retryBackoffMs);
    expect(job.counters).toMatchObject({ prepares: 2, aborts: 2, commits: 0 });
  });

  it('aborts when a rank refuses', async () => {
    const h = serviceHarness();
    const { job } = await preparedJob(h, spec);
    await h.publisher.onAck(job, ack(job.switching.handshake!.schedule.version, job.epoch, 2, false), h.clock.now());
    expect(job.switching.handshake).toBeNull();
    expect(await metricValue(h, 'pipemorph_handshake_aborts_total', { reason: 'refused' })).toBe(1);
  });

  it('publishes nothing once fenced: another replica took the job before the version was allocated', async () => {
    const h = serviceHarness();
    const { job } = await stragglingJob(h, spec);
    h.store.stealLease(spec.jobId, 'replica-b', 10000);
    h.clock.advance(h.config.control.minReplanIntervalMs);
    await h.control.evaluate(job);
    expect(job.switching.handshake).toBeNull();
    expect(h.store.controlEvents(spec.jobId).map((e) => e.type)).toEqual(['commit']);
    expect(await metricValue(h, 'pipemorph_publishes_total', { outcome: 'fenced' })).toBe(1);
  });

  it('allocates the version while the decision is planned: the prepare takes it, with no allocation after planning', async () => {
    const h = serviceHarness();
    const { job } = await stragglingJob(h, spec);
    h.clock.advance(Math.max(0, job.switching.notBefore - h.clock.now()));
    // Nothing in hand (e.g. the one held went stale): the step allocates beside planning.
    job.switching.takeReserved(Number.POSITIVE_INFINITY);
    const allocations: number[] = [];
    const allocate = h.store.nextVersion.bind(h.store);
    h.store.nextVersion = async (...args) => {
      const v = await allocate(...args);
      if (typeof v === 'number') allocations.push(v);
      return v;
    };
    let planned = false;
    const decide = h.planning.decide.bind(h.planning);
    h.planning.decide = async (...args) => {
      const outcome = await decide(...args);
      // Allocated beside planning, before the decision came back (the later call prices the healthy yardstick).
      if (!planned) expect(allocations).toHaveLength(1);
      planned = true;
      return outcome;
    };
    await h.control.evaluate(job);
    expect(planned).toBe(true);
    const version = job.switching.handshake!.schedule.version;
    expect(version).toBe(allocations[0]);
    // The publish started the next switch's allocation: once it lands the job holds a version above this one.
    await h.publisher.reserveVersion(job);
    expect(allocations).toHaveLength(2);
    expect(job.switching.reserved).toBe(allocations[1]);
    expect(allocations[1]).toBeGreaterThan(version);
  });

  it('the next switch waits for no allocation: the version in hand since the last publish is used', async () => {
    // About version allocation, not cost: every planned switch is taken.
    const h = serviceHarness({ config: (c) => (c.control.costAware = false) });
    const { job, iteration } = await preparedJob(h, spec);
    const version = job.switching.handshake!.schedule.version;
    for (let rank = 0; rank < 4; rank++) await h.publisher.onAck(job, ack(version, job.epoch, rank), h.clock.now());
    expect(job.committed!.version).toBe(version);
    await h.publisher.reserveVersion(job);
    const inHand = job.switching.reserved!;
    expect(inHand).toBeGreaterThan(version);
    let allocated = 0;
    const allocate = h.store.nextVersion.bind(h.store);
    h.store.nextVersion = async (...args) => (allocated++, allocate(...args));
    // The link heals: the recovery switch takes the version in hand.
    await runIterations(h, spec, iteration, 12);
    h.clock.advance(Math.max(0, job.switching.notBefore - h.clock.now()));
    await h.control.evaluate(job);
    expect(job.switching.handshake!.schedule.version).toBe(inHand);
    // Only the following switch's version was allocated, after the prepare had its own.
    await h.publisher.reserveVersion(job);
    expect(allocated).toBe(1);
    expect(job.switching.reserved).toBeGreaterThan(inHand);
  });

  it('versions are used in allocation order while one is in flight (can fail: a publish that allocated past it would go backwards)', async () => {
    const h = serviceHarness();
    const { job } = await preparedJob(h, spec);
    const { decision, schedule } = job.switching.handshake!;
    // The ranks stay silent: the handshake times out, and the controller prepares again.
    h.clock.advance(h.config.handshake.prepareTimeoutMs);
    await h.publisher.expire(job, h.clock.now());
    expect(job.switching.handshake).toBeNull();
    job.switching.takeReserved(Number.POSITIVE_INFINITY);
    // An allocation in flight (slow to come back) when the publish needs a version: the publish must
    // take it, not allocate past it (the late one would then be in hand below a version already sent).
    const allocate = h.store.nextVersion.bind(h.store);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let first = true;
    h.store.nextVersion = async (...args) => {
      const v = await allocate(...args);
      if (first) {
        first = false;
        await gate;
      }
      return v;
    };
    const inFlight = h.publisher.reserveVersion(job);
    const prepared = h.publisher.prepare(job, decision, h.clock.now());
    await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    await Promise.all([inFlight, prepared]);
    await h.publisher.reserveVersion(job);
    const again = job.switching.handshake!.schedule.version;
    expect(again).toBeGreaterThan(schedule.version);
    expect(job.switching.reserved).toBeGreaterThan(again);
  });

  it('never publishes a reserved version at or below one the job has known since (can fail: such a reservation is dropped)', async () => {
    const h = serviceHarness();
    const { job } = await stragglingJob(h, spec);
    h.clock.advance(Math.max(0, job.switching.notBefore - h.clock.now()));
    job.switching.reserve(job.versionFloor()); // not above the floor: must not be used
    await h.control.evaluate(job);
    expect(job.switching.handshake!.schedule.version).toBeGreaterThan(job.committed!.version);
    const versions = h.store.controlEvents(spec.jobId).map((e) => e.version);
    expect(new Set(versions).size).toBe(versions.length);
    await h.publisher.reserveVersion(job);
    expect(job.switching.takeReserved(0)).toBeGreaterThan(job.switching.handshake!.schedule.version); // the next one, in hand
    expect(job.switching.takeReserved(0)).toBeNull(); // taken once
    job.switching.reserve(7);
    expect(job.switching.takeReserved(6)).toBe(7);
    job.switching.reserve(7);
    expect(job.switching.takeReserved(7)).toBeNull();
  });

  it('cannot commit once fenced: the handshake closes, the schedule in force stays', async () => {
    const h = serviceHarness();
    const { job } = await preparedJob(h, spec);
    const before = job.committed!.version;
    const version = job.switching.handshake!.schedule.version;
    h.store.stealLease(spec.jobId, 'replica-b', 10000);
    for (const rank of [0, 1, 2, 3]) await h.publisher.onAck(job, ack(version, job.epoch, rank), h.clock.now());
    expect(job.switching.handshake).toBeNull();
    expect(job.committed!.version).toBe(before);
    expect((await h.store.readSchedules(spec.jobId)).pending!.version).toBe(version); // left for the new owner to abandon
    expect(job.counters.commits).toBe(0);
    expect(await metricValue(h, 'pipemorph_publishes_total', { outcome: 'fenced' })).toBe(1);
  });

  it('opens no handshake when another prepare is pending (busy)', async () => {
    const h = serviceHarness();
    const { job } = await stragglingJob(h, spec);
    // A prepare already pending under this epoch (written by an earlier pass that lost track of it).
    const stray = { ...job.committed!, version: 99, state: 'prepared' as const };
    await h.store.prepare(spec.jobId, job.epoch, stray, { type: 'prepare', protocol: 1, jobId: spec.jobId, version: 99, epoch: job.epoch, effectiveIteration: 40 }, 1000);
    h.clock.advance(h.config.control.minReplanIntervalMs);
    await h.control.evaluate(job);
    expect(job.switching.handshake).toBeNull();
    expect(job.counters.prepares).toBe(0);
    expect((await h.store.readSchedules(spec.jobId)).pending!.version).toBe(99);
    expect(await metricValue(h, 'pipemorph_publishes_total', { outcome: 'busy' })).toBe(1);
  });

  it('refuses a commit whose prepare is no longer pending (stale)', async () => {
    const h = serviceHarness();
    const { job } = await preparedJob(h, spec);
    const before = job.committed!.version;
    const open = job.switching.handshake!;
    // The prepare was dropped behind this replica's back (an abort by an earlier runtime of the job).
    await h.store.abort(spec.jobId, job.epoch, { type: 'abort', protocol: 1, jobId: spec.jobId, version: open.schedule.version, epoch: job.epoch, effectiveIteration: open.schedule.effectiveIteration }, 1000);
    for (const rank of [0, 1, 2, 3]) await h.publisher.onAck(job, ack(open.schedule.version, job.epoch, rank), h.clock.now());
    expect(job.switching.handshake).toBeNull();
    expect(job.committed!.version).toBe(before);
    expect(await metricValue(h, 'pipemorph_publishes_total', { outcome: 'stale' })).toBe(1);
    expect(h.store.entries(jobKeys(spec.jobId).control).length).toBe(3); // commit, prepare, abort: no second commit
  });
});
