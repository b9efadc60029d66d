import { clusterMisconfiguration } from './redis-mode.util';

const plain = { redis: { url: 'redis://10.0.0.5:6379', cluster: { nodes: [] as string[] }, sentinels: [] as string[] } } as never;

describe('clusterMisconfiguration', () => {
  it('says in one line that REDIS_URL names a Cluster node and what to set', () => {
    const line = clusterMisconfiguration('# Cluster\r\ncluster_enabled:1\r\n', plain);
    expect(line).toMatch(/^redis\.url \(10\.0\.0\.5:6379\) is a node of a Redis Cluster .*set REDIS_CLUSTER_NODES=host:port,host:port/);
    expect(line).not.toContain('\n');
  });

  it('twin: a plain Redis, or a daemon configured for the Cluster or Sentinel, is accepted', () => {
    expect(clusterMisconfiguration('# Cluster\r\ncluster_enabled:0\r\n', plain)).toBeNull();
    const configured = { redis: { url: 'redis://10.0.0.5:6379', cluster: { nodes: ['10.0.0.5:6379'] }, sentinels: [] } } as never;
    expect(clusterMisconfiguration('cluster_enabled:1\r\n', configured)).toBeNull();
  });
});
