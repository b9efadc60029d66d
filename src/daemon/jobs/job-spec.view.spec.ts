import { registration } from '../../../test/support/service-harness';
import { Registration } from '../../protocol/protocol-v1.type';
import { JobSpecView } from './job-spec.view';

/** 4 stages of 10 layers (3, 2, 2, 3), 1 GB of state and 0.1 GB of activations per layer, 5 GB of room per stage. */
function layered(): Registration {
  const r = registration('caps', 4);
  return {
    ...r,
    microbatches: 32,
    memory: { ...r.memory, deviceBytes: [5e9, 5e9, 5e9, 5e9], activationBytes: [3e8, 2e8, 2e8, 3e8], hostBytes: 0 },
    layers: { fMs: new Array(10).fill(1), bMs: new Array(10).fill(1), wMs: new Array(10).fill(1), stateBytes: new Array(10).fill(1e9), activationBytes: new Array(10).fill(1e8), perStage: [3, 2, 2, 3] },
  };
}

describe('JobSpecView.caps', () => {
  it('under the registered split: the registered room over the registered activations', () => {
    const spec = new JobSpecView(layered());
    expect(spec.caps().device).toEqual([16, 25, 25, 16]);
    expect(spec.caps([3, 2, 2, 3]).device).toEqual([16, 25, 25, 16]);
  });

  it('under a moved split: a stage given a layer holds its state and activations, a stage giving one frees them', () => {
    // Stage 0: 4 layers, 5 + 3 - 4 = 4 GB over 0.4 GB; stage 3: 2 layers, 5 + 3 - 2 = 6 GB over 0.2 GB (capped at 32 microbatches).
    expect(new JobSpecView(layered()).caps([4, 2, 2, 2]).device).toEqual([10, 25, 25, 30]);
  });
});
