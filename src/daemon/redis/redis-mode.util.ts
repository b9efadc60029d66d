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
  if ((config.redis.cluster?.nodes ?? []).length > 0 || (config.redis.sentinels ?? []).length > 0) return null;
  if (!/^cluster_enabled:1\s*$/m.test(infoCluster)) return null;
  const url = new URL(config.redis.url);
  return (
    `redis.url (${url.host}) is a node of a Redis Cluster (cluster_enabled:1), which one connection cannot use: ` +
    `set REDIS_CLUSTER_NODES=host:port,host:port,... (redis.cluster.nodes) to the cluster's masters; REDIS_URL then only gives the scheme and credentials`
  );
}

/**
 * Asks the server at `redis.url` whether it is a Cluster node (INFO cluster), with a short timeout;
 * null when it is not, or when it does not answer (the daemon starts and retries as for any outage).
 */
export async function probeRedisMode(config: Pick<PipemorphConfig, 'redis'>, timeoutMs = 3000): Promise<string | null> {
  if ((config.redis.cluster?.nodes ?? []).length > 0 || (config.redis.sentinels ?? []).length > 0) return null;
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
