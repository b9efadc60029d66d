import fc from 'fast-check';
import { InputError } from '../input-error';
import { seededRandom } from '../planner/seeded-random';
import { DEFAULT_DETECTOR_CONFIG, DetectorConfig } from './detector-config.type';
import { DetectionSnapshot, JobDetector, LinkError, PipelineLinkState } from './job-detector';
import { EmulatedRanks } from './emulated-ranks.fixture';

type Ranks = EmulatedRanks;

/** Most cases here test the K-sample rule, so no sample is severe unless a case says so (see 'severe samples'). */
function job(S: number, dp: number, config: Partial<DetectorConfig> = {}, nominal?: { latencyMs?: number; gbps?: number }, localityOf?: (rank: number) => string): Ranks {
  const ranks = Array.from({ length: S * dp }, (_, rank) => ({ rank, dp: Math.floor(rank / S), pp: rank % S }));
  const localities = localityOf ? new Map(ranks.map((r) => [r.rank, localityOf(r.rank)])) : undefined;
  return new EmulatedRanks(new JobDetector({ stages: S, dpSize: dp, ranks, localityOf: localities }, { ...DEFAULT_DETECTOR_CONFIG, severeExtraMs: Infinity, ...config }, nominal), S, dp);
}

function pipelineLink(s: DetectionSnapshot, dp: number, link: number): PipelineLinkState {
  const found = s.pipelineLinks.find((l) => l.dp === dp && l.link === link);
  if (!found) throw new Error(`no link ${dp}:${link}`);
  return found;
}

function stragglers(s: DetectionSnapshot): string[] {
  return [
    ...s.pipelineLinks.filter((l) => l.straggler).map((l) => `p${l.dp}:${l.link}:${l.reason}`),
    ...s.dataParallelLinks.filter((l) => l.straggler).map((l) => `d${l.fromRank}>${l.toRank}`),
    ...s.compute.filter((c) => c.straggler).map((c) => `c${c.rank}`),
  ];
}

/** A delay on link 2 of replica 1, both directions. */
function delayLink(r: Ranks, ms: number, where = { d: 1, link: 2 }): void {
  r.pipelineMs = (d, link) => 10 + (d === where.d && link === where.link ? ms : 0);
}

describe('JobDetector: severe samples', () => {
  const severe = (config: Partial<DetectorConfig> = {}) => job(4, 2, { severeExtraMs: DEFAULT_DETECTOR_CONFIG.severeExtraMs, ...config });

  it('a step at or above severeExtraMs is a straggler after severeEnterAfter samples, sized by those samples alone', () => {
    const r = severe({ severeEnterAfter: 1 });
    r.run(10);
    delayLink(r, 30);
    const results = r.iterate();
    expect(results.some((x) => x.changed)).toBe(true);
    const l = pipelineLink(r.detector.snapshot(), 1, 2);
    expect(stragglers(r.detector.snapshot())).toEqual(['p1:2:delegation']);
    // The newest K = 3 samples hold two healthy ones: their median would say 0 ms.
    expect(l.extraMs).toBeCloseTo(30, 9);
    r.iterate();
    expect(pipelineLink(r.detector.snapshot(), 1, 2).extraMs).toBeCloseTo(30, 9);
  });

  it('with severeEnterAfter = enterAfter (the rule off) the same step waits K samples: the check above fails', () => {
    const r = severe({ severeEnterAfter: DEFAULT_DETECTOR_CONFIG.enterAfter });
    r.run(10);
    delayLink(r, 30);
    r.iterate();
    expect(stragglers(r.detector.snapshot())).toEqual([]);
    r.run(DEFAULT_DETECTOR_CONFIG.enterAfter - 1);
    expect(stragglers(r.detector.snapshot())).toEqual(['p1:2:delegation']);
  });

  it('a straggler held through a flapping spell is sized by its newest K samples: one outlier does not resize it', () => {
    const r = severe({ severeEnterAfter: 1 });
    r.run(10);
    // 30 ms, 2 on / 2 off: the hysteresis holds it (2 healthy < leaveAfter), severe runs of 1-2 samples.
    let k = 0;
    r.pipelineMs = (d, link) => 10 + (d === 1 && link === 2 && k % 4 < 2 ? 30 : 0);
    for (; k < 20; k++) r.iterate();
    r.pipelineMs = (d, link) => 10 + (d === 1 && link === 2 ? (k % 4 < 2 ? 30 : 0) + (k === 20 ? 500 : 0) : 0);
    r.iterate(); // k = 20: the slow spell's first sample, and a 500 ms outlier (a pause)
    const l = pipelineLink(r.detector.snapshot(), 1, 2);
    expect(l.straggler).toBe(true);
    expect(l.extraMs).toBeLessThan(40);
  });

  it('a bad but not severe step still waits enterAfter samples', () => {
    const r = severe();
    r.run(10);
    delayLink(r, DEFAULT_DETECTOR_CONFIG.severeExtraMs - 5);
    r.run(DEFAULT_DETECTOR_CONFIG.enterAfter - 1);
    expect(stragglers(r.detector.snapshot())).toEqual([]);
    r.iterate();
    expect(stragglers(r.detector.snapshot())).toEqual(['p1:2:delegation']);
  });

  it('severeEnterAfter = 2 needs two severe samples in a row: severe then mild is not a straggler yet, two severe are', () => {
    const run = (steps: number[]) => {
      const r = severe({ severeEnterAfter: 2 });
      r.run(10);
      for (const ms of steps) {
        delayLink(r, ms);
        r.iterate();
      }
      return stragglers(r.detector.snapshot());
    };
    expect(run([30, 8])).toEqual([]);
    expect(run([30, 30])).toEqual(['p1:2:delegation']);
  });
});

describe('JobDetector: pipeline links', () => {
  it.each([1, 2, 3, 5])('finds a 30 ms delay on link 2 of replica 1 (S=4, dp=2) after exactly K = %i bad samples, needing delegation', (K) => {
    const r = job(4, 2, { enterAfter: K });
    r.run(10); // past the baseline warm-up
    delayLink(r, 30);
    for (let k = 1; k < K; k++) {
      const results = r.iterate();
      expect(results.some((x) => x.changed)).toBe(false);
      expect(r.detector.activeStragglerCount()).toBe(0);
      expect(pipelineLink(r.detector.snapshot(), 1, 2).straggler).toBe(false);
    }
    const results = r.iterate();
    // The forward sample (reported by rank (1, 2) = 6) completes K first; the backward one by rank 7 follows.
    expect(results.map((x) => x.changed)).toEqual([false, false, false, false, false, false, true, true]);
    const s = r.detector.snapshot();
    expect(stragglers(s)).toEqual(['p1:2:delegation']);
    expect(r.detector.activeStragglerCount()).toBe(1);
    const l = pipelineLink(s, 1, 2);
    expect(l).toMatchObject({ upRank: 6, downRank: 7, baselineMs: 10, error: null });
    expect(l.extraMs).toBeCloseTo(30, 9);
    expect(l.forwardExtraMs).toBeCloseTo(30, 9);
    expect(l.backwardExtraMs).toBeCloseTo(30, 9);
    expect(l.samples).toBe(10 + K);
  });

  it('counts each direction on its own: K bad forward samples suffice, healthy gradients notwithstanding', () => {
    const r = job(4, 2);
    r.run(10);
    r.pipelineMs = (d, link, dir) => 10 + (d === 1 && link === 2 && dir === 'fwd' ? 30 : 0);
    r.run(2);
    expect(r.detector.activeStragglerCount()).toBe(0);
    r.iterate();
    const l = pipelineLink(r.detector.snapshot(), 1, 2);
    expect(l.straggler).toBe(true);
    expect(l.backwardExtraMs).toBe(0);
    expect(l.extraMs).toBeCloseTo(30, 9);
  });

  it("calls it 'eq1' when the delay is under the delegation threshold but beyond the schedule's tolerance", () => {
    const r = job(4, 2, { delegationThresholdMs: 1e9 });
    r.detector.setTolerance(1, 2, 10);
    r.run(10);
    delayLink(r, 30);
    r.run(2);
    expect(r.detector.activeStragglerCount()).toBe(0);
    r.iterate();
    expect(stragglers(r.detector.snapshot())).toEqual(['p1:2:eq1']);
  });

  it('leaves a delay alone that the schedule absorbs (large tolerance, huge threshold) or when no tolerance is known', () => {
    for (const tolerance of [100, undefined]) {
      const r = job(4, 2, { delegationThresholdMs: 1e9 });
      if (tolerance !== undefined) r.detector.setTolerance(1, 2, tolerance);
      r.run(10);
      delayLink(r, 30);
      const results = r.run(30);
      expect(results.flat().some((x) => x.changed)).toBe(false);
      expect(stragglers(r.detector.snapshot())).toEqual([]);
      expect(pipelineLink(r.detector.snapshot(), 1, 2).extraMs).toBeCloseTo(30, 9);
    }
  });

  it('applies a tolerance to its own (dp, link) only, and recovers when a new schedule absorbs the delay', () => {
    const r = job(4, 2, { delegationThresholdMs: 1e9 });
    r.detector.setTolerance(0, 2, 5);
    r.detector.setTolerance(1, 2, 50);
    r.run(10);
    r.pipelineMs = (_d, link) => 10 + (link === 2 ? 30 : 0); // both replicas
    r.run(3);
    expect(stragglers(r.detector.snapshot())).toEqual(['p0:2:eq1']);
    r.detector.setTolerance(0, 2, 50); // more slackness now
    r.run(4);
    expect(stragglers(r.detector.snapshot())).toEqual(['p0:2:eq1']);
    r.iterate();
    expect(stragglers(r.detector.snapshot())).toEqual([]);
  });

  it('recovers after exactly M healthy samples', () => {
    const M = 5;
    const r = job(4, 2, { leaveAfter: M });
    r.run(10);
    delayLink(r, 30);
    r.run(6);
    expect(r.detector.activeStragglerCount()).toBe(1);
    expect(pipelineLink(r.detector.snapshot(), 1, 2).recovering).toBe(false);
    delayLink(r, 0);
    for (let k = 1; k < M; k++) {
      expect(r.iterate().some((x) => x.changed)).toBe(false);
      // Held by hysteresis, and known to be on its way out.
      expect(pipelineLink(r.detector.snapshot(), 1, 2)).toMatchObject({ straggler: true, recovering: true });
    }
    expect(r.iterate().map((x) => x.changed)).toEqual([false, false, false, false, false, false, true, true]);
    const l = pipelineLink(r.detector.snapshot(), 1, 2);
    expect(l).toMatchObject({ straggler: false, reason: null, baselineMs: 10 });
    expect(r.detector.activeStragglerCount()).toBe(0);
  });

  it('never flips on jitter of +-0.5 ms, even with zero tolerance', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.integer(), fc.boolean(), (baseMs, seed, zeroTolerance) => {
        const r = job(4, 2);
        if (zeroTolerance) for (let d = 0; d < 2; d++) for (let link = 0; link < 3; link++) r.detector.setTolerance(d, link, 0);
        const random = seededRandom(seed);
        const next = () => random() - 0.5;
        r.pipelineMs = () => baseMs + next();
        r.dpMs = () => 20 + next();
        r.compute = () => ({ f: 10 + next(), b: 10 + next(), w: 10 + next() });
        const results = r.run(60).flat();
        expect(results.every((x) => x.accepted && !x.changed)).toBe(true);
        expect(r.detector.activeStragglerCount()).toBe(0);
        expect(stragglers(r.detector.snapshot())).toEqual([]);
      }),
      { numRuns: 40 },
    );
  });

  it('takes a failed NIC at once and keeps it until M clean, healthy samples', () => {
    const r = job(4, 2, { leaveAfter: 3 });
    r.run(10);
    r.pipelineError = (d, link, dir) => (d === 0 && link === 1 && dir === 'bwd' ? 'nic-failure' : null);
    const first = r.iterate();
    expect(first[r.rank(0, 2)].changed).toBe(true); // rank (0, 2) sends the gradients on link 1
    expect(first.filter((x) => x.changed)).toHaveLength(1);
    let l = pipelineLink(r.detector.snapshot(), 0, 1);
    expect(l).toMatchObject({ straggler: true, reason: 'nic-failure', error: 'nic-failure' });
    r.run(4);
    r.pipelineError = () => null;
    r.run(2);
    expect(pipelineLink(r.detector.snapshot(), 0, 1)).toMatchObject({ straggler: true, reason: 'nic-failure', error: 'nic-failure' });
    r.pipelineError = (d, link, dir) => (d === 0 && link === 1 && dir === 'bwd' ? 'nic-failure' : null);
    expect(r.iterate().some((x) => x.changed)).toBe(false); // failed again: already known, count restarts
    r.pipelineError = () => null;
    r.run(2);
    expect(pipelineLink(r.detector.snapshot(), 0, 1).straggler).toBe(true);
    expect(r.iterate()[r.rank(0, 2)].changed).toBe(true);
    l = pipelineLink(r.detector.snapshot(), 0, 1);
    expect(l).toMatchObject({ straggler: false, reason: null, error: null });
  });

  it('reports a NIC failure that precedes any clean sample, and keeps the failed timing out of the baseline', () => {
    const r = job(2, 1);
    r.pipelineError = () => 'nic-failure';
    r.pipelineMs = () => 0;
    r.iterate();
    expect(r.detector.snapshot().pipelineLinks).toEqual([
      expect.objectContaining({ dp: 0, link: 0, samples: 1, straggler: true, reason: 'nic-failure', error: 'nic-failure' }),
    ]);
    expect(pipelineLink(r.detector.snapshot(), 0, 0).medianMs).toBeNaN();
  });

  it('counts timeouts as bad samples and reports them', () => {
    const r = job(4, 2);
    r.run(10);
    r.pipelineError = (d, link, dir) => (d === 1 && link === 0 && dir === 'fwd' ? 'timeout' : null);
    r.run(2);
    expect(pipelineLink(r.detector.snapshot(), 1, 0)).toMatchObject({ straggler: false, error: 'timeout' });
    r.iterate();
    expect(pipelineLink(r.detector.snapshot(), 1, 0)).toMatchObject({ straggler: true, error: 'timeout' });
  });

  it("uses the nominal time (latency + bytes at nominal bandwidth) as the baseline until one is learned, and as a floor after", () => {
    const slowFromStart = (nominal?: { latencyMs?: number; gbps?: number }) => {
      const r = job(2, 1, {}, nominal);
      r.pipelineMs = () => 40;
      return r;
    };
    const withNominal = slowFromStart({ latencyMs: 2, gbps: 1 }); // 2 + 8e6 bytes / 1e6 bytes per ms = 10 ms
    withNominal.run(2);
    expect(withNominal.detector.activeStragglerCount()).toBe(0);
    withNominal.iterate();
    expect(pipelineLink(withNominal.detector.snapshot(), 0, 0)).toMatchObject({ straggler: true, reason: 'delegation', baselineMs: 10 });
    withNominal.run(20);
    expect(pipelineLink(withNominal.detector.snapshot(), 0, 0)).toMatchObject({ straggler: true, baselineMs: 10 });
    // Without it the slow level is all the detector ever saw: it becomes the baseline.
    const without = slowFromStart();
    without.run(23);
    expect(pipelineLink(without.detector.snapshot(), 0, 0)).toMatchObject({ straggler: false, baselineMs: 40 });
    // Only a latency, no bandwidth: no nominal time (the bytes term would be missing).
    const latencyOnly = slowFromStart({ latencyMs: 2 });
    latencyOnly.run(23);
    expect(latencyOnly.detector.activeStragglerCount()).toBe(0);
  });

  it('reports the worse direction for the per-link levels', () => {
    const r = job(2, 1);
    r.pipelineMs = (_d, _link, dir) => (dir === 'fwd' ? 10 : 14);
    r.run(10);
    r.pipelineMs = (_d, _link, dir) => (dir === 'fwd' ? 13 : 14);
    r.run(3);
    const l = pipelineLink(r.detector.snapshot(), 0, 0);
    expect(l).toMatchObject({ baselineMs: 14, medianMs: 14, forwardExtraMs: 3, backwardExtraMs: 0, extraMs: 3 });
    expect(l.ewmaMs).toBe(14);
  });
});

describe('JobDetector: reports', () => {
  it('ignores a duplicate report: same result state, identical snapshot', () => {
    const r = job(4, 2);
    r.run(10);
    delayLink(r, 30);
    r.run(2);
    const links = r.links(1, 2);
    const first = r.detector.observe(r.rank(1, 2), 12, { f: 10, b: 10, w: 10 }, links);
    expect(first).toEqual({ accepted: true, duplicate: false, ignoredLinks: 0, changed: true });
    const before = r.detector.snapshot();
    expect(r.detector.observe(r.rank(1, 2), 12, { f: 10, b: 10, w: 10 }, links)).toEqual({ accepted: false, duplicate: true, ignoredLinks: 0, changed: false });
    expect(r.detector.observe(r.rank(1, 2), 3, { f: 99, b: 99, w: 99 }, links)).toMatchObject({ duplicate: true }); // late redelivery
    expect(r.detector.snapshot()).toEqual(before);
    expect(r.detector.activeStragglerCount()).toBe(1);
  });

  it('rejects unknown ranks and bad iterations, and ignores links it cannot place', () => {
    const r = job(4, 2);
    const ok = { kind: 'pipeline' as const, bytes: 1, medianMs: 1, maxMs: 1, delegated: false, error: null };
    expect(r.detector.observe(99, 0, { f: 1, b: 1, w: 1 }, [])).toEqual({ accepted: false, duplicate: false, ignoredLinks: 0, changed: false });
    expect(r.detector.observe(0, Number.NaN, { f: 1, b: 1, w: 1 }, [{ ...ok, peer: 1 }])).toMatchObject({ accepted: false, duplicate: false });
    const result = r.detector.observe(1, 0, { f: 1, b: 1, w: 1 }, [
      { ...ok, peer: 2 }, // forward to (0, 2): used
      { ...ok, peer: 0 }, // backward to (0, 0): used
      { ...ok, peer: 3 }, // not adjacent
      { ...ok, peer: 6 }, // adjacent stage, other replica
      { ...ok, peer: 1 }, // itself
      { ...ok, peer: 42 }, // unknown
      { ...ok, peer: 5, kind: 'data-parallel' }, // (1, 1): a data-parallel peer, used
      { ...ok, peer: 6, kind: 'data-parallel' }, // other stage
      { ...ok, peer: 0, kind: 'data-parallel' }, // same replica
      { ...ok, peer: 2, medianMs: Number.NaN }, // no timing
      { ...ok, peer: 2, medianMs: -1 },
    ]);
    expect(result).toEqual({ accepted: true, duplicate: false, ignoredLinks: 8, changed: false });
    const s = r.detector.snapshot();
    expect(s.pipelineLinks.map((l) => [l.dp, l.link, l.samples])).toEqual([
      [0, 0, 1],
      [0, 1, 1],
    ]);
    expect(s.dataParallelLinks.map((l) => [l.fromRank, l.toRank, l.pp])).toEqual([[1, 5, 1]]);
    expect(r.detector.linkCount()).toBe(3);
  });

  it('skips a compute report with unusable times but still uses its links', () => {
    const r = job(2, 1);
    const result = r.detector.observe(0, 0, { f: Number.NaN, b: 1, w: 1 }, r.links(0, 0));
    expect(result).toMatchObject({ accepted: true, ignoredLinks: 0 });
    expect(r.detector.snapshot().compute).toEqual([]);
    expect(r.detector.snapshot().pipelineLinks).toHaveLength(1);
  });

  it('keeps activeStragglerCount equal to the snapshot, and flags every visible state change, whatever happens', () => {
    const event = fc.record({
      link: fc.integer({ min: 0, max: 2 }),
      d: fc.integer({ min: 0, max: 2 }),
      extraMs: fc.constantFrom(0, 0, 3, 30),
      error: fc.constantFrom<LinkError>(null, null, null, 'timeout', 'nic-failure'),
      dpSlow: fc.constantFrom(1, 1, 3),
      computeSlow: fc.constantFrom(1, 1, 2),
      tolerance: fc.constantFrom(undefined, 0, 2, 100),
      iterations: fc.integer({ min: 1, max: 6 }),
    });
    fc.assert(
      fc.property(fc.array(event, { minLength: 1, maxLength: 8 }), (events) => {
        const r = job(4, 3, { enterAfter: 2, leaveAfter: 2, windowSize: 4, baselineWarmup: 2 });
        r.run(3);
        for (const e of events) {
          if (e.tolerance !== undefined) r.detector.setTolerance(e.d, e.link, e.tolerance);
          r.pipelineMs = (d, link) => 10 + (d === e.d && link === e.link ? e.extraMs : 0);
          r.pipelineError = (d, link, dir) => (d === e.d && link === e.link && dir === 'fwd' ? e.error : null);
          r.dpMs = (from) => 20 * (from === r.rank(e.d, e.link) ? e.dpSlow : 1);
          r.compute = (d, pp) => ({ f: 10 * (d === e.d && pp === e.link ? e.computeSlow : 1), b: 10, w: 10 });
          for (let k = 0; k < e.iterations; k++) {
            for (let d = 0; d < r.dp; d++) {
              for (let pp = 0; pp < r.S; pp++) {
                const before = r.detector.snapshot();
                const result = r.detector.observe(r.rank(d, pp), r.iteration, r.compute(d, pp), r.links(d, pp));
                const after = r.detector.snapshot();
                // Straggler flags and NIC failures; a straggler's reason may move with its delay without a flip.
                const visible = (s: DetectionSnapshot) =>
                  JSON.stringify([stragglers(s).map((x) => x.replace(/:[a-z0-9-]+$/, '')), s.pipelineLinks.map((l) => l.error === 'nic-failure'), s.dataParallelLinks.map((l) => l.error === 'nic-failure')]);
                if (visible(before) !== visible(after)) expect(result.changed).toBe(true);
                expect(r.detector.activeStragglerCount()).toBe(stragglers(after).length);
              }
            }
            r.iteration++;
          }
        }
      }),
      { numRuns: 60 },
    );
  });
});

describe('JobDetector: data-parallel links', () => {
  it('finds a link 1.5x slower than its peers, and only that one', () => {
    const r = job(2, 4);
    const slow = (from: number, to: number) => from === r.rank(0, 0) && to === r.rank(1, 0);
    r.dpMs = (from, to) => (slow(from, to) ? 30 : 20);
    r.run(30);
    const s = r.detector.snapshot();
    expect(s.dataParallelLinks).toHaveLength(16);
    expect(stragglers(s)).toEqual([`d0>2`]);
    const l = s.dataParallelLinks.find((x) => x.straggler)!;
    expect(l).toMatchObject({ pp: 0, medianMs: 30, peerMedianMs: 20, ratio: 1.5, samples: 30, error: null });
    expect(r.detector.activeStragglerCount()).toBe(1);
  });

  it('leaves a link 1.1x slower than its peers alone', () => {
    const r = job(2, 4);
    r.dpMs = (from, to) => (from === r.rank(0, 0) && to === r.rank(1, 0) ? 22 : 20);
    expect(r.run(40).flat().some((x) => x.changed)).toBe(false);
    expect(stragglers(r.detector.snapshot())).toEqual([]);
  });

  it('needs the extra over the peers to pass the data-parallel floor (dpMinExtraMs), whatever the ratio', () => {
    const cases: Array<[number, Partial<DetectorConfig>, boolean]> = [
      [3, {}, false], // 1.5x, but only 1 ms more
      [3.5, {}, false], // 1.75x: CPU jitter on a fast in-rack ring, not worth a re-map
      [6.5, {}, false],
      [7.5, {}, true], // 5.5 ms more
      [3.5, { dpMinExtraMs: 0 }, true], // can fail: without the floor, jitter is a straggler
      [3, { dpMinExtraMs: 0 }, false], // ... and the general noise floor (minExtraMs) still holds
    ];
    for (const [slowMs, config, expected] of cases) {
      const r = job(2, 4, config);
      r.dpMs = (from, to) => (from === r.rank(0, 0) && to === r.rank(1, 0) ? slowMs : 2);
      r.run(30);
      expect([slowMs, config, r.detector.activeStragglerCount() === 1]).toEqual([slowMs, config, expected]);
    }
  });

  it('has no peers to compare with below three links', () => {
    const r = job(1, 2); // two directed links
    r.dpMs = (from) => (from === 0 ? 60 : 20);
    r.run(40);
    const s = r.detector.snapshot();
    expect(s.dataParallelLinks.map((l) => l.straggler)).toEqual([false, false]);
    expect(s.dataParallelLinks[0].peerMedianMs).toBeNaN();
  });

  it('recovers a slow link after it speeds up', () => {
    const r = job(2, 4);
    r.dpMs = (from, to) => (from === r.rank(0, 0) && to === r.rank(1, 0) ? 30 : 20);
    r.run(30);
    expect(r.detector.activeStragglerCount()).toBe(1);
    r.dpMs = () => 20;
    r.run(30);
    expect(r.detector.activeStragglerCount()).toBe(0);
  });

  it('finds every ring slow at once (a slow boundary all rings cross) against the links\' own baselines', () => {
    const r = job(4, 2); // 8 directed links, all of them about to slow down: peers cannot tell
    r.run(12);
    r.dpMs = () => 50;
    r.run(2);
    expect(r.detector.snapshot().dataParallelLinks.some((l) => l.straggler)).toBe(false);
    r.run(1); // enterAfter = 3 slow samples in a row
    const s = r.detector.snapshot();
    expect(s.dataParallelLinks.every((l) => l.straggler)).toBe(true);
    // Sized by the newest samples at once; the baseline is still the healthy level.
    expect(s.dataParallelLinks[0]).toMatchObject({ medianMs: 20, baselineMs: 20, extraMs: 30 });
  });

  // Replicas in two racks: every ring crosses the boundary (the registration says so with localities).
  const twoRacks = (rank: number) => (rank < 4 ? 'rack-a' : 'rack-b');

  it('twin: with no localities declared, rings all slow alike from the first iteration read as an optimistic nominal, calibrated away', () => {
    const r = job(4, 2, {}, { latencyMs: 5, gbps: 10 });
    r.dpMs = () => 40;
    r.run(DEFAULT_DETECTOR_CONFIG.baselineWarmup + 20);
    expect(r.detector.snapshot().dataParallelLinks.some((l) => l.straggler)).toBe(false);
  });

  it('finds links slow from the first iteration against the nominal network, once their own level is learned', () => {
    const r = job(4, 2, {}, { latencyMs: 5, gbps: 10 }, twoRacks); // 5 ms + 6e7 bytes at 10 GB/s = 11 ms
    r.dpMs = () => 40;
    r.run(5);
    // Before the baseline warm-up the peers answer, not the registration's promise: every ring runs alike.
    expect(r.detector.snapshot().dataParallelLinks.some((l) => l.straggler)).toBe(false);
    r.run(DEFAULT_DETECTOR_CONFIG.baselineWarmup + 3);
    const s = r.detector.snapshot();
    expect(s.dataParallelLinks.every((l) => l.straggler)).toBe(true);
    expect(s.dataParallelLinks[0].baselineMs).toBeCloseTo(11, 9);
    expect(s.dataParallelLinks[0].extraMs).toBeCloseTo(29, 9);
  });

  it('takes a NIC failure on a data-parallel link at once', () => {
    const r = job(2, 4);
    r.run(5);
    r.dpError = (from, to) => (from === r.rank(2, 1) && to === r.rank(3, 1) ? 'nic-failure' : null);
    expect(r.iterate()[r.rank(2, 1)].changed).toBe(true);
    const l = r.detector.snapshot().dataParallelLinks.find((x) => x.straggler)!;
    expect(l).toMatchObject({ fromRank: 5, toRank: 7, error: 'nic-failure' });
  });

  it('lists links sorted by (fromRank, toRank)', () => {
    const r = job(2, 4);
    r.iterate();
    const keys = r.detector.snapshot().dataParallelLinks.map((l) => [l.fromRank, l.toRank]);
    expect(keys).toEqual(keys.slice().sort((a, b) => a[0] - b[0] || a[1] - b[1]));
    expect(keys[0]).toEqual([0, 2]);
  });
});

describe('JobDetector: compute', () => {
  it('finds a rank 1.3x slower than the same stage in the other replica', () => {
    const r = job(4, 2);
    r.run(10);
    r.compute = (d, pp) => (d === 1 && pp === 1 ? { f: 13, b: 13, w: 13 } : { f: 10, b: 10, w: 10 });
    r.run(20);
    const s = r.detector.snapshot();
    expect(stragglers(s)).toEqual(['c5']);
    const c = s.compute.find((x) => x.rank === 5)!;
    expect(c).toMatchObject({ dp: 1, pp: 1, fMs: 13, bMs: 13, wMs: 13, referenceMs: 30 });
    expect(c.ratio).toBeCloseTo(1.3, 9);
    expect(s.compute.find((x) => x.rank === 1)!.ratio).toBeCloseTo(30 / 39, 9); // the healthy twin is not blamed
  });

  it('leaves a rank 1.1x slower alone', () => {
    const r = job(4, 2);
    r.compute = (d, pp) => (d === 1 && pp === 1 ? { f: 11, b: 11, w: 11 } : { f: 10, b: 10, w: 10 });
    expect(r.run(30).flat().some((x) => x.changed)).toBe(false);
    expect(stragglers(r.detector.snapshot())).toEqual([]);
  });

  it('compares a single replica with its own healthy level', () => {
    const r = job(2, 1);
    r.run(10);
    r.compute = (_d, pp) => (pp === 0 ? { f: 15, b: 15, w: 15 } : { f: 10, b: 10, w: 10 });
    r.run(20);
    const s = r.detector.snapshot();
    expect(stragglers(s)).toEqual(['c0']);
    expect(s.compute[0]).toMatchObject({ referenceMs: 30, ratio: 1.5 });
    expect(s.compute[1]).toMatchObject({ referenceMs: 30, ratio: 1, straggler: false });
  });

  it('gives per-stage F, B, W as the max over replicas, NaN where nothing was reported', () => {
    const r = job(3, 2);
    r.compute = (d, pp) => (pp === 0 ? (d === 0 ? { f: 12, b: 18, w: 5 } : { f: 10, b: 20, w: 6 }) : { f: 1, b: 2, w: 3 });
    for (let d = 0; d < 2; d++) for (const pp of [0, 1]) r.detector.observe(r.rank(d, pp), 0, r.compute(d, pp), []);
    expect(r.detector.snapshot().stageTimes).toEqual({ fMs: [12, 1, Number.NaN], bMs: [20, 2, Number.NaN], wMs: [6, 3, Number.NaN] });
    expect(r.detector.snapshot().compute.map((c) => c.rank)).toEqual([0, 1, 3, 4]); // sorted by (dp, pp)
  });
});

describe('JobDetector: bounded state', () => {
  it('tracks a fixed set of links however long it runs, and forgets samples older than the window', () => {
    const r = job(4, 2);
    r.run(1);
    expect(r.detector.linkCount()).toBe(2 * 3 * 2 + 8); // two directions x 3 links x 2 replicas + 8 directed ring links
    r.run(400);
    expect(r.detector.linkCount()).toBe(20);
    r.pipelineMs = () => 50;
    r.run(DEFAULT_DETECTOR_CONFIG.windowSize);
    const s = r.detector.snapshot();
    expect(s.pipelineLinks).toHaveLength(6);
    expect(s.dataParallelLinks).toHaveLength(8);
    expect(s.compute).toHaveLength(8);
    expect(s.pipelineLinks.every((l) => l.medianMs === 50 && l.samples === 401 + DEFAULT_DETECTOR_CONFIG.windowSize)).toBe(true);
  });

  it('refuses a bad config or topology', () => {
    const ranks = [{ rank: 0, dp: 0, pp: 0 }];
    expect(() => new JobDetector({ stages: 1, dpSize: 1, ranks }, { ...DEFAULT_DETECTOR_CONFIG, windowSize: 1 })).toThrow(/windowSize/);
    expect(() => new JobDetector({ stages: 1, dpSize: 1, ranks: [...ranks, { rank: 0, dp: 0, pp: 0 }] }, DEFAULT_DETECTOR_CONFIG)).toThrow(InputError);
    expect(() => new JobDetector({ stages: 2, dpSize: 1, ranks: [...ranks, { rank: 1, dp: 0, pp: 0 }] }, DEFAULT_DETECTOR_CONFIG)).toThrow(/two reporting ranks/);
    expect(() => new JobDetector({ stages: 1, dpSize: 1, ranks: [{ rank: 0, dp: 1, pp: 0 }] }, DEFAULT_DETECTOR_CONFIG)).toThrow(/dp 1/);
    expect(() => new JobDetector({ stages: 0, dpSize: 1, ranks: [] }, DEFAULT_DETECTOR_CONFIG)).toThrow(/stages/);
  });
});
