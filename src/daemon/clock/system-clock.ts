import { Clock } from '../../core/clock/clock.type';

/** The process's clocks: the only place the daemon reads time or starts timers. */
export class SystemClock implements Clock {
  now(): number {
    return Date.now();
  }

  monotonicMs(): number {
    return performance.now();
  }

  setTimeout(task: () => void, ms: number): unknown {
    return setTimeout(task, ms);
  }

  clearTimeout(handle: unknown): void {
    clearTimeout(handle as NodeJS.Timeout);
  }
}
