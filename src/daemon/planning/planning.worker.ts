/**
 * A planning worker thread: decides control for one job at a time (decideControl, the pure core)
 * so that a slow plan (a search or an MILP solve of tens to hundreds of ms) never blocks the
 * daemon's event loop, where ingest, leases, handshakes and HTTP run.
 */
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { decideControl } from '../../core/control/job-controller';
import { usesMilpSolver } from '../../core/control/pipeline-plans';
import { DEFAULT_CONTROL_CONFIG } from '../../core/control/control-config.type';
import { warmUpDecisions } from '../../core/control/warm-up';
import { MilpSolver } from '../../core/planner/optimal-planner';
import { loadMilpSolver } from './load-milp-solver.util';
import { PlanningRequest, PlanningResponse, PlanningWorkerData } from './planning-message.type';

let solver: Promise<MilpSolver> | null = null;

async function decide(request: PlanningRequest): Promise<PlanningResponse> {
  try {
    // HiGHS is loaded once, on the first request that can use it.
    const milp = usesMilpSolver(request.config) ? await (solver ??= loadMilpSolver()) : undefined;
    return { id: request.id, outcome: decideControl(request.input, request.config, milp) };
  } catch (error) {
    return { id: request.id, error: (error as Error)?.stack ?? String(error) };
  }
}

if (!parentPort) throw new Error('planning.worker must run as a worker thread');
const port = parentPort;
port.on('message', (request: PlanningRequest) => {
  void decide(request).then((response) => port.postMessage(response));
});
// Ready once loaded (HiGHS too when the daemon's policy uses it) and warmed up: the pool times
// decisions from here, so a cold start (module loading, WebAssembly compilation, the first decisions
// in unoptimised code) is not counted as planning.
const data = workerData as PlanningWorkerData | undefined;
if (data?.nice) lowerOwnPriority(data.nice);
const loading: Promise<unknown> = (data?.preloadMilp ? (solver ??= loadMilpSolver()) : Promise.resolve()).then(() => {
  // Alg. 2: what a search or an exact plan starts from, and the pricing every planner shares.
  warmUpDecisions({ ...DEFAULT_CONTROL_CONFIG, planner: 'adaptive' }, data?.warmUpRounds ?? 0);
});
void loading.then(
  () => port.postMessage({ ready: true }),
  (error: Error) => port.postMessage({ ready: false, error: error?.stack ?? String(error) }),
);

/**
 * On one core (the production overlay requests one) a plan of hundreds of ms would otherwise take
 * turns with the event loop, and a report, a lease renewal or an ack waits behind it; niced, the
 * thread gets the CPU the event loop leaves. Linux's setpriority applies to the thread whose id it
 * is given, and /proc/thread-self names this one; elsewhere the worker runs as started.
 */
function lowerOwnPriority(nice: number): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    // Relative to the event loop's (the thread starts at it), as `nice` does: a daemon started niced stays below its loop.
    setPriority(tid, Math.min(19, getPriority(tid) + nice));
  } catch {
    // Not Linux, or no /proc: planning still works, at the event loop's priority.
  }
}
