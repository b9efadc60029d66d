/**
 * The network between the nodes of an emulated job, beyond the per-pipeline-link DelayModel: extra
 * one-way delay between two nodes (ranks; tp = 1, one rank per node) at an iteration. Ranks keep
 * their numbers when a job is re-mapped, so a slow pair of nodes stays slow whatever slots they hold.
 */
export interface Fabric {
  readonly name: string;
  /** Failure/network domain of `node` (rack, leaf switch, datacenter), or undefined when unknown. */
  locality(node: number): string | undefined;
  /** Extra one-way delay between nodes `a` and `b` during iteration `iteration`, ms (>= 0, symmetric, 0 for a === b). */
  pairExtraMs(a: number, b: number, iteration: number): number;
}

/** When an extra delay is in force: iterations `from` (default 0) up to, not including, `until` (default: forever). */
export interface SlowWindow {
  extraMs: number;
  from?: number;
  until?: number;
}

/** A slow link between two localities (an inter-rack uplink, a cross-datacenter link): slows every node pair across them. */
export interface LocalitySlowLink extends SlowWindow {
  between: readonly [string, string];
}

/** A slow link between two individual nodes (a degraded NIC or cable). */
export interface NodePairSlowLink extends SlowWindow {
  nodes: readonly [number, number];
}
