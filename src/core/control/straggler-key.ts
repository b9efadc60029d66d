/**
 * The names of stragglers (StragglerHistory's keys, the decision log's evidence, the fleet's): a
 * pipeline link "p:<dp>:<link>", a directed data-parallel link "d:<from>><to>", a rank's compute
 * "c:<rank>". One file, so that the fleet and the detectors name a straggler as the gate does
 * without importing the gate.
 */
export function pipelineKey(dp: number, link: number): string {
  return `p:${dp}:${link}`;
}

export function dataParallelKey(fromRank: number, toRank: number): string {
  return `d:${fromRank}>${toRank}`;
}

export function computeKey(rank: number): string {
  return `c:${rank}`;
}

/** What a straggler key names (the inverse of pipelineKey, dataParallelKey and computeKey); null for any other string. */
export type StragglerKeyParts = { kind: 'pipeline'; dp: number; link: number } | { kind: 'dataParallel'; fromRank: number; toRank: number } | { kind: 'compute'; rank: number };

export function parseStragglerKey(key: string): StragglerKeyParts | null {
  let m = /^p:(\d+):(\d+)$/.exec(key);
  if (m) return { kind: 'pipeline', dp: Number(m[1]), link: Number(m[2]) };
  m = /^d:(\d+)>(\d+)$/.exec(key);
  if (m) return { kind: 'dataParallel', fromRank: Number(m[1]), toRank: Number(m[2]) };
  m = /^c:(\d+)$/.exec(key);
  return m ? { kind: 'compute', rank: Number(m[1]) } : null;
}
