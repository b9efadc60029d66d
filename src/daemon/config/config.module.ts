import { DynamicModule, Global, Module } from '@nestjs/common';
import { loadConfig } from './load-config';
import { PIPEMORPH_CONFIG, PipemorphConfig } from './pipemorph-config.type';

/** Provides the configuration validated once at start-up; tests pass their own. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: PipemorphConfig = loadConfig()): DynamicModule {
    return { module: ConfigModule, providers: [{ provide: PIPEMORPH_CONFIG, useValue: config }], exports: [PIPEMORPH_CONFIG] };
  }
}
