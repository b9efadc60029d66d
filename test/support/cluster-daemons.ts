/**
 * Daemon processes on a private Redis Cluster with the shipped settings (config/default.json), for
 * the benches that run several replicas on one (bench:scale-out, bench:chaos-scale).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PipemorphConfig } from '../../src/daemon/config/pipemorph-config.type';
import { DaemonProcess, DAEMON_MAIN } from './daemon-process';
import { RedisCluster } from './redis-cluster';

/** The shipped configuration pointed at `cluster` (redis.cluster.nodes), on a free HTTP port. */
export function clusterConfig(cluster: RedisCluster): PipemorphConfig {
  // The repository's root is three folders above dist/src/daemon/main.js.
  const config = JSON.parse(readFileSync(join(DAEMON_MAIN, '../../../../config/default.json'), 'utf8')) as PipemorphConfig;
  config.redis.url = `redis://${cluster.nodes()[0]}`;
  config.redis.cluster = { nodes: cluster.nodes() };
  config.http.port = 0;
  return config;
}

/** A daemon process with `config`, once its /health/ready answers 200 (its output in the error otherwise). */
export async function startReadyDaemon(config: PipemorphConfig, timeoutMs: number): Promise<DaemonProcess> {
  const daemon = await DaemonProcess.start(config);
  for (const deadline = Date.now() + timeoutMs; (await daemon.status('/health/ready')) !== 200; await new Promise((resolve) => setTimeout(resolve, 100))) {
    if (Date.now() > deadline) {
      await daemon.stop('SIGKILL');
      throw new Error(`a replica did not get ready within ${timeoutMs} ms:\n${daemon.output}`);
    }
  }
  return daemon;
}

/** A daemon replica a bench started, named r1, r2, ... in start order. */
export interface Replica {
  name: string;
  daemon: DaemonProcess;
  /** Frozen by SIGSTOP (bench:chaos-scale): does not answer, does not lead. */
  frozen: boolean;
}

/**
 * The replicas a bench runs (`replicas`: those it has not taken out itself). Each started one is
 * killed by the bench's `cleanups` if the bench fails half-way: no daemon outlives it.
 */
export class ReplicaSet {
  readonly replicas: Replica[] = [];
  private started = 0;

  constructor(
    private readonly config: PipemorphConfig,
    private readonly readyTimeoutMs: number,
    private readonly cleanups: Array<() => Promise<unknown>>,
  ) {}

  async start(settings: PipemorphConfig = this.config): Promise<Replica> {
    const daemon = await startReadyDaemon(settings, this.readyTimeoutMs);
    this.cleanups.push(() => daemon.stop('SIGKILL'));
    const replica = { name: `r${++this.started}`, daemon, frozen: false };
    this.replicas.push(replica);
    return replica;
  }
}
