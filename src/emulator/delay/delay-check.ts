import { InputError } from '../../core/input-error';

// Shared guards for the delay models' inputs: a NaN or negative delay would silently poison the
// emulator's clock, so every constructor rejects them up front.

/** Throws unless `link` is a pipeline link index (a non-negative integer). */
export function checkLink(link: number, what: string): void {
  if (!Number.isInteger(link) || link < 0) throw new InputError(`${what}: link ${link} is not a non-negative integer`);
}

/** Throws unless `ms` is a finite delay >= 0. */
export function checkDelay(ms: number, what: string): void {
  if (!Number.isFinite(ms) || ms < 0) throw new InputError(`${what}: delay ${ms} ms is not a finite number >= 0`);
}
