/** Nest injection token of the daemon's Clock (core/clock/clock.type.ts). */
export const CLOCK = Symbol('CLOCK');
