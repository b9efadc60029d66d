import { metricValue, registeredJob, registration, runIterations, serviceHarness } from '../../../test/support/service-harness';

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
});
