import { ManualClock } from '../../core/clock/manual-clock';
import { InMemoryJobStore } from '../store/in-memory-job-store.repository';
import { fairShare, shedAbove } from './job-registry.service';

describe('fair share of jobs among replicas', () => {
  it('is ceil(jobs / replicas), unbounded for a lone replica, at least one job', () => {
    expect(fairShare(120, 1)).toBe(Number.POSITIVE_INFINITY);
    expect(fairShare(120, 4)).toBe(30);
    expect(fairShare(121, 4)).toBe(31);
    expect(fairShare(0, 3)).toBe(1);
    expect(fairShare(1, 2)).toBe(1);
  });

  it('hands jobs back only above 1.1 x the share, so a job registered or expired moves nothing', () => {
    expect(shedAbove(120, 4)).toBe(33);
    expect(shedAbove(120, 2)).toBe(66);
    expect(shedAbove(4, 2)).toBe(2); // a share too small for the slack: no extra job
    expect(shedAbove(120, 1)).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('replica liveness (in-memory store, as Redis: pipemorph:replicas)', () => {
  it('counts live replicas, forgets one whose heartbeat expired, and one that leaves at once', async () => {
    const clock = new ManualClock(0);
    const store = new InMemoryJobStore(clock);
    expect(await store.replicaHeartbeat('a', 1000)).toBe(1);
    expect(await store.replicaHeartbeat('b', 1000)).toBe(2);
    clock.advance(600);
    expect(await store.replicaHeartbeat('a', 1000)).toBe(2);
    clock.advance(600); // b's heartbeat (at 0, for 1000 ms) expired
    expect(await store.replicaHeartbeat('a', 1000)).toBe(1);
    expect(await store.replicaHeartbeat('c', 1000)).toBe(2);
    expect(await store.replicaHeartbeat('c', 0)).toBe(1); // c stops gracefully
  });
});
