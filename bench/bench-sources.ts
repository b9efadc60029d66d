/**
 * What each results file measures: the bench's entry files, whose relative imports are followed
 * (src/support/import-graph.ts importClosure, worker threads started by path included), plus what
 * the run reads or starts that no import names (data, daemons started as processes, the Python
 * ranks). A results file is stale when a commit after the one it was measured at changed any of
 * them (`npm run bench:stale`). Every file in bench/results has an entry; test/readme-bench.test.ts
 * holds that.
 */
import { importClosure } from '../src/support/import-graph';

export interface BenchSources {
  /** Files whose imports are followed. */
  entries: string[];
  /** Paths (files or folders) read or run without an import. */
  also: string[];
}

const CONFIG = 'config/default.json';
/** The daemon as a process (bench:scale, the chaos suite and the real-rank benches start it so). */
const DAEMON_PROCESS = 'src/daemon/main.ts';
const PYTHON = 'clients/python';

export const BENCH_SOURCES: Record<string, BenchSources> = {
  chaos: { entries: ['test/chaos/chaos.chaos.ts', DAEMON_PROCESS], also: [CONFIG] },
  'chaos-scale': { entries: ['bench/chaos-scale.bench.ts', DAEMON_PROCESS], also: [CONFIG] },
  daemon: { entries: ['bench/daemon.bench.ts', DAEMON_PROCESS], also: [CONFIG] },
  demo: { entries: ['bench/demo.bench.ts', 'src/demo/demo.ts'], also: [CONFIG, 'bench/profiles'] },
  fleet: { entries: ['bench/fleet.bench.ts'], also: [CONFIG] },
  detection: { entries: ['bench/detection.bench.ts'], also: [CONFIG, 'bench/traces'] },
  'detection-real': { entries: ['bench/detection-real.bench.ts', DAEMON_PROCESS], also: [CONFIG, PYTHON] },
  e2e: { entries: ['bench/e2e.bench.ts'], also: [CONFIG, 'bench/traces', 'bench/profiles'] },
  engine: { entries: ['bench/engine.bench.ts'], also: ['bench/profiles'] },
  'optimal-line': { entries: ['bench/optimal-line.bench.ts'], also: [] },
  'outside-sweep': { entries: ['bench/outside-sweep.bench.ts'], also: [CONFIG] },
  // Its recordings are replayed by the CLI as a process.
  'independent-sweep': { entries: ['bench/independent-sweep.bench.ts', 'src/cli/main.ts'], also: [CONFIG] },
  'oracle-gap': { entries: ['bench/oracle-gap.bench.ts'], also: [CONFIG, 'bench/traces'] },
  prediction: { entries: ['bench/prediction.bench.ts', DAEMON_PROCESS], also: [CONFIG, PYTHON] },
  real: { entries: ['bench/real.bench.ts', 'bench/real-torch.ts', 'bench/real-rebalance.ts', DAEMON_PROCESS], also: [CONFIG, PYTHON] },
  rebalance: { entries: ['bench/rebalance.bench.ts'], also: [CONFIG] },
  render: { entries: ['bench/render.bench.ts'], also: ['bench/profiles'] },
  'scale-out': { entries: ['bench/scale-out.bench.ts', DAEMON_PROCESS], also: [CONFIG] },
  scale: { entries: ['bench/scale.bench.ts', DAEMON_PROCESS], also: [CONFIG] },
  soak: { entries: ['bench/soak.bench.ts', DAEMON_PROCESS], also: [CONFIG] },
  topology: { entries: ['bench/topology.bench.ts'], also: [] },
};

/** The paths a results file measures, relative to the repository's root. */
export function sourcesOf(root: string, name: string): string[] | null {
  const declared = BENCH_SOURCES[name];
  if (!declared) return null;
  return [...importClosure(root, declared.entries, { workers: true }), ...declared.also];
}
