import { REGISTRATIONS_STREAM } from './redis-keys';
import { parseRegistration } from './message-parser';
import { ingestPass, registration, serviceHarness } from '../../test/support/service-harness';
import { Registration } from './protocol-v1.type';

/** A 4-stage registration with 10 layers (3, 2, 2, 3 per stage). */
function withLayers(patch: (layers: NonNullable<Registration['layers']>) => void = () => {}): Registration {
  const r = registration('layered', 4);
  const layers = {
    fMs: [2, 3, 3, 3, 3, 3, 3, 3, 3, 4],
    bMs: new Array(10).fill(3),
    wMs: new Array(10).fill(2),
    stateBytes: new Array(10).fill(1e9),
    activationBytes: new Array(10).fill(1e8),
    perStage: [3, 2, 2, 3],
  };
  patch(layers);
  return { ...r, layers };
}

const reason = (r: unknown): string => {
  try {
    parseRegistration(JSON.stringify(r));
  } catch (error) {
    return (error as Error).message;
  }
  return 'accepted';
};

describe('registration layers (optional)', () => {
  it('accepts a registration without layers, as before, and one with consistent layers', () => {
    expect(reason(registration('plain', 4))).toBe('accepted');
    expect(parseRegistration(JSON.stringify(withLayers())).layers?.perStage).toEqual([3, 2, 2, 3]);
  });

  it.each([
    ['a per-layer array of another length', withLayers((l) => l.bMs.pop()), 'layers.bMs has 9 entries, layers.fMs has 10: one per layer'],
    ['perStage not one entry per stage', withLayers((l) => (l.perStage = [5, 5])), 'layers.perStage has 2 entries, the job has 4 stages'],
    ['perStage not sharing out every layer', withLayers((l) => (l.perStage = [3, 2, 2, 2])), 'layers.perStage shares out 9 layers, layers.fMs lists 10'],
    ['a stage with no work', withLayers((l) => (l.fMs[3] = l.fMs[4] = l.bMs[3] = l.bMs[4] = l.wMs[3] = l.wMs[4] = 0)), 'layers: stage 1 holds layers 3-4, whose F, B and W times are all 0'],
    ['a negative time', withLayers((l) => (l.wMs[7] = -1)), 'registration: /layers/wMs/7 must be >= 0'],
    ['a stage holding no layer', withLayers((l) => (l.perStage = [4, 0, 3, 3])), 'registration: /layers/perStage/1 must be >= 1'],
    ['a missing array', withLayers((l) => delete (l as Partial<typeof l>).stateBytes), 'registration: /layers misses field "stateBytes"'],
    ['an unknown field', withLayers((l) => Object.assign(l, { names: [] })), 'registration: /layers has unknown field "names"'],
  ])('refuses %s with a reason naming it', (_what, r, expected) => {
    expect(reason(r)).toBe(expected);
  });

  it('copies a registration with bad layers to pipemorph:rejected with the reason, and registers no job', async () => {
    const h = serviceHarness();
    await h.store.ensureGroup(REGISTRATIONS_STREAM, h.config.ingest.consumerGroup);
    await h.store.append(REGISTRATIONS_STREAM, JSON.stringify(withLayers((l) => (l.perStage = [3, 2, 2, 2]))), 1000);
    await ingestPass(h);
    const rejected = h.store.entries('pipemorph:rejected');
    expect(rejected).toHaveLength(1);
    expect(rejected[0].fields!.reason).toBe('layers.perStage shares out 9 layers, layers.fMs lists 10');
    expect(h.registry.get('layered')).toBeUndefined();
  });
});
