import { Clock } from './clock.type';

interface Timer {
  at: number;
  seq: number;
  task: () => void;
}

/**
 * A clock that moves only when told (tests): timers fire in time order, each at its own time,
 * while `advance` moves the clock past them.
 */
export class ManualClock implements Clock {
  private timers: Timer[] = [];
  private seq = 0;

  constructor(private current = 1_700_000_000_000) {}

  now(): number {
    return this.current;
  }

  monotonicMs(): number {
    return this.current;
  }

  setTimeout(task: () => void, ms: number): unknown {
    const timer: Timer = { at: this.current + Math.max(0, ms), seq: this.seq++, task };
    this.timers.push(timer);
    return timer;
  }

  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((t) => t !== handle);
  }

  /** Timers not yet fired. */
  get pending(): number {
    return this.timers.length;
  }

  /** Moves time forward by `ms`, firing every timer due on the way at its own time. */
  advance(ms: number): void {
    const until = this.current + ms;
    for (;;) {
      const next = this.timers.filter((t) => t.at <= until).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.current = Math.max(this.current, next.at);
      next.task();
    }
    this.current = until;
  }
}
