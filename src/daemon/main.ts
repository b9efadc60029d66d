import 'reflect-metadata';
// Tracing starts before the application is built.
import { startTracing } from './tracing/start-tracing';
const tracing = startTracing();
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule, DAEMON_APP_OPTIONS } from './app.module';
import { ConfigError, loadConfig } from './config/load-config';
import { probeRedisMode } from './redis/redis-mode.util';
import { DAEMON_NODE_FLAGS, missingNodeFlags } from './runtime/node-flags';

/** Starts the daemon; a bad configuration stops start-up with one clear line (exit 2). */
export async function bootstrap(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`pipemorph: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  // A Cluster node given as REDIS_URL can never work: said at once, as a bad configuration is.
  const misconfigured = await probeRedisMode(config);
  if (misconfigured) {
    process.stderr.write(`pipemorph: ${misconfigured}\n`);
    process.exit(2);
  }
  const app = await NestFactory.create(AppModule.forRoot(config), { ...DAEMON_APP_OPTIONS, logger: ['log', 'warn', 'error'] });
  app.enableShutdownHooks();
  const missing = missingNodeFlags();
  if (missing.length > 0) {
    Logger.warn(`started without ${missing.join(' ')}: the first straggler decisions after an idle spell may run unoptimised code; start with node ${DAEMON_NODE_FLAGS.join(' ')} dist/src/daemon/main.js`, 'Bootstrap');
  }
  if (tracing) process.once('beforeExit', () => void tracing.shutdown());
  await app.listen(config.http.port, config.http.host);
}

if (require.main === module) void bootstrap();
