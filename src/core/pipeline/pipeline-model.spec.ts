import { readFileSync } from 'fs';
import { join } from 'path';
import fc from 'fast-check';
import { arbProfile, inputErrorOf } from '../engine/run-checks.spec';
import { effectiveLinkDelayMs, MAX_MICROBATCHES, MAX_STAGES, toPipelineModel, validateProfile } from './pipeline-model';

const MEGATRON_PROFILE = join(__dirname, '../../../bench/profiles/megatron-gpt-8stage-32mb.json');

/** A valid 2-stage profile; each test breaks one field of it. */
function base(): Record<string, unknown> {
  return { stages: 2, microbatches: 4, fMs: [1, 2], bMs: [1, 2], wMs: [1, 2], linkMs: [0.5] };
}

function rejects(patch: Record<string, unknown>): string {
  return inputErrorOf(() => validateProfile({ ...base(), ...patch })).message;
}

describe('validateProfile', () => {
  it('accepts the minimal valid profile and returns its fields', () => {
    expect(validateProfile(base())).toEqual(base());
  });

  it.each([[null], [[]], ['{}'], [3]])('rejects %j: not an object', (value) => {
    expect(inputErrorOf(() => validateProfile(value)).message).toBe('profile must be a JSON object');
  });

  it.each([[0], [1.5], [-1], ['2'], [MAX_STAGES + 1], [undefined]])('rejects stages = %j', (stages) => {
    expect(rejects({ stages })).toMatch(/^profile\.stages must be an integer from 1 to 1024/);
  });

  it.each([[0], [2.5], [MAX_MICROBATCHES + 1], [null]])('rejects microbatches = %j', (microbatches) => {
    expect(rejects({ microbatches })).toMatch(/^profile\.microbatches must be an integer from 1 to 65536/);
  });

  it.each([
    ['fMs', [1]],
    ['bMs', [1, 2, 3]],
    ['wMs', []],
    ['linkMs', [1, 2]],
  ])('rejects %s with the wrong length', (field, value) => {
    expect(rejects({ [field]: value })).toMatch(new RegExp(`^profile\\.${field} must have \\d+ entries, got ${(value as number[]).length}`));
  });

  it('rejects a missing array', () => {
    expect(rejects({ wMs: undefined })).toMatch(/^profile\.wMs must be an array of 2 numbers/);
  });

  it.each([
    ['fMs', [1, -0.001], 'profile.fMs[1] must be >= 0, got -0.001'],
    ['linkMs', [-3], 'profile.linkMs[0] must be >= 0, got -3'],
    ['bMs', [1, NaN], 'profile.bMs[1] must be a finite number'],
    ['wMs', [Infinity, 1], 'profile.wMs[0] must be a finite number'],
    ['linkMs', [-Infinity], 'profile.linkMs[0] must be a finite number'],
    ['fMs', [1, '2'], 'profile.fMs[1] must be a finite number, got "2"'],
  ])('rejects %s = %p', (field, value, message) => {
    expect(rejects({ [field]: value })).toContain(message);
  });

  it('rejects linkBytes without linkGBps and the other way round', () => {
    expect(rejects({ linkBytes: [100] })).toBe('profile.linkBytes and profile.linkGBps go together: give both or neither');
    expect(rejects({ linkGBps: [1] })).toBe('profile.linkBytes and profile.linkGBps go together: give both or neither');
  });

  it('rejects zero or negative bandwidth and negative bytes', () => {
    expect(rejects({ linkBytes: [100], linkGBps: [0] })).toContain('profile.linkGBps[0] must be > 0, got 0');
    expect(rejects({ linkBytes: [-1], linkGBps: [1] })).toContain('profile.linkBytes[0] must be >= 0, got -1');
  });

  const memory = { afterF: [4, 4], afterB: [-2, -2], afterW: [-2, -2], limit: [8, 12] };

  it('accepts a memory profile that releases what F allocates', () => {
    expect(validateProfile({ ...base(), memory }).memory).toEqual(memory);
  });

  it('rejects memory that is not an object', () => {
    expect(rejects({ memory: [1] })).toBe('profile.memory must be an object with afterF, afterB, afterW and limit');
  });

  it('rejects memory that cannot hold one microbatch', () => {
    expect(rejects({ memory: { ...memory, limit: [8, 3.5] } })).toBe('profile.memory: stage 1 cannot hold one microbatch (afterF 4 > limit 3.5)');
  });

  it('rejects a non-positive afterF or limit', () => {
    expect(rejects({ memory: { ...memory, afterF: [0, 4] } })).toContain('profile.memory.afterF[0] must be > 0, got 0');
    expect(rejects({ memory: { ...memory, limit: [8, -1] } })).toContain('profile.memory.limit[1] must be > 0, got -1');
  });

  it('rejects memory that a microbatch never gives back', () => {
    expect(rejects({ memory: { ...memory, afterW: [-2, -1.5] } })).toContain('stage 1 does not release what F allocates');
  });

  it('accepts the Megatron GPT 8-stage profile shipped in bench/profiles', () => {
    const raw = JSON.parse(readFileSync(MEGATRON_PROFILE, 'utf8')) as Record<string, unknown>;
    const profile = validateProfile(raw);
    expect(profile.stages).toBe(8);
    expect(profile.microbatches).toBe(32);
    expect(profile.fMs).toHaveLength(8);
    expect(profile.linkMs).toHaveLength(7);
    expect(profile.memory?.limit).toEqual(new Array(8).fill(19840));
  });
});

describe('toPipelineModel', () => {
  it('lays out durations as [stage * 3 + kind] and copies links', () => {
    const model = toPipelineModel(validateProfile({ stages: 2, microbatches: 3, fMs: [1, 4], bMs: [2, 5], wMs: [3, 6], linkMs: [7] }));
    expect(Array.from(model.durations)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(Array.from(model.linkMs)).toEqual([7]);
    expect(Array.from(model.transferMs)).toEqual([0]);
    expect(model.memDelta).toBeNull();
    expect(model.memLimit).toBeNull();
  });

  it('computes transfer time as bytes / (GB/s * 1e6) ms', () => {
    // 25 MB over 12.5 GB/s takes 2 ms; 1 GB over 100 GB/s takes 10 ms.
    const profile = validateProfile({ stages: 3, microbatches: 1, fMs: [1, 1, 1], bMs: [1, 1, 1], wMs: [1, 1, 1], linkMs: [0.5, 0], linkBytes: [25e6, 1e9], linkGBps: [12.5, 100] });
    const model = toPipelineModel(profile);
    expect(Array.from(model.transferMs)).toEqual([2, 10]);
    expect(effectiveLinkDelayMs(model, 0)).toBe(2.5);
    expect(effectiveLinkDelayMs(model, 1)).toBe(10);
  });

  it('matches bytes / (GBps * 1e6) for random bandwidths', () => {
    fc.assert(
      fc.property(arbProfile({ maxMicrobatches: 2 }), (profile) => {
        const model = toPipelineModel(profile);
        for (let i = 0; i + 1 < profile.stages; i++) {
          const expected = profile.linkBytes ? profile.linkBytes[i] / (profile.linkGBps![i] * 1e6) : 0;
          expect(model.transferMs[i]).toBe(expected);
          expect(effectiveLinkDelayMs(model, i)).toBe(profile.linkMs[i] + expected);
        }
      }),
      { numRuns: 100 },
    );
  });

  it('uses replacement link delays when given, leaving the profile alone', () => {
    const profile = validateProfile(base());
    const model = toPipelineModel(profile, [42]);
    expect(Array.from(model.linkMs)).toEqual([42]);
    expect(profile.linkMs).toEqual([0.5]);
  });

  it('lays out memory deltas per stage and kind', () => {
    const model = toPipelineModel(validateProfile({ ...base(), memory: { afterF: [4, 3], afterB: [-1, -2], afterW: [-3, -1], limit: [8, 12] } }));
    expect(Array.from(model.memDelta!)).toEqual([4, -1, -3, 3, -2, -1]);
    expect(Array.from(model.memLimit!)).toEqual([8, 12]);
  });

  it('has no links for a single stage', () => {
    const model = toPipelineModel(validateProfile({ stages: 1, microbatches: 1, fMs: [1], bMs: [1], wMs: [1], linkMs: [] }));
    expect(model.linkMs).toHaveLength(0);
    expect(model.transferMs).toHaveLength(0);
  });
});
