import { ComputeObservation, JobDetector, LinkError, LinkObservation, ObserveResult } from './job-detector';

/** Direction of a pipeline message: activations down the pipeline, gradients back up. */
export type Dir = 'fwd' | 'bwd';

/**
 * Emulated ranks of an (S stages x dp replicas) job for the detector's specs, rank = d * S + pp:
 * every rank reports its pipeline links (forward to pp + 1, backward to pp - 1), its data-parallel
 * ring neighbours and its compute; a case sets the functions that say how slow each one is.
 */
export class EmulatedRanks {
  iteration = 0;
  pipelineMs: (d: number, link: number, dir: Dir) => number = () => 10;
  pipelineError: (d: number, link: number, dir: Dir) => LinkError = () => null;
  dpMs: (fromRank: number, toRank: number) => number = () => 20;
  dpError: (fromRank: number, toRank: number) => LinkError = () => null;
  compute: (d: number, pp: number) => ComputeObservation = () => ({ f: 10, b: 10, w: 10 });

  constructor(
    public detector: JobDetector,
    readonly S: number,
    readonly dp: number,
  ) {}

  rank(d: number, pp: number): number {
    return d * this.S + pp;
  }

  links(d: number, pp: number): LinkObservation[] {
    const out: LinkObservation[] = [];
    const pipe = (peerPp: number, link: number, dir: Dir) => {
      const ms = this.pipelineMs(d, link, dir);
      out.push({ peer: this.rank(d, peerPp), kind: 'pipeline', bytes: 8e6, medianMs: ms, maxMs: ms * 1.2, delegated: false, error: this.pipelineError(d, link, dir) });
    };
    if (pp + 1 < this.S) pipe(pp + 1, pp, 'fwd');
    if (pp > 0) pipe(pp - 1, pp - 1, 'bwd');
    const ring = new Set([(d + 1) % this.dp, (d + this.dp - 1) % this.dp]);
    ring.delete(d);
    for (const peerD of ring) {
      const from = this.rank(d, pp);
      const to = this.rank(peerD, pp);
      const ms = this.dpMs(from, to);
      out.push({ peer: to, kind: 'data-parallel', bytes: 6e7, medianMs: ms, maxMs: ms, delegated: false, error: this.dpError(from, to) });
    }
    return out;
  }

  /**
   * One report per rank, in (dp, pp) order, into every detector given (all fed the same reports);
   * returns the first detector's results by rank.
   */
  iterate(detectors: JobDetector[] = [this.detector]): ObserveResult[] {
    const results: ObserveResult[] = [];
    for (let d = 0; d < this.dp; d++) {
      for (let pp = 0; pp < this.S; pp++) {
        const rank = this.rank(d, pp);
        const compute = this.compute(d, pp);
        const links = this.links(d, pp);
        detectors.forEach((det, i) => {
          const result = det.observe(rank, this.iteration, compute, links);
          if (i === 0) results[rank] = result;
        });
      }
    }
    this.iteration++;
    return results;
  }

  run(iterations: number): ObserveResult[][] {
    return Array.from({ length: iterations }, () => this.iterate());
  }
}
