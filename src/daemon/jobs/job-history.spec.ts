import { PublishedSchedule } from '../../protocol/protocol-v1.type';
import { HISTORY_ITERATIONS, HISTORY_MAX_LINKS, HISTORY_VERSIONS, JobHistory } from './job-history';

function schedule(version: number): PublishedSchedule {
  return {
    protocol: 1, jobId: 'j', version, epoch: 1, state: 'committed', effectiveIteration: version * 10, createdAt: version,
    pipelines: [{ dpReplicas: [0], warmup: [4, 3, 2, 1], stages: [] }], delegation: [],
    reason: { kind: version === 1 ? 'initial' : 'straggler', links: [], detail: `v${version}` }, prediction: { previousMs: null, newMs: 100 + version },
  };
}

describe('JobHistory', () => {
  it('keeps a fixed-size ring: memory does not grow with iterations, only the newest are kept', () => {
    const h = new JobHistory(4, 2);
    const bytes = h.storageBytes;
    for (let i = 0; i < 10000; i++) for (let l = 0; l < 3; l++) h.noteLinkDelay(i, i % 2, l, l === 2 ? 60 : 1);
    expect(h.storageBytes).toBe(bytes);
    const recent = h.recent();
    expect(recent.iterations).toHaveLength(HISTORY_ITERATIONS);
    expect(recent.iterations[0]).toBe(10000 - HISTORY_ITERATIONS);
    expect(recent.delays).toHaveLength(6);
    expect(recent.delays[2].filter((ms) => ms === 60)).toHaveLength(HISTORY_ITERATIONS / 2);
    // A sample older than the ring is refused (counted), not written over a newer iteration.
    h.noteLinkDelay(5, 0, 0, 999);
    expect(h.dropped).toBe(1);
    expect(h.recent().delays[0]).not.toContain(999);
  });

  it('keeps the worst of both ends of a link and refuses links outside the job', () => {
    const h = new JobHistory(4, 1);
    h.noteLinkDelay(0, 0, 1, 5);
    h.noteLinkDelay(0, 0, 1, 7);
    h.noteLinkDelay(0, 0, 1, 6);
    h.noteLinkDelay(0, 0, 3, 1);
    h.noteLinkDelay(0, 1, 0, 1);
    h.noteLinkDelay(0, 0, -1, 1);
    expect(h.recent().delays[1]).toEqual([7]);
    expect(h.dropped).toBe(3);
  });

  it('caps the links tracked for a very large job', () => {
    const h = new JobHistory(9, 100000);
    expect(h.links).toBe(HISTORY_MAX_LINKS);
    h.noteLinkDelay(0, 99999, 7, 1);
    expect(h.dropped).toBe(1);
  });

  it('keeps the schedule in force and the one it replaced, the last versions, and measured times per version', () => {
    const h = new JobHistory(4, 1);
    h.noteCommitted(schedule(1));
    h.noteIteration(0, 1, 100);
    h.noteIteration(0, 1, 500); // the first value of an iteration wins
    h.noteIteration(1, 1, 110);
    h.noteCommitted(schedule(2));
    h.noteCommitted(schedule(2)); // the same commit seen twice (adoption) changes nothing
    h.noteIteration(2, 2, 90);
    expect(h.current?.version).toBe(2);
    expect(h.replaced?.version).toBe(1);
    expect(h.versions.map((v) => [v.version, v.measuredSumMs / v.measuredCount])).toEqual([[1, 105], [2, 90]]);
    for (let v = 3; v < 40; v++) h.noteCommitted(schedule(v));
    expect(h.versions).toHaveLength(HISTORY_VERSIONS);
    expect(h.versions[HISTORY_VERSIONS - 1].version).toBe(39);
  });
});
