/** Extra one-way delays of pipeline links over (virtual) time, for the emulator. Link i joins stage i and i + 1. */
export interface DelayModel {
  readonly name: string;
  /** Extra one-way delay of pipeline link `link` at virtual time `timeMs` during iteration `iteration`, ms (>= 0). */
  delayMs(link: number, timeMs: number, iteration: number): number;
  /** Whether the GPU-direct path of `link` has failed (NIC failure) at `iteration`: only CPU delegation carries traffic. */
  nicFailed(link: number, iteration: number): boolean;
  /** Iterations the model is meant to run (traces know their length), or undefined. */
  readonly suggestedIterations?: number;
}
