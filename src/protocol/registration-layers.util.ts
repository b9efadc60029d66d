import { ProtocolError } from './protocol-error';
import { Registration } from './protocol-v1.type';

/** Every per-layer array of `layers`, in the order problems are named. */
const PER_LAYER = ['fMs', 'bMs', 'wMs', 'stateBytes', 'activationBytes'] as const;

/**
 * What the schema cannot say about a registration's optional `layers` (docs/protocol.md sec. 3.1):
 * every per-layer array lists the same layers, `perStage` has one entry per stage and shares them
 * all out, and every stage holds some work. Throws a ProtocolError naming the first problem, so the
 * registration is copied to `pipemorph:rejected` with it; no `layers`, nothing to check.
 */
export function checkRegistrationLayers(r: Registration): void {
  const layers = r.layers;
  if (!layers) return;
  const count = layers.fMs.length;
  for (const name of PER_LAYER) {
    if (layers[name].length !== count) throw new ProtocolError(`layers.${name} has ${layers[name].length} entries, layers.fMs has ${count}: one per layer`);
  }
  if (layers.perStage.length !== r.stages) throw new ProtocolError(`layers.perStage has ${layers.perStage.length} entries, the job has ${r.stages} stages`);
  const total = layers.perStage.reduce((a, b) => a + b, 0);
  if (total !== count) throw new ProtocolError(`layers.perStage shares out ${total} layers, layers.fMs lists ${count}`);
  let first = 0;
  for (let s = 0; s < r.stages; s++) {
    let work = 0;
    for (let l = first; l < first + layers.perStage[s]; l++) work += layers.fMs[l] + layers.bMs[l] + layers.wMs[l];
    if (!(work > 0)) throw new ProtocolError(`layers: stage ${s} holds layers ${first}-${first + layers.perStage[s] - 1}, whose F, B and W times are all 0`);
    first += layers.perStage[s];
  }
}
