import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PipemorphConfig } from '../../src/daemon/config/pipemorph-config.type';
import { startDaemon as startInProcess, StartedDaemon } from '../../src/daemon/start-daemon.util';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Each test file that starts daemons uses its own Redis database: daemons started by files that
 * Jest runs in parallel would otherwise act as replicas of one deployment and take each other's jobs.
 */
export function redisUrlFor(db: number): string {
  const url = new URL(REDIS_URL);
  url.pathname = `/${db}`;
  return url.toString();
}

/**
 * `npm test` runs the files that have a database of their own beside the ones on database 0
 * (scripts/run-jest-groups.js, PIPEMORPH_TEST_GROUP=own-db for the former): a daemon of the former
 * on database 0 would take the other group's jobs, and their flushes would drop its keys.
 */
export function assertTestDatabase(redisUrl: string): void {
  // `npm test` runs against a redis-server of its own (scripts/run-jest-groups.js): the caller's Redis is never used.
  const user = process.env.PIPEMORPH_USER_REDIS_URL;
  if (user && sameServer(user, redisUrl)) throw new Error(`a test uses the Redis the suite was started with (${redisUrl}), which may hold a user's data: use REDIS_URL, the suite's own server (scripts/run-jest-groups.js)`);
  if (process.env.PIPEMORPH_TEST_GROUP !== 'own-db') return;
  const db = Number(new URL(redisUrl).pathname.replace(/^\//, '') || 0);
  if (db === 0) throw new Error(`a test of the own-db group uses Redis database 0 (${redisUrl}): give it redisUrlFor(N) (scripts/run-jest-groups.js)`);
}

/** Whether two Redis URLs name the same server (host and port; the database does not matter). */
export function sameServer(a: string, b: string): boolean {
  const x = new URL(a);
  const y = new URL(b);
  const host = (h: string) => (h === 'localhost' ? '127.0.0.1' : h);
  return host(x.hostname) === host(y.hostname) && (x.port || '6379') === (y.port || '6379');
}

/** The shipped defaults with timings shrunk so tests run in seconds. */
export function testConfig(overrides: (c: PipemorphConfig) => void = () => undefined, redisUrl = REDIS_URL): PipemorphConfig {
  const config = JSON.parse(readFileSync(join(__dirname, '../../config/default.json'), 'utf8')) as PipemorphConfig;
  config.redis.url = redisUrl;
  config.http.port = 0;
  config.http.host = '127.0.0.1';
  config.ingest.blockMs = 50;
  config.ingest.claimIdleMs = 500;
  config.jobs.leaseMs = 2000;
  config.jobs.discoveryIntervalMs = 100;
  config.jobs.maintenanceCron = '* * * * * *';
  config.control.minReplanIntervalMs = 0;
  config.handshake.prepareTimeoutMs = 1500;
  config.handshake.retryBackoffMs = 100;
  config.handshake.leadMs = 0;
  config.handshake.minLeadIterations = 3;
  // One round runs the warm-up's code; the production 16 (config/default.json) are for a daemon's
  // first straggler decision, which bench:daemon times, not for tests that start hundreds of daemons.
  config.control.warmUpRounds = 1;
  overrides(config);
  return config;
}

export function startDaemon(config: PipemorphConfig = testConfig()): Promise<StartedDaemon> {
  assertTestDatabase(config.redis.url);
  return startInProcess(config, { logs: Boolean(process.env.PIPEMORPH_TEST_LOGS), shutdownHooks: true });
}
