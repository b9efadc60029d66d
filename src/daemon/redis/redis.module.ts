import { Global, Inject, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import Redis, { Cluster, RedisOptions } from 'ioredis';
import { readFileSync } from 'node:fs';
import { ConnectionOptions } from 'node:tls';
import { Clock } from '../../core/clock/clock.type';
import { CLOCK } from '../clock/clock.token';
import { PIPEMORPH_CONFIG, PipemorphConfig } from '../config/pipemorph-config.type';
import { JOB_STORE } from '../store/job-store.repository';
import { RedisJobStore } from '../store/redis-job-store';
import { clusterMisconfiguration } from './redis-mode.util';
import { redactSecrets } from './redact-secrets.util';

export const REDIS_COMMANDS = Symbol('REDIS_COMMANDS');
export const REDIS_BLOCKING = Symbol('REDIS_BLOCKING');

const logger = new Logger('Redis');
/** At most one logged connection error per connection per interval: a Redis outage must not flood the logs. */
const ERROR_LOG_INTERVAL_MS = 5000;

/** TLS for rediss:// URLs: the CA to trust and, for mutual TLS, the client certificate and key (files read once at start). */
function tlsOptions(config: PipemorphConfig): { tls?: ConnectionOptions } {
  if (!config.redis.url.startsWith('rediss://')) return {};
  const { caFile, certFile, keyFile } = config.redis.tls;
  return {
    tls: {
      ...(caFile ? { ca: readFileSync(caFile) } : {}),
      ...(certFile ? { cert: readFileSync(certFile), key: readFileSync(keyFile) } : {}),
    },
  };
}

/** host:port strings of the config as ioredis node addresses. */
function hostPorts(nodes: readonly string[]): Array<{ host: string; port: number }> {
  return nodes.map((node) => {
    const at = node.lastIndexOf(':');
    return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
  });
}

/**
 * One client for `redis.url`, `redis.cluster.nodes` (Redis Cluster) or `redis.sentinels` (the
 * master Sentinel names). With a cluster or Sentinel, redis.url still gives the scheme (TLS) and
 * the credentials. A Cluster is typed as Redis: the store only sends commands naming one hash slot.
 */
function connect(config: PipemorphConfig, name: string, clock: Clock): Redis {
  // Bounded retries per command, endless reconnects: a Redis restart must not kill the daemon.
  const common: RedisOptions = { connectionName: `pipemorph-${name}`, maxRetriesPerRequest: 3, enableOfflineQueue: true, lazyConnect: false, ...tlsOptions(config) };
  const url = new URL(config.redis.url);
  const credentials = { username: decodeURIComponent(url.username) || undefined, password: decodeURIComponent(url.password) || undefined };
  const clusterNodes = config.redis.cluster?.nodes ?? [];
  const sentinels = config.redis.sentinels ?? [];
  let client: Redis;
  if (clusterNodes.length > 0) {
    // Short slot-refresh timeouts: after a master fails, commands follow its promoted replica quickly.
    client = new Cluster(hostPorts(clusterNodes), { redisOptions: { ...common, ...credentials }, enableOfflineQueue: true, slotsRefreshTimeout: 2000, retryDelayOnClusterDown: 200, retryDelayOnFailover: 200, retryDelayOnTryAgain: 200 }) as unknown as Redis;
  } else if (sentinels.length > 0) {
    client = new Redis({ ...common, ...credentials, sentinels: hostPorts(sentinels), name: config.redis.sentinelName, db: Number(url.pathname.slice(1)) || 0 });
  } else {
    client = new Redis(config.redis.url, common);
    // Start-up refused a Cluster node (main.ts); a connection made again may reach one (a server
    // replaced under the daemon): said once per connection, on the commands connection only.
    if (name === 'commands') {
      client.on('ready', () => {
        client.info('cluster').then((info) => {
          const line = clusterMisconfiguration(info, config);
          if (line) logger.error(line);
        }, () => undefined);
      });
    }
  }
  // Without a listener ioredis prints every error with its command, AUTH arguments included.
  let lastLogged = 0;
  client.on('error', (error: Error) => {
    const now = clock.now();
    if (now - lastLogged < ERROR_LOG_INTERVAL_MS) return;
    lastLogged = now;
    logger.warn(`${name} connection: ${redactSecrets(error.message, config.redis.url)}`);
  });
  return client;
}

@Global()
@Module({
  providers: [
    { provide: REDIS_COMMANDS, inject: [PIPEMORPH_CONFIG, CLOCK], useFactory: (config: PipemorphConfig, clock: Clock) => connect(config, 'commands', clock) },
    { provide: REDIS_BLOCKING, inject: [PIPEMORPH_CONFIG, CLOCK], useFactory: (config: PipemorphConfig, clock: Clock) => connect(config, 'ingest', clock) },
    { provide: JOB_STORE, inject: [REDIS_COMMANDS, REDIS_BLOCKING, CLOCK], useFactory: (commands: Redis, blocking: Redis, clock: Clock) => new RedisJobStore(commands, blocking, clock) },
  ],
  exports: [JOB_STORE, REDIS_COMMANDS],
})
export class RedisModule implements OnApplicationShutdown {
  constructor(@Inject(REDIS_COMMANDS) private readonly commands: Redis, @Inject(REDIS_BLOCKING) private readonly blocking: Redis) {}

  async onApplicationShutdown(): Promise<void> {
    // QUIT waits for a connection that may never come (Redis down, TLS refused): disconnect those at once.
    await Promise.allSettled([this.commands, this.blocking].map((c) => (c.status === 'ready' ? c.quit() : Promise.resolve(c.disconnect()))));
  }
}
