/**
 * Two-state debouncer: becomes active after `enterAfter` consecutive bad observations and
 * healthy again after `leaveAfter` consecutive good ones. One streak counter suffices: it
 * counts observations that disagree with the current state and resets on one that agrees.
 * Severe observations (bad ones the caller deems unmistakable) also enter after
 * `enterAfterSevere` of them in a row: waiting costs most exactly when the evidence is clearest.
 */
export class Hysteresis {
  private enter: number;
  private leave: number;
  private enterSevere: number;
  private on = false;
  private streak = 0;
  /** Trailing severe observations while inactive. */
  private severeStreak = 0;

  constructor(enterAfter: number, leaveAfter: number, enterAfterSevere = enterAfter) {
    this.enter = this.leave = this.enterSevere = 1;
    this.reconfigure(enterAfter, leaveAfter, enterAfterSevere);
  }

  /**
   * New thresholds, keeping the state and the streaks counted so far: a streak that already
   * reaches a lowered threshold flips the state at the next observation that continues it.
   */
  reconfigure(enterAfter: number, leaveAfter: number, enterAfterSevere = enterAfter): void {
    if (!Number.isInteger(enterAfter) || enterAfter < 1) throw new RangeError(`enterAfter must be a positive integer, got ${enterAfter}`);
    if (!Number.isInteger(leaveAfter) || leaveAfter < 1) throw new RangeError(`leaveAfter must be a positive integer, got ${leaveAfter}`);
    if (!Number.isInteger(enterAfterSevere) || enterAfterSevere < 1) throw new RangeError(`enterAfterSevere must be a positive integer, got ${enterAfterSevere}`);
    this.enter = enterAfter;
    this.leave = leaveAfter;
    this.enterSevere = enterAfterSevere;
  }

  /** Observations in a row that disagree with the state (the count towards a flip). */
  get pendingStreak(): number {
    return this.streak;
  }

  get active(): boolean {
    return this.on;
  }

  /** Active, but its newest observation was good: on its way out unless bad ones come back. */
  get recovering(): boolean {
    return this.on && this.streak > 0;
  }

  /**
   * Records one observation (`severe` counts only when `bad`); true when the state flipped.
   * `regular` false: this observation may not complete the enterAfter run (it still counts towards
   * it), only the severe run may flip the state now.
   */
  update(bad: boolean, severe = false, regular = true): boolean {
    this.severeStreak = !this.on && bad && severe ? this.severeStreak + 1 : 0;
    if (bad === this.on) {
      this.streak = 0;
      return false;
    }
    ++this.streak;
    if (this.on ? this.streak < this.leave : (!regular || this.streak < this.enter) && this.severeStreak < this.enterSevere) return false;
    this.on = bad;
    this.streak = 0;
    this.severeStreak = 0;
    return true;
  }

  /** Sets the state at once (e.g. a failed NIC) and restarts the count; true when the state flipped. */
  force(active: boolean): boolean {
    const flipped = this.on !== active;
    this.on = active;
    this.streak = 0;
    this.severeStreak = 0;
    return flipped;
  }
}
