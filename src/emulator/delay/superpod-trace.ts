import { InputError } from '../../core/input-error';
import { DelayModel } from './delay-model.type';
import { DelayStep, stepDelay } from './step-delay';

/** Iterations run after the last event, so a trailing NIC failure or recovery is seen. */
export const TRACE_TAIL_ITERATIONS = 70;

/** A pipeline link written `i_j`: only neighbouring stages are joined, so j must be i + 1. */
const LINK = /^(\d+)_(\d+)$/;
/** Seconds as plain decimals (`0.03`, `1`): no signs, exponents or hex that Number() would accept. */
const SECONDS = /^\d+(\.\d+)?$/;

/** Converts seconds to ms, rounded to the nanosecond so `0.07` gives 70 and not 70.00000000000001. */
function secondsToMs(seconds: number): number {
  return Math.round(seconds * 1e9) / 1e6;
}

/**
 * Parses an iteration-indexed straggler trace (the PipeMorph artifact's format, see
 * bench/traces/superpod-link-delays.trace, copied from the artifact): one event per line
 * `ITERATION;LINKS;DELAY_S`, LINKS comma-separated `i_j` with j = i + 1 (may be empty), DELAY_S
 * seconds from that iteration on (`0.00` ends the straggler). Blank lines and `#` comments are
 * skipped; iterations must not decrease.
 *
 * `inf` with empty LINKS marks a NIC failure: from that iteration on the GPU-direct path of every
 * link is gone (nicFailed is true) and the extra delay is 0, as the straggler events described
 * that path. The failure is final, so a second failure or any event after it is an error.
 * suggestedIterations is the last event's iteration + 70, so the failure's tail runs.
 */
export function parseDelayTrace(text: string): DelayModel {
  const steps: DelayStep[] = [];
  let failureFrom: number | undefined;
  let last = -1;
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const where = `line ${index + 1}`;
    const parts = line.split(';').map((part) => part.trim());
    if (parts.length !== 3) throw new InputError(`${where}: expected ITERATION;LINKS;DELAY_S, got "${line}"`);
    const [iterationText, linksText, delayText] = parts;
    if (!/^\d+$/.test(iterationText)) throw new InputError(`${where}: iteration "${iterationText}" is not a non-negative integer`);
    const iteration = Number(iterationText);
    if (iteration < last) throw new InputError(`${where}: iteration ${iteration} comes after iteration ${last} (iterations must not decrease)`);
    if (failureFrom !== undefined) throw new InputError(`${where}: event after the NIC failure at iteration ${failureFrom} (the failure is final)`);
    last = iteration;
    const links =
      linksText === ''
        ? []
        : linksText.split(',').map((token) => {
            const m = LINK.exec(token.trim());
            if (!m || !Number.isSafeInteger(Number(m[1])) || Number(m[2]) !== Number(m[1]) + 1) throw new InputError(`${where}: "${token.trim()}" is not a pipeline link i_j with j = i + 1`);
            return Number(m[1]);
          });
    if (delayText === 'inf') {
      if (links.length > 0) throw new InputError(`${where}: "inf" (NIC failure) takes no links, got "${linksText}"`);
      failureFrom = iteration;
      return;
    }
    if (!SECONDS.test(delayText)) throw new InputError(`${where}: delay "${delayText}" is not a number of seconds (or "inf")`);
    steps.push({ fromIteration: iteration, links, delayMs: secondsToMs(Number(delayText)) });
  });
  if (last < 0) throw new InputError('trace has no events');
  const stragglers = stepDelay(steps);
  const failed = (iteration: number): boolean => failureFrom !== undefined && iteration >= failureFrom;
  return {
    name: `trace (${steps.length} events${failureFrom === undefined ? '' : `, NIC failure at ${failureFrom}`})`,
    delayMs: (link: number, timeMs: number, iteration: number): number => (failed(iteration) ? 0 : stragglers.delayMs(link, timeMs, iteration)),
    nicFailed: (_link: number, iteration: number): boolean => failed(iteration),
    suggestedIterations: last + TRACE_TAIL_ITERATIONS,
  };
}
