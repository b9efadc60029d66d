/**
 * Two-state debouncer: becomes active after `enterAfter` consecutive bad observations and
 * healthy again after `leaveAfter` consecutive good ones. One streak counter suffices: it
 * counts observations that disagree with the current state and resets on one that agrees.
 */
export class Hysteresis {
  private readonly enter: number;
  private readonly leave: number;
  private on = false;
  private streak = 0;

  constructor(enterAfter: number, leaveAfter: number) {
    if (!Number.isInteger(enterAfter) || enterAfter < 1) throw new RangeError(`enterAfter must be a positive integer, got ${enterAfter}`);
    if (!Number.isInteger(leaveAfter) || leaveAfter < 1) throw new RangeError(`leaveAfter must be a positive integer, got ${leaveAfter}`);
    this.enter = enterAfter;
    this.leave = leaveAfter;
  }

  get active(): boolean {
    return this.on;
  }

  /** Records one observation; true when the state flipped. */
  update(bad: boolean): boolean {
    if (bad === this.on) {
      this.streak = 0;
      return false;
    }
    if (++this.streak < (this.on ? this.leave : this.enter)) return false;
    this.on = bad;
    this.streak = 0;
    return true;
  }

  /** Sets the state at once (e.g. a failed NIC) and restarts the count; true when the state flipped. */
  force(active: boolean): boolean {
    const flipped = this.on !== active;
    this.on = active;
    this.streak = 0;
    return flipped;
  }
}
