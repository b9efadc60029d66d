import { LayerMove } from './layer-move.type';

/** The runs of layers whose stage differs between split `from` and split `to` (layers per stage), with their state bytes. */
export function layerMoves(from: readonly number[], to: readonly number[], stateBytes: readonly number[]): LayerMove[] {
  const stageOf = (split: readonly number[]) => split.flatMap((n, s) => new Array<number>(n).fill(s));
  const a = stageOf(from);
  const b = stageOf(to);
  const moves: LayerMove[] = [];
  for (let l = 0; l < a.length; l++) {
    if (a[l] === b[l]) continue;
    const last = moves[moves.length - 1];
    if (last && last.lastLayer === l - 1 && last.fromStage === a[l] && last.toStage === b[l]) {
      last.lastLayer = l;
      last.bytes += stateBytes[l];
    } else moves.push({ firstLayer: l, lastLayer: l, fromStage: a[l], toStage: b[l], bytes: stateBytes[l] });
  }
  return moves;
}
