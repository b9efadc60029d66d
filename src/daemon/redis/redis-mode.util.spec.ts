import { clusterMisconfiguration, clusterReplyMisconfiguration } from './redis-mode.util';

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

describe('clusterReplyMisconfiguration', () => {
  it('says the same line from a MOVED or CROSSSLOT reply, or an EXECABORT whose queued commands were MOVED', () => {
    expect(clusterReplyMisconfiguration('MOVED 3999 10.0.0.6:6379', plain)).toMatch(/^redis\.url \(10\.0\.0\.5:6379\) is a node of a Redis Cluster \(it answered MOVED\).*set REDIS_CLUSTER_NODES=/);
    expect(clusterReplyMisconfiguration(new Error("CROSSSLOT Keys in request don't hash to the same slot"), plain)).toMatch(/answered CROSSSLOT/);
    const execAbort = Object.assign(new Error('EXECABORT Transaction discarded because of previous errors.'), { previousErrors: [new Error('MOVED 12 10.0.0.7:6379')] });
    expect(clusterReplyMisconfiguration(execAbort, plain)).toMatch(/answered MOVED/);
  });

  it('twin: other errors, an EXECABORT of other causes, or a daemon configured for the Cluster are not taken for it', () => {
    expect(clusterReplyMisconfiguration('connect ECONNREFUSED 10.0.0.5:6379', plain)).toBeNull();
    expect(clusterReplyMisconfiguration('NOGROUP No such key', plain)).toBeNull();
    const execAbort = Object.assign(new Error('EXECABORT Transaction discarded because of previous errors.'), { previousErrors: [new Error('OOM command not allowed')] });
    expect(clusterReplyMisconfiguration(execAbort, plain)).toBeNull();
    const configured = { redis: { url: 'redis://10.0.0.5:6379', cluster: { nodes: ['10.0.0.5:6379'] }, sentinels: [] } } as never;
    expect(clusterReplyMisconfiguration('MOVED 3999 10.0.0.6:6379', configured)).toBeNull();
  });
});
