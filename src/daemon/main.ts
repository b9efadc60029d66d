import 'reflect-metadata';
// Tracing starts before the application is built.
import { startTracing } from './tracing/start-tracing';
const tracing = startTracing();
import { NestFactory } from '@nestjs/core';
import { AppModule, DAEMON_APP_OPTIONS } from './app.module';
import { ConfigError, loadConfig } from './config/load-config';

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
  const app = await NestFactory.create(AppModule.forRoot(config), { ...DAEMON_APP_OPTIONS, logger: ['log', 'warn', 'error'] });
  app.enableShutdownHooks();
  if (tracing) process.once('beforeExit', () => void tracing.shutdown());
  await app.listen(config.http.port, config.http.host);
}

if (require.main === module) void bootstrap();
