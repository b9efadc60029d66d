import { Global, Inject, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { readFileSync } from 'node:fs';
import { ConnectionOptions } from 'node:tls';
import { Clock } from '../../core/clock/clock.type';
import { CLOCK } from '../clock/clock.token';
import { PIPEMORPH_CONFIG, PipemorphConfig } from '../config/pipemorph-config.type';
import { JOB_STORE } from '../store/job-store.repository';
import { RedisJobStore } from '../store/redis-job-store';
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

function connect(config: PipemorphConfig, name: string, clock: Clock): Redis {
  // Bounded retries per command, endless reconnects: a Redis restart must not kill the daemon.
  const client = new Redis(config.redis.url, { connectionName: `pipemorph-${name}`, maxRetriesPerRequest: 3, enableOfflineQueue: true, lazyConnect: false, ...tlsOptions(config) });
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
