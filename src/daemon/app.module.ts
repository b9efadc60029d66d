import { DynamicModule, MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { FleetController } from './api/fleet.controller';
import { HealthController } from './api/health.controller';
import { JobsController } from './api/jobs.controller';
import { JobViewController } from './api/job-view.controller';
import { MetricsController } from './api/metrics.controller';
import { OverridesController } from './api/overrides.controller';
import { OverridesService } from './overrides/overrides.service';
import { Clock } from '../core/clock/clock.type';
import { ClockModule } from './clock/clock.module';
import { ConfigModule } from './config/config.module';
import { PipemorphConfig } from './config/pipemorph-config.type';
import { ControlService } from './control/control.service';
import { FleetService } from './fleet/fleet.service';
import { IngestService } from './ingest/ingest.service';
import { JobRegistry } from './jobs/job-registry.service';
import { MetricsService } from './metrics/metrics.service';
import { PlanningPool } from './planning/planning-pool.service';
import { SchedulePublisher } from './publish/schedule-publisher.service';
import { RedisModule } from './redis/redis.module';
import { DaemonLifecycle } from './tasks/daemon-lifecycle.service';
import { MaintenanceService } from './tasks/maintenance.service';

/** Options of NestFactory.create for the daemon's application (see AppModule.forRoot). */
export const DAEMON_APP_OPTIONS = { bodyParser: false } as const;

/** The daemon: Redis in and out, the pure core in the middle, HTTP for health, metrics, inspection and the operator's overrides. */
@Module({})
export class AppModule implements NestModule {
  /** No X-Powered-By header: the API does not advertise its framework (Express sets it before any middleware). */
  configure(consumer: MiddlewareConsumer): void {
    consumer
      .apply((_req: unknown, res: { removeHeader(name: string): void }, next: () => void) => {
        res.removeHeader('X-Powered-By');
        next();
      })
      .forRoutes('*');
  }

  /**
   * `clock`: the system's unless a test moves time by hand. Create the application with
   * `bodyParser: false` (DAEMON_APP_OPTIONS): the one endpoint that takes a body reads it itself,
   * after checking the operator token, so an unauthorized request is refused before it is parsed.
   */
  static forRoot(config?: PipemorphConfig, clock?: Clock): DynamicModule {
    return {
      module: AppModule,
      imports: [ConfigModule.forRoot(config), ClockModule.forRoot(clock), RedisModule],
      controllers: [HealthController, MetricsController, JobsController, JobViewController, OverridesController, FleetController],
      providers: [MetricsService, PlanningPool, SchedulePublisher, OverridesService, JobRegistry, ControlService, IngestService, MaintenanceService, FleetService, DaemonLifecycle],
    };
  }
}
