import { DynamicModule, Global, Module } from '@nestjs/common';
import { Clock } from '../../core/clock/clock.type';
import { CLOCK } from './clock.token';
import { SystemClock } from './system-clock';

/** Provides the daemon's one clock: the system's, or one a test moves by hand. */
@Global()
@Module({})
export class ClockModule {
  static forRoot(clock: Clock = new SystemClock()): DynamicModule {
    return { module: ClockModule, providers: [{ provide: CLOCK, useValue: clock }], exports: [CLOCK] };
  }
}
