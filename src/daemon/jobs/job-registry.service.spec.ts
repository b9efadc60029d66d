import { ingestPass, metricValue, registeredJob, registration, runIterations, ServiceHarness, serviceHarness, stragglingJob } from '../../../test/support/service-harness';
import { JobRuntime } from './job-runtime';

const spec = registration('reg');

describe('JobRegistry', () => {
  it('hands each adopted job to ingest once', async () => {
    const h = serviceHarness();
    await h.store.saveSpec(spec, '1-1');
    await h.registry.discover();
    expect(h.registry.get(spec.jobId)?.epoch).toBe(1);
    expect(h.registry.takeAdopted()).toEqual([spec.jobId]);
    expect(h.registry.takeAdopted()).toEqual([]);
  });

  it('takes a job once when discoveries and its registration ask for it at the same time (issue 23, item 6)', async () => {
    const h = serviceHarness();
    await h.store.saveSpec(spec, '1-1');
    const [, taken] = await Promise.all([h.registry.discover(), h.registry.take(spec.jobId), h.registry.discover()]);
    expect(taken).toBe(h.registry.get(spec.jobId));
    expect(h.registry.get(spec.jobId)?.epoch).toBe(1); // two adoptions would have bumped it to 2
    expect(h.registry.takeAdopted()).toEqual([spec.jobId]);
  });

  it('tries to take only the jobs whose lease is free: one read of the owners, not a refused take per job held elsewhere', async () => {
    const h = serviceHarness();
    const ids = ['j0', 'j1', 'j2', 'j3', 'j4', 'j5'];
    for (const jobId of ids) await h.store.saveSpec({ ...spec, jobId }, '1-1');
    // Five are led by a replica that is alive (not in this replica's count: it has not discovered yet).
    for (const jobId of ids.slice(1)) expect(await h.store.acquireLease(jobId, 'replica-other', h.config.jobs.leaseMs)).toBe(true);
    const takes = jest.spyOn(h.store, 'acquireLease');
    await h.registry.discover();
    expect(h.registry.get('j0')).toBeDefined();
    expect(takes.mock.calls.map((c) => c[0])).toEqual(['j0']);
  });

  it('discovers four times as often for one lease after the live replicas change or a lease is lost, at the interval otherwise', async () => {
    const clock = serviceHarness().clock;
    const a = serviceHarness({ clock });
    const { leaseMs, discoveryIntervalMs } = a.config.jobs;
    const fast = Math.ceil(discoveryIntervalMs / 4);
    expect(a.registry.discoveryDelayMs).toBe(fast); // just started: taking its share
    await a.registry.discover();
    clock.advance(leaseMs);
    expect(a.registry.discoveryDelayMs).toBe(discoveryIntervalMs);
    await a.registry.discover();
    expect(a.registry.discoveryDelayMs).toBe(discoveryIntervalMs); // nothing changed hands
    const b = serviceHarness({ clock, store: a.store, ownerId: 'replica-b' });
    await b.registry.discover();
    await a.registry.discover(); // a replica joined: a hands jobs back, b takes them
    expect(a.registry.replicas).toBe(2);
    expect(a.registry.discoveryDelayMs).toBe(fast);
    clock.advance(leaseMs);
    expect(a.registry.discoveryDelayMs).toBe(discoveryIntervalMs);
  });

  describe('a job handed back above the share', () => {
    /** Jobs no replica leads now: the lease free, or held by a replica that does not lead the job. */
    async function unled(h: ServiceHarness, ids: string[], replicas: ServiceHarness[]): Promise<string[]> {
      const out: string[] = [];
      for (const jobId of ids) {
        const { owner } = await h.store.leaseOf(jobId);
        const leader = replicas.find((r) => r.registry.replicaId === owner);
        if (!leader?.registry.get(jobId) || leader.registry.get(jobId)!.released) out.push(jobId);
      }
      return out;
    }

    async function handBack(breakIt: boolean): Promise<{ unledAt: string[][]; a: ServiceHarness; b: ServiceHarness }> {
      const clock = serviceHarness().clock;
      const a = serviceHarness({ clock, ownerId: 'replica-a' });
      const ids = ['h0', 'h1', 'h2', 'h3', 'h4', 'h5'];
      for (const jobId of ids) await a.store.saveSpec({ ...spec, jobId }, '1-1');
      await a.registry.discover();
      expect(a.registry.all()).toHaveLength(6);
      // The twin: the excess released, as before, instead of offered.
      if (breakIt) jest.spyOn(a.store, 'offerLease').mockImplementation(async (jobId, owner) => (await a.store.releaseLease(jobId, owner), false));
      const b = serviceHarness({ clock, store: a.store, ownerId: 'replica-b' });
      const replicas = [a, b];
      const unledAt: string[][] = [];
      await b.registry.discover(); // b is live; every job is a's
      unledAt.push(await unled(a, ids, replicas));
      await a.registry.discover(); // a sees two replicas: 3 jobs above its share
      unledAt.push(await unled(a, ids, replicas));
      await b.registry.discover(); // b takes them over
      unledAt.push(await unled(a, ids, replicas));
      await a.registry.discover(); // a lets them go at its renewal
      unledAt.push(await unled(a, ids, replicas));
      return { unledAt, a, b };
    }

    it('is led all the while: its holder leads it until a replica under its share moves the lease to itself', async () => {
      const { unledAt, a, b } = await handBack(false);
      expect(unledAt).toEqual([[], [], [], []]);
      expect(a.registry.all()).toHaveLength(3);
      expect(b.registry.all()).toHaveLength(3);
      expect(await metricValue(a, 'pipemorph_jobs_handed_off_total')).toBe(3);
      expect(await metricValue(a, 'pipemorph_lease_losses_total')).toBe(0); // handed over, not lost
    });

    it('twin: released instead of offered, the jobs wait unled for the taker\'s discovery', async () => {
      const { unledAt, b } = await handBack(true);
      expect(unledAt[1]).toHaveLength(3);
      expect(b.registry.all()).toHaveLength(3); // shared all the same, after a gap
    });
  });

  it('keeps its jobs while it renews their leases, and loses them to another replica once a lease expires on the clock', async () => {
    const clock = serviceHarness().clock;
    const a = serviceHarness({ clock });
    const b = serviceHarness({ clock, store: a.store, ownerId: 'replica-b' });
    const job = await registeredJob(a, spec);
    const { leaseMs } = a.config.jobs;
    clock.advance(leaseMs - 1);
    await a.registry.discover(); // renewed just in time
    clock.advance(leaseMs - 1);
    await b.registry.discover();
    expect(b.registry.get(spec.jobId)).toBeUndefined();
    clock.advance(1); // A stopped renewing: its lease ran out
    await b.registry.discover();
    expect(b.registry.get(spec.jobId)?.epoch).toBe(job.epoch + 1);
    await a.registry.discover();
    expect(a.registry.get(spec.jobId)).toBeUndefined();
    expect(job.released).toBe(true);
    expect(await metricValue(a, 'pipemorph_lease_losses_total')).toBe(1);
  });

  it('restores a job whose keys Redis lost, above every epoch and version it knew', async () => {
    const h = serviceHarness();
    const job = await registeredJob(h, spec);
    await runIterations(h, spec, 0, 3);
    const version = job.committed!.version;
    await h.store.forgetJob(spec.jobId, 0);
    await h.registry.discover();
    const restored = h.registry.get(spec.jobId)!;
    expect(restored).not.toBe(job);
    expect(restored.epoch).toBeGreaterThan(job.epoch);
    expect(restored.committed!.version).toBe(version); // written back, not re-planned
    expect(await h.store.nextVersion(spec.jobId, restored.epoch, restored.versionFloor())).toBeGreaterThan(version);
    expect(await metricValue(h, 'pipemorph_jobs_restored_total')).toBe(1);
  });

  it('takes the job again above an epoch the ranks report when Redis lost its counter', async () => {
    const h = serviceHarness();
    const job = await registeredJob(h, spec);
    expect(await h.registry.reconcileEpoch(job, job.epoch)).toBeUndefined(); // nothing above ours
    const fresh = await h.registry.reconcileEpoch(job, job.epoch + 5);
    expect(fresh!.epoch).toBe(job.epoch + 6);
    expect(job.released).toBe(true);
  });

  describe('a job whose epoch changed behind its lease (issue 23, item 7)', () => {
    /** A straggling job whose epoch another client INCRs, then a control step: its prepare is refused as fenced. */
    async function fencedStraggler(h: ServiceHarness): Promise<{ job: JobRuntime; tampered: number }> {
      const { job } = await stragglingJob(h, spec);
      const tampered = h.store.tamperEpoch(spec.jobId);
      h.clock.advance(Math.max(0, job.switching.notBefore - h.clock.now()));
      await h.control.evaluate(job);
      return { job, tampered };
    }

    it('takes the job again under an epoch above the tampered one at the next discovery, and publishes the adapted schedule', async () => {
      const h = serviceHarness();
      const { job, tampered } = await fencedStraggler(h);
      expect(job.switching.handshake).toBeNull();
      expect(job.fenced).toBe(true);
      expect(await metricValue(h, 'pipemorph_publishes_total', { job: spec.jobId, outcome: 'fenced' })).toBeGreaterThan(0);
      h.clock.advance(h.config.jobs.discoveryIntervalMs);
      await h.registry.discover();
      const fresh = h.registry.get(spec.jobId)!;
      expect(job.released).toBe(true);
      expect(fresh.epoch).toBe(tampered + 1);
      expect(fresh.committed!.version).toBe(job.committed!.version); // re-read from Redis, not re-planned
      expect(await h.store.ownerOf(spec.jobId)).toBe(h.registry.replicaId);
      expect(await metricValue(h, 'pipemorph_job_refenced_total', { job: spec.jobId })).toBe(1);
      await ingestPass(h); // replays the history: the detector knows the straggler again
      await h.control.evaluate(fresh);
      expect(fresh.switching.handshake?.schedule.epoch).toBe(tampered + 1);
      expect(h.store.controlEvents(spec.jobId).at(-1)).toMatchObject({ type: 'prepare', epoch: tampered + 1 });
    });

    it('counts every time it takes the job again', async () => {
      const h = serviceHarness();
      await fencedStraggler(h);
      await h.registry.discover();
      const fresh = h.registry.get(spec.jobId)!;
      await ingestPass(h);
      h.store.tamperEpoch(spec.jobId);
      await h.control.evaluate(fresh);
      await h.registry.discover();
      expect(h.registry.get(spec.jobId)!.epoch).toBe(fresh.epoch + 2);
      expect(await metricValue(h, 'pipemorph_job_refenced_total', { job: spec.jobId })).toBe(2);
    });

    it('stays fenced without the re-take: every publish refused, the lease renewed (the reported bug)', async () => {
      const h = serviceHarness();
      jest.spyOn(h.registry, 'retakeFenced').mockResolvedValue(false);
      const { job, tampered } = await fencedStraggler(h);
      for (let k = 0; k < 3; k++) {
        h.clock.advance(h.config.jobs.discoveryIntervalMs);
        await h.registry.discover();
        await h.control.evaluate(job);
      }
      expect(h.registry.get(spec.jobId)).toBe(job);
      expect(job.epoch).toBeLessThan(tampered);
      expect(job.switching.handshake).toBeNull();
      expect(h.store.controlEvents(spec.jobId).some((e) => e.type === 'prepare')).toBe(false);
      expect(await metricValue(h, 'pipemorph_publishes_total', { job: spec.jobId, outcome: 'fenced' })).toBeGreaterThan(1);
    });

    it('lets the job go, taking nothing, when the lease is another replica\'s', async () => {
      const h = serviceHarness();
      const { job } = await stragglingJob(h, spec);
      const stolen = h.store.stealLease(spec.jobId, 'replica-b', h.config.jobs.leaseMs);
      h.clock.advance(Math.max(0, job.switching.notBefore - h.clock.now()));
      await h.control.evaluate(job);
      expect(job.fenced).toBe(true);
      await h.registry.discover();
      expect(h.registry.get(spec.jobId)).toBeUndefined();
      expect(await h.store.readEpoch(spec.jobId)).toBe(stolen);
      expect(await metricValue(h, 'pipemorph_lease_losses_total')).toBe(1);
      expect(await metricValue(h, 'pipemorph_job_refenced_total')).toBe(0);
    });
  });
});
