import { seededRandom } from '../../core/planner/seeded-random';
import { jobKeys } from '../../protocol/redis-keys';
import { Registration } from '../../protocol/protocol-v1.type';
import { ingestPass, registeredJob, registration, serviceHarness, ServiceHarness } from '../../../test/support/service-harness';
import { JobRuntime } from '../jobs/job-runtime';

/**
 * Issue 29, item 4: a 1.5x compute straggler is re-balanced within 20 iterations of its onset, on
 * noisy telemetry (Pareto(1.3) link medians, 3% compute jitter), whatever the job did before: here a
 * +25 ms link straggler whose plan (delegation, larger warm-ups) is still in force when it heals, a
 * few iterations before the rank turns slow. The ranks acknowledge every prepare at their next
 * iteration and run a committed schedule from its effective iteration; 1 s per iteration.
 */
const S = 4;
const D = 2;

function layered(jobId: string): Registration {
  return {
    ...registration(jobId, S, D),
    microbatches: 12,
    layers: { fMs: new Array(24).fill(2), bMs: new Array(24).fill(2), wMs: new Array(24).fill(2), stateBytes: new Array(24).fill(1e8), activationBytes: new Array(24).fill(1e8), perStage: [6, 6, 6, 6] },
  };
}

interface Plan {
  version: number;
  from: number;
  perStage: number[];
}

async function drive(h: ServiceHarness, spec: Registration, iterations: number, slowRankFrom: number, linkOn: [number, number] | null): Promise<{ job: JobRuntime; plans: Plan[] }> {
  const job = await registeredJob(h, spec);
  const random = seededRandom(29);
  const pareto = () => 0.3 * (Math.pow(1 - random(), -1 / 1.3) - 1);
  const plans: Plan[] = [{ version: job.committed!.version, from: 0, perStage: [6, 6, 6, 6] }];
  for (let t = 0; t < iterations; t++) {
    h.clock.advance(1000);
    const plan = [...plans].reverse().find((p) => p.from <= t)!;
    for (const r of spec.ranks) {
      const links = [];
      for (const peer of [r.pp - 1, r.pp + 1]) {
        if (peer < 0 || peer >= S) continue;
        const link = Math.min(peer, r.pp);
        const extra = linkOn && r.dp === 0 && link === 2 && t >= linkOn[0] && t < linkOn[1] ? 25 : 0;
        const ms = 1.7 + pareto() + extra;
        links.push({ peer: r.dp * S + peer, kind: 'pipeline', bytes: 1 << 24, medianMs: ms, maxMs: ms * 1.5, delegated: false, error: null });
      }
      const ringPeer = ((r.dp + 1) % D) * S + r.pp;
      const ring = 4 + pareto();
      links.push({ peer: ringPeer, kind: 'data-parallel', bytes: 1 << 22, medianMs: ring, maxMs: ring * 1.5, delegated: false, error: null });
      const slow = r.rank === 1 && t >= slowRankFrom ? 1.5 : 1;
      const ms = 2 * plan.perStage[r.pp] * slow * Math.exp(0.03 * (random() + random() + random() - 1.5));
      const body = { type: 'report', protocol: 1, jobId: spec.jobId, rank: r.rank, iteration: t, scheduleVersion: plan.version, iterationMs: 1000, computeMs: { f: ms, b: ms, w: ms }, links };
      await h.store.append(jobKeys(spec.jobId).reports, JSON.stringify(body), 100000);
    }
    await ingestPass(h);
    const open = job.handshake;
    if (open) {
      for (const r of spec.ranks) {
        await h.publisher.onAck(job, { type: 'ack', protocol: 1, jobId: spec.jobId, rank: r.rank, version: open.schedule.version, epoch: job.epoch, iteration: t + 1, accepted: true }, h.clock.now());
      }
      const c = job.committed!;
      if (c.version === open.schedule.version) plans.push({ version: c.version, from: c.effectiveIteration, perStage: c.layers?.perStage ?? plan.perStage });
    }
  }
  return { job, plans };
}

describe('a compute straggler re-balanced within 20 iterations of onset, whatever came before (issue 29, item 4)', () => {
  const ONSET = 100;

  it('alone: the new split is in force within 20 iterations', async () => {
    const h = serviceHarness();
    const { plans } = await drive(h, layered('rt-alone'), ONSET + 30, ONSET, null);
    const moved = plans.find((p) => p.from >= ONSET && p.perStage[1] < 6);
    expect(moved).toBeDefined();
    expect(moved!.from - ONSET).toBeLessThanOrEqual(20);
  });

  it('behind a healed link straggler whose plan is still in force: the new split is in force within 20 iterations', async () => {
    const h = serviceHarness();
    const { job, plans } = await drive(h, layered('rt-behind'), ONSET + 30, ONSET, [40, ONSET - 4]);
    expect(job.decisions.recent().some((d) => d.kind === 'straggler' && d.verdict === 'taken')).toBe(true);
    const moved = plans.find((p) => p.from >= ONSET && p.perStage[1] < 6);
    expect(moved).toBeDefined();
    expect(moved!.from - ONSET).toBeLessThanOrEqual(20);
  });
});
