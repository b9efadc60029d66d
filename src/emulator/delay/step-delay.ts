import { InputError } from '../../core/input-error';
import { checkDelay, checkLink } from './delay-check';
import { DelayModel } from './delay-model.type';

export interface DelayStep {
  /** First iteration the step applies to. */
  fromIteration: number;
  links: number[];
  /** Delay from then on, ms; 0 ends a straggler. */
  delayMs: number;
}

/** Index of the last entry of ascending `xs` that is <= x, or -1. */
function lastAtOrBefore(xs: number[], x: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/**
 * From each step's iteration on, its links get its delay (0 ends a straggler). For the same link, a
 * step with a later fromIteration wins, and among steps with the same fromIteration the one listed
 * later wins (so steps need not be given in order).
 */
export function stepDelay(steps: DelayStep[]): DelayModel {
  steps.forEach((step, index) => {
    const what = `step ${index}`;
    if (!Number.isInteger(step.fromIteration) || step.fromIteration < 0) throw new InputError(`${what}: fromIteration ${step.fromIteration} is not a non-negative integer`);
    step.links.forEach((link) => checkLink(link, what));
    checkDelay(step.delayMs, what);
  });
  // Array.prototype.sort is stable, which keeps "listed later wins" for equal iterations.
  const sorted = steps.map((step) => ({ ...step, links: step.links.slice() })).sort((a, b) => a.fromIteration - b.fromIteration);
  // Per link, the iterations its delay changes at and the new delays: one binary search per call,
  // since the emulator asks for every message it sends.
  const changes = new Map<number, { from: number[]; ms: number[] }>();
  for (const step of sorted) {
    for (const link of step.links) {
      let c = changes.get(link);
      if (!c) changes.set(link, (c = { from: [], ms: [] }));
      if (c.from.length > 0 && c.from[c.from.length - 1] === step.fromIteration) c.ms[c.ms.length - 1] = step.delayMs;
      else {
        c.from.push(step.fromIteration);
        c.ms.push(step.delayMs);
      }
    }
  }
  const name = sorted.flatMap((s) => s.links.map((link) => `${s.fromIteration}@${link}=${s.delayMs}`)).join(',');
  return {
    name: name === '' ? 'none' : `step:${name}`,
    delayMs(link: number, _timeMs: number, iteration: number): number {
      const c = changes.get(link);
      if (!c) return 0;
      const k = lastAtOrBefore(c.from, iteration);
      return k < 0 ? 0 : c.ms[k];
    },
    nicFailed: (): boolean => false,
  };
}
