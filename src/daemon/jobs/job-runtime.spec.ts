import { DEFAULT_DETECTOR_CONFIG } from '../../core/detect/detector-config.type';
import { PublishedSchedule, Registration, TopologyAssignment } from '../../protocol/protocol-v1.type';
import { JobRuntime } from './job-runtime';

/** 2 stages x 2 replicas x TP 2: reporting ranks 0, 2, 4, 6 on nodes a-d (rank = 4 dp + 2 pp + tp). */
const registration: Registration = {
  type: 'register', protocol: 1, jobId: 'j', stages: 2, microbatches: 4, dp: 2, tp: 2,
  ranks: [0, 1, 2, 3, 4, 5, 6, 7].map((rank) => ({ rank, dp: rank >> 2, pp: (rank >> 1) & 1, tp: rank & 1, node: 'abcd'[rank >> 1] })),
  memory: { deviceBytes: [4e9, 4e9], activationBytes: [1e9, 1e9], hostBytes: 8e9 },
  dataParallel: { gradientBytes: [1e9, 1e9] },
};

/** Nodes b and c swap: rank 2 (node b) takes dp 1 pp 0, rank 4 (node c) dp 0 pp 1; TP peers follow. */
const swapped: TopologyAssignment = {
  version: 1, sinceVersion: 5, rings: [[0, 1], [0, 1]], moved: [2, 3, 4, 5],
  ranks: [
    { rank: 0, dp: 0, pp: 0 }, { rank: 1, dp: 0, pp: 0 }, { rank: 4, dp: 0, pp: 1 }, { rank: 5, dp: 0, pp: 1 },
    { rank: 2, dp: 1, pp: 0 }, { rank: 3, dp: 1, pp: 0 }, { rank: 6, dp: 1, pp: 1 }, { rank: 7, dp: 1, pp: 1 },
  ],
};

function schedule(version: number, topology?: TopologyAssignment): PublishedSchedule {
  return {
    protocol: 1, jobId: 'j', version, epoch: 1, state: 'committed', effectiveIteration: 20, createdAt: 0,
    pipelines: [{ dpReplicas: [0, 1], warmup: [2, 1], stages: [[], []] }], delegation: [],
    reason: { kind: topology ? 'remap' : 'straggler', links: [], detail: '' }, prediction: { previousMs: null, newMs: 1 },
    ...(topology ? { topology } : {}),
  };
}

describe('JobRuntime: topology changes', () => {
  it('applies a committed re-map at the first report that runs it, and ignores reports of the old layout after that', () => {
    const job = new JobRuntime(registration, 1, DEFAULT_DETECTOR_CONFIG);
    expect(job.positionOf.get(2)).toEqual({ rank: 2, dp: 0, pp: 1 });
    const before = job.detector;
    job.noteCommitted(schedule(5, swapped));
    expect(job.layout.pendingTopology?.version).toBe(1);
    expect(job.topologyView(job.detector.snapshot(), 0, 0).remapAllowed).toBe(false);
    expect(job.layout.acceptReport(4, 18)).toBe('accepted'); // still the old layout, and the detector too
    expect(job.detector).toBe(before);
    expect(job.layout.acceptReport(5, 20)).toBe('switched'); // the first report of the new layout
    expect(job.detector).not.toBe(before);
    expect(job.positionOf.get(2)).toEqual({ rank: 2, dp: 1, pp: 0 });
    expect(job.positionOf.get(4)).toEqual({ rank: 4, dp: 0, pp: 1 });
    expect([...job.positionOf.keys()].sort()).toEqual([0, 2, 4, 6]);
    expect(job.layout.holdUntilIteration).toBe(20 + Math.max(DEFAULT_DETECTOR_CONFIG.enterAfter, DEFAULT_DETECTOR_CONFIG.leaveAfter));
    expect(job.layout.acceptReport(4, 19)).toBe('stale-layout'); // a late report of the old layout
    expect(job.layout.staleLayoutReports).toBe(1);
    const view = job.topologyView(job.detector.snapshot(), 0, 0);
    expect(view.rankAt).toEqual([0, 4, 2, 6]);
    expect(view.remapAllowed).toBe(true);
    expect(view.allReduce).toMatchObject({ gradientBytes: [1e9, 1e9], chunkBytes: 4 << 20, inflight: 8 });
    // Later schedules carry the same topology version: nothing is rebuilt again.
    const rebuilt = job.detector;
    job.noteCommitted(schedule(6, { ...swapped, moved: [] }));
    expect(job.layout.pendingTopology).toBeNull();
    expect(job.layout.acceptReport(6, 30)).toBe('accepted');
    expect(job.detector).toBe(rebuilt);
  });

  it('keeps the fleet prior on the detector a re-map builds: ranks keep their nodes', () => {
    const job = new JobRuntime(registration, 1, DEFAULT_DETECTOR_CONFIG);
    // The fleet names node a's NIC: the pipeline link 0 -> 2 (nodes a, b) and the ring 0 -> 4 (a, c) run through it.
    const nicA = (from: number, to: number) => (registration.ranks[from].node === 'a' || registration.ranks[to].node === 'a' ? 'slow' as const : null);
    job.setFleetPrior(nicA);
    expect(job.detector.fleetPriorLinks()).toBe(3); // link 0 -> 2, rings 0 -> 4 and 4 -> 0
    job.noteCommitted(schedule(5, swapped));
    expect(job.layout.acceptReport(5, 20)).toBe('switched');
    // Now 0 -> 4 is the pipeline link through a, and its ring is 0 -> 2 (and back).
    expect(job.detector.fleetPriorLinks()).toBe(3);
    job.setFleetPrior(null);
    expect(job.detector.fleetPriorLinks()).toBe(0);
  });

  it('tells the cost gate which straggler keys run through a fleet suspect, in the layout in force', () => {
    const job = new JobRuntime(registration, 1, DEFAULT_DETECTOR_CONFIG);
    const nicA = (from: number, to: number) => (registration.ranks[from].node === 'a' || registration.ranks[to].node === 'a' ? 'slow' as const : null);
    expect(job.fleetNamed('p:0:0')).toBe(false); // no prior yet
    job.setFleetPrior(nicA);
    expect(job.fleetNamed('p:0:0')).toBe(true); // slot (0,0) rank 0 on node a
    expect(job.fleetNamed('d:0>4')).toBe(true);
    expect(job.fleetNamed('d:2>6')).toBe(false);
    job.setFleetPrior(null);
    expect(job.fleetNamed('p:0:0')).toBe(false);
  });

  it('hands the links the fleet names slow to the re-map, shrunk to reporting ranks, and drops them with the prior', () => {
    const job = new JobRuntime(registration, 1, DEFAULT_DETECTOR_CONFIG);
    const nicA = (from: number, to: number) => (registration.ranks[from].node === 'a' || registration.ranks[to].node === 'a' ? 'slow' as const : null);
    job.setFleetPrior(nicA, [{ suspect: 'nic:a', from: [0, 1], to: [2, 3, 4, 5, 6, 7], extraMs: 20 }]);
    const view = () => job.topologyView({ links: [], dataParallelLinks: [], compute: [] } as never, 0, 0);
    expect(view().fleetSlow).toEqual([{ suspect: 'nic:a', from: [0], to: [2, 4, 6], extraMs: 20 }]);
    job.setFleetPrior(null, [{ suspect: 'nic:a', from: [0, 1], to: [2, 3, 4, 5, 6, 7], extraMs: 20 }]);
    expect(view().fleetSlow).toBeUndefined();
  });

  it('adopts the committed layout at once when a replica takes the job over', () => {
    const job = new JobRuntime(registration, 2, DEFAULT_DETECTOR_CONFIG);
    job.noteCommitted(schedule(6, { ...swapped, moved: [] }), true);
    expect(job.layout.topology?.version).toBe(1);
    expect(job.layout.pendingTopology).toBeNull();
    expect(job.positionOf.get(4)).toEqual({ rank: 4, dp: 0, pp: 1 });
    expect(job.needsEvaluation).toBe(true);
    expect(job.layout.acceptReport(4, 10)).toBe('stale-layout'); // history from before the re-map is not replayed into the new layout
  });

  it('keeps the registration frozen: no service can change the spec under the runtime', () => {
    const job = new JobRuntime(registration, 1, DEFAULT_DETECTOR_CONFIG);
    expect(() => {
      (job.spec.registration.ranks[0] as { pp: number }).pp = 1;
    }).toThrow(TypeError);
    expect(registration.ranks[0].pp).toBe(0);
  });
});

describe('JobRuntime: when a control step is due', () => {
  it('runs a step asked for an iteration once a rank reports that iteration, not at every report before it', () => {
    const job = new JobRuntime(registration, 1, DEFAULT_DETECTOR_CONFIG);
    job.evaluated();
    job.progress.noteIteration(0, 7, 0, true, 100);
    job.requestEvaluationAt(8);
    // The other ranks' reports of iteration 7 (report batches a declined verdict once re-decided, each).
    for (const rank of [2, 4, 6]) {
      job.progress.noteIteration(rank, 7, 10, true, 100);
      expect(job.needsEvaluation).toBe(false);
    }
    job.progress.noteIteration(2, 8, 100, true, 100);
    expect(job.needsEvaluation).toBe(true);
    job.evaluated();
    expect(job.needsEvaluation).toBe(false); // decided: the request is spent
  });

  it('keeps the earliest of several requests, and a request for now still runs at once', () => {
    const job = new JobRuntime(registration, 1, DEFAULT_DETECTOR_CONFIG);
    job.evaluated();
    job.progress.noteIteration(0, 7, 0, true, 100);
    job.requestEvaluationAt(12);
    job.requestEvaluationAt(9);
    job.requestEvaluationAt(15);
    job.progress.noteIteration(0, 8, 100, true, 100);
    expect(job.needsEvaluation).toBe(false);
    job.progress.noteIteration(0, 9, 200, true, 100);
    expect(job.needsEvaluation).toBe(true);
    job.evaluated();
    job.requestEvaluation();
    expect(job.needsEvaluation).toBe(true);
  });
});
