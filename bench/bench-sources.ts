/**
 * The sources each results file measures (paths git understands, folders included): a results file
 * is stale when a commit after the one it was measured at changed any of them (`npm run bench:stale`).
 * Every file in bench/results has an entry; test/readme-bench.test.ts holds that.
 */
const CORE = ['src/core', 'config/default.json'];
const DAEMON = [...CORE, 'src/daemon', 'src/protocol'];
const EMULATOR = [...DAEMON, 'src/emulator'];

export const BENCH_SOURCES: Record<string, string[]> = {
  chaos: [...DAEMON, 'test/chaos'],
  daemon: [...DAEMON, 'bench/daemon.bench.ts'],
  demo: [...EMULATOR, 'bench/profiles', 'bench/demo.bench.ts'],
  detection: [...DAEMON, 'src/corpus', 'src/replay', 'bench/detection.bench.ts', 'bench/traces'],
  'detection-real': [...DAEMON, 'clients/python', 'src/real', 'bench/detection-real.bench.ts'],
  e2e: [...EMULATOR, 'bench/e2e.bench.ts'],
  engine: [...CORE, 'bench/engine.bench.ts', 'bench/profiles'],
  'optimal-line': [...CORE, 'src/daemon/planning/load-milp-solver.util.ts', 'bench/optimal-line.bench.ts'],
  'oracle-gap': [...EMULATOR, 'src/corpus', 'src/replay', 'bench/oracle-gap.bench.ts'],
  prediction: [...EMULATOR, 'clients/python', 'src/real', 'bench/prediction.bench.ts'],
  real: [...EMULATOR, 'clients/python', 'src/real', 'bench/real.bench.ts', 'bench/real-torch.ts', 'bench/real-rebalance.ts'],
  rebalance: [...CORE, 'bench/rebalance.bench.ts'],
  render: [...CORE, 'bench/profiles', 'bench/render.bench.ts'],
  'scale-out': [...DAEMON, 'bench/scale-out.bench.ts'],
  scale: [...DAEMON, 'bench/scale.bench.ts'],
  soak: [...EMULATOR, 'bench/soak.bench.ts'],
  topology: [...CORE, 'src/emulator/scenarios.ts', 'bench/profiles', 'bench/topology.bench.ts'],
};
