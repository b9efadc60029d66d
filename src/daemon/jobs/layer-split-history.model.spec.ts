import { registration } from '../../../test/support/service-harness';
import { PublishedSchedule } from '../../protocol/protocol-v1.type';
import { LayerSplitHistory } from './layer-split-history.model';

const layered = {
  ...registration('splits', 3),
  layers: { fMs: [1, 1, 1, 1, 1, 1], bMs: [1, 1, 1, 1, 1, 1], wMs: [0, 0, 0, 0, 0, 0], stateBytes: new Array(6).fill(1), activationBytes: new Array(6).fill(1), perStage: [2, 2, 2] },
};
const withSplit = (version: number, layersVersion: number, sinceVersion: number, perStage: number[]) => ({ version, layers: { version: layersVersion, sinceVersion, perStage, moves: [] } }) as unknown as PublishedSchedule;

describe('LayerSplitHistory', () => {
  it('gives the work of a stage under the split a report ran, as a multiple of the registered split', () => {
    const h = new LayerSplitHistory(layered);
    expect([0, 1, 2].map((pp) => h.workRatio(pp, 5))).toEqual([1, 1, 1]);
    h.note(withSplit(6, 1, 6, [3, 1, 2]));
    h.note(withSplit(7, 1, 6, [3, 1, 2])); // carried over: nothing new
    h.note(withSplit(9, 2, 9, [2, 1, 3]));
    expect(h.inForce).toEqual([2, 1, 3]);
    expect([0, 1, 2].map((pp) => h.workRatio(pp, 5))).toEqual([1, 1, 1]); // before the first re-balance
    expect([0, 1, 2].map((pp) => h.workRatio(pp, 7))).toEqual([1.5, 0.5, 1]);
    expect([0, 1, 2].map((pp) => h.workRatio(pp, 9))).toEqual([1, 0.5, 1.5]);
    expect([0, 1, 2].map((pp) => h.inForceRatio(pp))).toEqual([1, 0.5, 1.5]);
  });

  it('is 1 everywhere for a job without layers', () => {
    const h = new LayerSplitHistory(registration('plain', 3));
    h.note(withSplit(6, 1, 6, [3, 1, 2]));
    expect(h.inForce).toBeNull();
    expect([h.workRatio(0, 9), h.inForceRatio(1)]).toEqual([1, 1]);
  });
});
