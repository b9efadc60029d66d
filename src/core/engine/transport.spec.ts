import fc from 'fast-check';
import { PipelineModel } from '../pipeline/pipeline-model.type';
import { toPipelineModel, validateProfile } from '../pipeline/pipeline-model';
import { generateSchedule } from './generator';
import { simulateSchedule } from './simulator';

function uniform(stages: number, microbatches: number, linkMs: number[]): PipelineModel {
  const t = new Array(stages).fill(10);
  return toPipelineModel(validateProfile({ stages, microbatches, fMs: t, bMs: t, wMs: t, linkMs }));
}

function withTransport(model: PipelineModel, gpuSlots: number[], delegateQueues: number[], copyOverhead: number[]): PipelineModel {
  return { ...model, transport: { gpuSlots: Int32Array.from(gpuSlots), delegateQueues: Int32Array.from(delegateQueues), copyOverhead: Float64Array.from(copyOverhead) } };
}

describe('link transport: head-of-line blocking and CPU delegation', () => {
  it('changes nothing when no sender resource is limited and there is no copy cost', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 5 }), fc.integer({ min: 1, max: 4 }), fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 4, maxLength: 4 }), (S, k, delays) => {
        const N = S * k;
        const model = uniform(S, N, delays.slice(0, S - 1));
        const order = generateSchedule(model, { warmup: Array.from({ length: S }, (_, i) => S - i) }).order;
        const plain = simulateSchedule(model, order);
        const open = simulateSchedule(withTransport(model, new Array(S - 1).fill(0), new Array(S - 1).fill(0), new Array(S).fill(0)), order);
        expect(open.iterationMs).toBe(plain.iterationMs);
        expect(Array.from(open.end)).toEqual(Array.from(plain.end));
      }),
      { numRuns: 50 },
    );
  });

  it('stalls the sender when its single GPU-direct send slot is held by a slow message', () => {
    // Two stages, 30 ms on the link: F0 ends at 10 and its send holds the slot until 40, so the
    // stream of stage 0 cannot go past F1's send (ends 20) until 40.
    const model = uniform(2, 4, [30]);
    const order = generateSchedule(model, { warmup: [2, 1] }).order;
    const free = simulateSchedule(model, order);
    const blocked = simulateSchedule(withTransport(model, [1], [0], [0, 0]), order);
    expect(blocked.iterationMs).toBeGreaterThan(free.iterationMs);
    // F1's message waits for the slot until F0's arrives at 40, and stage 0 runs nothing meanwhile.
    expect(blocked.messages.transferStartMs[1]).toBe(40);
    for (const code of blocked.order[0].slice(2)) expect(blocked.start[code]).toBeGreaterThanOrEqual(40);
    // Each message starts only when the previous one of its direction has arrived.
    const forward = Array.from({ length: blocked.messages.count }, (_, k) => k).filter((k) => blocked.messages.direction[k] === 0);
    for (let k = 1; k < forward.length; k++) {
      expect(blocked.messages.transferStartMs[forward[k]]).toBeGreaterThanOrEqual(blocked.messages.arriveMs[forward[k - 1]]);
    }
  });

  it('never stalls compute with delegation, spreading messages over the delegate queues, and charges the copy cost', () => {
    const model = uniform(2, 4, [30]);
    const order = generateSchedule(model, { warmup: [2, 1] }).order;
    const free = simulateSchedule(model, order);
    const delegated = simulateSchedule(withTransport(model, [1], [4], [0, 0]), order);
    expect(delegated.iterationMs).toBe(free.iterationMs); // 4 queues keep up with one message per 10 ms
    const oneQueue = simulateSchedule(withTransport(model, [1], [1], [0, 0]), order);
    const gpuDirect = simulateSchedule(withTransport(model, [1], [0], [0, 0]), order);
    expect(oneQueue.iterationMs).toBeGreaterThan(free.iterationMs); // messages queue behind each other...
    expect(oneQueue.iterationMs).toBeLessThanOrEqual(gpuDirect.iterationMs); // ...but compute never waits for a send
    const copying = simulateSchedule(withTransport(model, [1], [4], [0.04, 0.04]), order);
    for (let k = 0; k < copying.end.length; k++) expect(copying.end[k] - copying.start[k]).toBeCloseTo(10.4, 9);
    expect(copying.iterationMs).toBeGreaterThan(free.iterationMs);
  });

  it('applies time-varying extra delays at send time', () => {
    const model = uniform(2, 2, [0]);
    const order = generateSchedule(model, { warmup: [2, 1] }).order;
    const transport = { gpuSlots: Int32Array.from([0]), delegateQueues: Int32Array.from([0]), copyOverhead: Float64Array.from([0, 0]), extraDelayMs: (_link: number, t: number) => (t >= 15 ? 100 : 0) };
    const run = simulateSchedule({ ...model, transport }, order);
    const fwd = [0, 1].map((k) => run.messages.arriveMs[k] - run.messages.sentMs[k]);
    expect(fwd).toEqual([0, 100]); // F0 sent at 10 (no delay), F1 at 20 (100 ms)
  });
});
