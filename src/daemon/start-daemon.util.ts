import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Clock } from '../core/clock/clock.type';
import { AppModule, DAEMON_APP_OPTIONS } from './app.module';
import { PipemorphConfig } from './config/pipemorph-config.type';

export interface StartedDaemon {
  app: INestApplication;
  /** Base URL of its HTTP API (GET /jobs, /metrics, ...). */
  url: string;
}

/**
 * The daemon inside this process, listening on `config.http` (port 0: any free port), for tests,
 * benches and the demo: the one way they start it (src/daemon/main.ts is the production entry).
 * They then talk to it as any client does, through Redis and this URL. `clock`: the system's unless
 * a caller moves time itself (src/replay/live-scenario.ts replays a job on its own clock).
 */
export async function startDaemon(config: PipemorphConfig, options: { logs?: boolean; shutdownHooks?: boolean; clock?: Clock } = {}): Promise<StartedDaemon> {
  const app = await NestFactory.create(AppModule.forRoot(config, options.clock), { ...DAEMON_APP_OPTIONS, logger: options.logs ? ['log', 'warn', 'error'] : false });
  // Off for the demo, which handles Ctrl-C itself (finishes the iteration in hand).
  if (options.shutdownHooks) app.enableShutdownHooks();
  await app.listen(config.http.port, config.http.host);
  const address = app.getHttpServer().address() as { port: number };
  return { app, url: `http://127.0.0.1:${address.port}` };
}
