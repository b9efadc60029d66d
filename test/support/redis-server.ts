// The private redis-server lives beside the code so benchmarks can start one too (bench/ is built, test/ is not).
export * from '../../src/support/redis-server';
