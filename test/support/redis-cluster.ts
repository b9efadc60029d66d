/**
 * A private Redis Cluster for tests: three masters and one replica each (six redis-servers on free
 * ports, `redis-cli --cluster create`), a node timeout of 1 s so a killed master's replica is
 * promoted within seconds.
 */
import Redis, { Cluster } from 'ioredis';
import { execFileSync } from 'node:child_process';
import { jobKeys } from '../../src/protocol/redis-keys';
import { waitFor } from './fake-job';
import { RedisServer } from './redis-server';

async function clusterOk(port: number): Promise<boolean> {
  const client = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    return /cluster_state:ok/.test((await client.cluster('INFO')) as string);
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

async function replicaOnline(port: number): Promise<boolean> {
  const client = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  try {
    return /slave0:.*state=online/.test(await client.info('replication'));
  } finally {
    client.disconnect();
  }
}

export class RedisCluster {
  private constructor(readonly servers: RedisServer[]) {}

  static async start(): Promise<RedisCluster> {
    const servers: RedisServer[] = [];
    for (let k = 0; k < 6; k++) servers.push(await RedisServer.start({ extraArgs: ['--cluster-enabled', 'yes', '--cluster-node-timeout', '1000', '--cluster-config-file', 'nodes.conf', '--repl-diskless-sync-delay', '0'] }));
    // The first three become masters, each later one a replica of one of them.
    execFileSync('redis-cli', ['--cluster', 'create', ...servers.map((s) => `127.0.0.1:${s.port}`), '--cluster-replicas', '1', '--cluster-yes'], { stdio: 'ignore' });
    for (const s of servers) await waitFor(`cluster state ok on ${s.port}`, () => clusterOk(s.port), 20000, 100);
    // Replicas in sync before any test writes: a replica still in its first sync would be promoted empty.
    for (const s of servers.slice(0, 3)) await waitFor(`a replica of ${s.port} online`, () => replicaOnline(s.port), 20000, 100);
    return new RedisCluster(servers);
  }

  /** Seed nodes as `redis.cluster.nodes` takes them. */
  nodes(): string[] {
    return this.servers.slice(0, 3).map((s) => `127.0.0.1:${s.port}`);
  }

  client(): Cluster {
    const client = new Cluster(this.servers.slice(0, 3).map((s) => ({ host: '127.0.0.1', port: s.port })), { redisOptions: { maxRetriesPerRequest: 20 }, retryDelayOnClusterDown: 200, retryDelayOnFailover: 200 });
    client.on('error', () => undefined); // a killed node: expected, commands retry
    return client;
  }

  /** The running server that is master of `slot`, from CLUSTER SLOTS on a live node. */
  async masterOf(slot: number): Promise<RedisServer> {
    const client = new Redis((await this.live()).port, '127.0.0.1');
    const ranges = (await client.cluster('SLOTS')) as unknown as Array<[number, number, [string, number]]>;
    client.disconnect();
    const range = ranges.find(([from, to]) => slot >= from && slot <= to);
    if (!range) throw new Error(`slot ${slot} is not served`);
    return this.servers.find((s) => s.port === range[2][1])!;
  }

  /** The master holding a job's keys (all in the slot of its hash tag). */
  async masterOfJob(jobId: string): Promise<RedisServer> {
    const client = new Redis((await this.live()).port, '127.0.0.1');
    const slot = Number(await client.cluster('KEYSLOT', jobKeys(jobId).reports));
    client.disconnect();
    return this.masterOf(slot);
  }

  /** `count` job ids (`prefix-k`) whose keys land on `count` different masters. */
  async jobIdsOnDistinctMasters(prefix: string, count: number): Promise<string[]> {
    const ids: string[] = [];
    const masters = new Set<number>();
    for (let k = 0; ids.length < count && k < 500; k++) {
      const jobId = `${prefix}-${k}`;
      const master = (await this.masterOfJob(jobId)).port;
      if (masters.has(master)) continue;
      masters.add(master);
      ids.push(jobId);
    }
    return ids;
  }

  /**
   * Kills (SIGKILL) the master of `jobId`'s slot and waits until its replica serves the slot:
   * automatic failover after the node timeout, forced with CLUSTER FAILOVER TAKEOVER if the vote
   * has not happened 3 s after the kill. Returns the promoted replica.
   */
  async killMasterOf(jobId: string): Promise<RedisServer> {
    const master = await this.masterOfJob(jobId);
    const replica = await this.replicaOf(master);
    await master.kill();
    const killedAt = Date.now();
    await waitFor('the replica promoted', async () => {
      if ((await this.masterOfJob(jobId).catch(() => master)) === replica) return true;
      if (Date.now() - killedAt > 3000) {
        const client = new Redis(replica.port, '127.0.0.1');
        await client.cluster('FAILOVER', 'TAKEOVER').catch(() => undefined);
        client.disconnect();
      }
      return false;
    }, 20000, 100);
    return replica;
  }

  async stop(): Promise<void> {
    for (const s of this.servers) await s.stop();
  }

  private async replicaOf(master: RedisServer): Promise<RedisServer> {
    const client = new Redis(master.port, '127.0.0.1');
    const lines = ((await client.cluster('NODES')) as string).split('\n').map((line) => line.split(' '));
    client.disconnect();
    const masterId = lines.find((f) => f[1]?.startsWith(`127.0.0.1:${master.port}@`))![0];
    const replica = lines.find((f) => f[2]?.includes('slave') && f[3] === masterId)!;
    const port = Number(replica[1].split('@')[0].split(':')[1]);
    return this.servers.find((s) => s.port === port)!;
  }

  /** A server that is running (kill() clears its pid). */
  private async live(): Promise<RedisServer> {
    const server = this.servers.find((s) => s.pid !== undefined);
    if (!server) throw new Error('no node of the cluster is running');
    return server;
  }
}
