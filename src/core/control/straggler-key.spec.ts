import fc from 'fast-check';
import { computeKey, dataParallelKey, parseStragglerKey, pipelineKey } from './straggler-key';

describe('parseStragglerKey', () => {
  it('reads back what pipelineKey, dataParallelKey and computeKey build', () => {
    const n = fc.nat({ max: 100000 });
    fc.assert(
      fc.property(n, n, (a, b) => {
        expect(parseStragglerKey(pipelineKey(a, b))).toEqual({ kind: 'pipeline', dp: a, link: b });
        expect(parseStragglerKey(dataParallelKey(a, b))).toEqual({ kind: 'dataParallel', fromRank: a, toRank: b });
        expect(parseStragglerKey(computeKey(a))).toEqual({ kind: 'compute', rank: a });
      }),
    );
  });

  it('twin: other strings name nothing', () => {
    for (const key of ['', 'p:1', 'p:1:2:3', 'd:1-2', 'c:', 'x:1:2', 'p:a:1', ' p:1:2']) expect(parseStragglerKey(key)).toBeNull();
  });
});
