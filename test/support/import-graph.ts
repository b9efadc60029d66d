// The import graph lives beside the code so bench:stale can follow a bench's imports too.
export * from '../../src/support/import-graph';
