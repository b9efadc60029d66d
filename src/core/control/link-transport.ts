import { LinkTransport } from '../pipeline/pipeline-model.type';
import { TransportConfig } from './control-config.type';
import { DelegationPlan, JobControlInput } from './control-input.type';

/**
 * How the ranks of replica `dp` move messages under `delegation`, as the rank runtime does it
 * (docs/protocol.md, sec. 3.2 and 5.4): a link whose two ends both run delegates is served by
 * min(send queues) CPU queues per direction, every other link by `gpuSendsInFlight` GPU-direct
 * sends (head-of-line blocking when they are all in flight), and every op of a delegating rank
 * pays the device-host copy overhead. Predictions made without this assume free, unqueued sends
 * and under-predict a slow GPU-direct link by the time its sends block compute.
 */
export function linkTransportOf(input: JobControlInput, dp: number, delegation: readonly DelegationPlan[], config: TransportConfig): LinkTransport {
  const links = Math.max(0, input.stages - 1);
  const byRank = new Map(delegation.map((d) => [d.rank, d]));
  const rankAt = stageRanks(input, dp);
  const delegateQueues = new Int32Array(links);
  for (let l = 0; l < links; l++) {
    const up = rankAt[l] === undefined ? undefined : byRank.get(rankAt[l]!);
    const down = rankAt[l + 1] === undefined ? undefined : byRank.get(rankAt[l + 1]!);
    if (up && down) delegateQueues[l] = Math.max(1, Math.min(up.sendQueues, down.sendQueues));
  }
  const copyOverhead = Float64Array.from({ length: input.stages }, (_, s) => (rankAt[s] !== undefined && byRank.has(rankAt[s]!) ? config.delegateCopyOverhead : 0));
  return { gpuSlots: new Int32Array(links).fill(config.gpuSendsInFlight), delegateQueues, copyOverhead };
}

/** Rank of each stage of replica `dp`, from the placement when known, else from the measured links' ends. */
function stageRanks(input: JobControlInput, dp: number): (number | undefined)[] {
  const ranks: (number | undefined)[] = new Array(input.stages).fill(undefined);
  const rankAt = input.topology?.rankAt;
  if (rankAt && rankAt.length >= (dp + 1) * input.stages) {
    for (let s = 0; s < input.stages; s++) ranks[s] = rankAt[dp * input.stages + s];
    return ranks;
  }
  for (const view of input.links) {
    if (view.dp !== dp || view.link < 0 || view.link + 1 >= input.stages) continue;
    ranks[view.link] = view.upRank;
    ranks[view.link + 1] = view.downRank;
  }
  return ranks;
}

/** A signature of what `linkTransportOf` depends on, for caching predictions per distinct transport. */
export function transportKey(t: LinkTransport): string {
  return `${t.delegateQueues.join(',')}|${t.copyOverhead.join(',')}`;
}
