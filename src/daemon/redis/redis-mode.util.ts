import Redis from 'ioredis';
import { PipemorphConfig } from '../config/pipemorph-config.type';

/**
 * What the daemon must be told when `redis.url` names one node of a Redis Cluster (its `INFO
 * cluster` says `cluster_enabled:1`) and no cluster nodes are configured: one line naming the key to
 * set. Null when the server is a plain Redis, or when the daemon is configured for a Cluster or
 * Sentinel. With a single node, commands on keys of other nodes' slots answer MOVED and multi-key
 * transactions EXECABORT: the daemon would retry for ever and lead no job (issue 32, item 2).
 */
export function clusterMisconfiguration(infoCluster: string, config: Pick<PipemorphConfig, 'redis'>): string | null {
  if (configuredForCluster(config)) return null;
  if (!/^cluster_enabled:1\s*$/m.test(infoCluster)) return null;
  return misconfigurationLine(config, 'cluster_enabled:1');
}

/**
 * The same line from a reply the daemon got at run time: a MOVED, ASK or CROSSSLOT error, or an
 * EXECABORT whose queued commands failed so (ioredis keeps them as `previousErrors`). Such replies
 * come only from a Cluster node; null for any other error, or when the daemon is configured for a
 * Cluster (where ioredis follows MOVED itself) or Sentinel.
 */
export function clusterReplyMisconfiguration(error: string | { message: string; previousErrors?: ReadonlyArray<{ message: string }> }, config: Pick<PipemorphConfig, 'redis'>): string | null {
  if (configuredForCluster(config)) return null;
  const messages = typeof error === 'string' ? [error] : [error.message, ...(error.previousErrors ?? []).map((e) => e.message)];
  const reply = messages.map((m) => /^(MOVED|ASK|CROSSSLOT)\b/.exec(m)?.[1]).find(Boolean);
  return reply ? misconfigurationLine(config, `it answered ${reply}`) : null;
}

function configuredForCluster(config: Pick<PipemorphConfig, 'redis'>): boolean {
  return (config.redis.cluster?.nodes ?? []).length > 0 || (config.redis.sentinels ?? []).length > 0;
}

function misconfigurationLine(config: Pick<PipemorphConfig, 'redis'>, evidence: string): string {
  return (
    `redis.url (${new URL(config.redis.url).host}) is a node of a Redis Cluster (${evidence}), which one connection cannot use: ` +
    `set REDIS_CLUSTER_NODES=host:port,host:port,... (redis.cluster.nodes) to the cluster's masters; REDIS_URL then only gives the scheme and credentials`
  );
}

/**
 * Asks the server at `redis.url` whether it is a Cluster node (INFO cluster), with a short timeout;
 * null when it is not, or when it does not answer (the daemon starts and retries as for any outage).
 */
export async function probeRedisMode(config: Pick<PipemorphConfig, 'redis'>, timeoutMs = 3000): Promise<string | null> {
  if (configuredForCluster(config)) return null;
  const client = new Redis(config.redis.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: timeoutMs, enableOfflineQueue: false });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const info = await client.info('cluster');
    return clusterMisconfiguration(info, config);
  } catch {
    return null;
  } finally {
    client.disconnect();
  }
}
