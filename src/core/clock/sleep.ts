import { Clock } from './clock.type';

/** Resolves after `ms` on `clock` (a manual clock resolves it when moved past). */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => {
    clock.setTimeout(resolve, ms);
  });
}
