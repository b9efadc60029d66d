/**
 * The planning pool with real worker threads (the compiled worker in dist: npm test builds first):
 * decisions equal the pure core's, a worker that dies or hangs fails only its own decision and
 * is replaced, and the optimal policy is used exactly for jobs small enough.
 */
import defaults from '../config/default.json';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ControlConfig, DEFAULT_CONTROL_CONFIG } from '../src/core/control/control-config.type';
import { JobControlInput } from '../src/core/control/control-input.type';
import { decideControl } from '../src/core/control/job-controller';
import { initialPipelines } from '../src/core/control/pipeline-plans';
import { PipemorphConfig } from '../src/daemon/config/pipemorph-config.type';
import { MetricsService } from '../src/daemon/metrics/metrics.service';
import { PlanningError, PlanningPool, planningWorkerPath, quickDecision } from '../src/daemon/planning/planning-pool.service';

/** S stages, N microbatches, one replica, link 1 slower by `extraMs`, running the initial plan. */
function straggling(S: number, N: number, extraMs = 60): JobControlInput {
  const base: JobControlInput = {
    stages: S,
    microbatches: N,
    dpSize: 1,
    fMs: Array.from({ length: S }, (_, i) => 8 + i),
    bMs: Array.from({ length: S }, (_, i) => 12 - i),
    wMs: new Array<number>(S).fill(7),
    deviceCaps: new Array<number>(S).fill(S),
    hostCaps: new Array<number>(S).fill(N),
    links: Array.from({ length: S - 1 }, (_, l) => ({ dp: 0, link: l, upRank: l, downRank: l + 1, baselineMs: 0.5, extraMs: l === 1 ? extraMs : 0, straggler: l === 1, nicFailure: false })),
    current: null,
  };
  return { ...base, current: { pipelines: initialPipelines(base), delegation: [] } };
}

function pool(overrides: Partial<PipemorphConfig['control']> = {}): { pool: PlanningPool; metrics: MetricsService } {
  const config = structuredClone(defaults) as PipemorphConfig;
  config.control.inlinePlanMaxCells = 0; // every decision on a worker, unless a test says otherwise
  Object.assign(config.control, overrides);
  const metrics = new MetricsService();
  return { pool: new PlanningPool(config, metrics), metrics };
}

/** A worker script that starts like the real one (ready) and does `behaviour` with every request. */
function fakeWorker(behaviour: 'exit' | 'hang'): string {
  const path = join(mkdtempSync(join(tmpdir(), 'pipemorph-worker-')), `${behaviour}.js`);
  const body = behaviour === 'exit' ? 'process.exit(3)' : '/* never answers */';
  writeFileSync(path, `const { parentPort } = require('node:worker_threads');\nparentPort.on('message', () => { ${body} });\nparentPort.postMessage({ ready: true });\n`);
  return path;
}

/** The real worker after a start-up of `ms` (a cold machine: module loading, WebAssembly compilation). */
function slowStartingWorker(ms: number): string {
  const path = join(mkdtempSync(join(tmpdir(), 'pipemorph-worker-')), 'slow-start.js');
  writeFileSync(path, `const until = Date.now() + ${ms};\nwhile (Date.now() < until);\nrequire(${JSON.stringify(planningWorkerPath())});\n`);
  return path;
}

/** Schedules come back as the worker realm's typed arrays: compared as plain data. */
function plain<T>(value: T): unknown {
  return JSON.parse(JSON.stringify(value, (_key, v: unknown) => (ArrayBuffer.isView(v) ? Array.from(v as Int32Array) : v)));
}

async function failures(metrics: MetricsService, reason: string): Promise<number> {
  const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === 'pipemorph_planning_failures_total');
  return ((metric?.values ?? []) as Array<{ value: number; labels: Record<string, string> }>).filter((v) => v.labels.reason === reason).reduce((a, v) => a + v.value, 0);
}

/** This process's threads and their niceness (Linux /proc: the 19th field of a task's stat). */
function threadNiceness(): Map<number, number> {
  const nice = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      nice.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return nice;
}

/** Niceness of the threads a pool started to make one decision (its worker). */
async function workerNiceness(nice: number): Promise<number[]> {
  const before = threadNiceness();
  const { pool: p } = pool({ planningWorkerNice: nice });
  try {
    await p.decide(straggling(4, 8), DEFAULT_CONTROL_CONFIG);
    return [...threadNiceness()].filter(([tid]) => !before.has(tid)).map(([, n]) => n);
  } finally {
    await p.onApplicationShutdown();
  }
}

const search: ControlConfig = { ...DEFAULT_CONTROL_CONFIG, planner: 'search', searchBudgetMs: 60000, searchEvaluations: 150 };

describe('PlanningPool (worker threads)', () => {
  it('decides on a worker exactly as the pure core does inline', async () => {
    const { pool: p } = pool({ planningWorkers: 2 });
    try {
      for (const [input, config] of [
        [straggling(4, 16), DEFAULT_CONTROL_CONFIG],
        [straggling(8, 32), search],
        [{ ...straggling(4, 8), current: null }, DEFAULT_CONTROL_CONFIG],
      ] as const) {
        expect(plain(await p.decide(input, config))).toEqual(plain(decideControl(input, config)));
      }
      // Concurrent decisions queue for the two workers and each gets its own answer.
      const inputs = [4, 5, 6, 7, 8].map((S) => straggling(S, 2 * S));
      const outcomes = await Promise.all(inputs.map((input) => p.decide(input, search)));
      outcomes.forEach((o, k) => expect(plain(o)).toEqual(plain(decideControl(inputs[k], search))));
      expect(p.workers).toBe(2);
    } finally {
      await p.onApplicationShutdown();
    }
  });

  it('planning workers run niced below the event loop (control.planningWorkerNice); can fail: at 0 they run at its priority', async () => {
    const loop = threadNiceness().get(process.pid)!; // 0 unless the tests themselves run niced
    expect(await workerNiceness(10)).toEqual([Math.min(19, loop + 10)]);
    expect(threadNiceness().get(process.pid)).toBe(loop);
    expect(await workerNiceness(0)).toEqual([loop]);
  });

  it('can fail: a decision made for other delays is not equal', async () => {
    const { pool: p } = pool();
    try {
      expect(plain(await p.decide(straggling(4, 16, 60), DEFAULT_CONTROL_CONFIG))).not.toEqual(plain(decideControl(straggling(4, 16, 30), DEFAULT_CONTROL_CONFIG)));
    } finally {
      await p.onApplicationShutdown();
    }
  });

  it('a worker that dies fails its own decision (crash, counted) and the next decision gets a new worker', async () => {
    const { pool: p, metrics } = pool();
    try {
      p.workerPath = () => fakeWorker('exit');
      await expect(p.decide(straggling(4, 16), DEFAULT_CONTROL_CONFIG)).rejects.toMatchObject({ reason: 'crash' });
      expect(await failures(metrics, 'crash')).toBe(1);
      p.workerPath = planningWorkerPath;
      expect(plain(await p.decide(straggling(4, 16), DEFAULT_CONTROL_CONFIG))).toEqual(plain(decideControl(straggling(4, 16), DEFAULT_CONTROL_CONFIG)));
    } finally {
      await p.onApplicationShutdown();
    }
  });

  it('a decision past control.planTimeoutMs fails (timeout, counted), its worker is replaced, and queued decisions still run', async () => {
    const { pool: p, metrics } = pool({ planTimeoutMs: 300 });
    try {
      p.workerPath = () => fakeWorker('hang');
      const hung = p.decide(straggling(4, 16), DEFAULT_CONTROL_CONFIG);
      p.workerPath = planningWorkerPath; // the replacement is a real worker
      const queued = p.decide(straggling(4, 16), DEFAULT_CONTROL_CONFIG);
      await expect(hung).rejects.toBeInstanceOf(PlanningError);
      await expect(hung).rejects.toMatchObject({ reason: 'timeout' });
      expect(plain(await queued)).toEqual(plain(decideControl(straggling(4, 16), DEFAULT_CONTROL_CONFIG)));
      expect(await failures(metrics, 'timeout')).toBe(1);
    } finally {
      await p.onApplicationShutdown();
    }
  });

  it('a worker slow to start is not timed out: control.planTimeoutMs counts from the worker being ready', async () => {
    const { pool: p, metrics } = pool({ planTimeoutMs: 300 });
    try {
      p.workerPath = () => slowStartingWorker(900);
      expect(plain(await p.decide(straggling(4, 16), DEFAULT_CONTROL_CONFIG))).toEqual(plain(decideControl(straggling(4, 16), DEFAULT_CONTROL_CONFIG)));
      expect(await failures(metrics, 'timeout')).toBe(0);
    } finally {
      await p.onApplicationShutdown();
    }
  });

  it('can fail: a decision that itself takes longer than control.planTimeoutMs on a ready worker is timed out', async () => {
    // 500 ms: the warm-up decision (4 x 8) stays well inside it on a loaded machine; the slow one
    // (a 60 s search budget) is far past it.
    const { pool: p, metrics } = pool({ planTimeoutMs: 500 });
    const slow: ControlConfig = { ...search, searchEvaluations: 100000, searchBudgetMs: 60000 };
    try {
      await p.decide(straggling(4, 8), DEFAULT_CONTROL_CONFIG); // the worker is up
      await expect(p.decide(straggling(8, 32), slow)).rejects.toMatchObject({ reason: 'timeout' });
      expect(await failures(metrics, 'timeout')).toBe(1);
    } finally {
      await p.onApplicationShutdown();
    }
  });

  it('makes quick decisions (Alg. 2, small job, nothing to re-map) on the event loop and the rest on a worker', async () => {
    const { pool: p } = pool({ inlinePlanMaxCells: 256 });
    try {
      expect(plain(await p.decide(straggling(8, 32), DEFAULT_CONTROL_CONFIG))).toEqual(plain(decideControl(straggling(8, 32), DEFAULT_CONTROL_CONFIG)));
      expect(p.workers).toBe(0); // 8 x 32 = 256 cells: inline
      await p.decide(straggling(8, 33), DEFAULT_CONTROL_CONFIG);
      expect(p.workers).toBe(1); // above the line: a worker
      expect(quickDecision(straggling(4, 16), search, 256)).toBe(false); // the search never runs inline
      const remapping = { ...straggling(4, 16), topology: { rankAt: [], rings: [], localityOf: new Map(), allReduce: null, remapAllowed: true, dataParallelLinks: [{ fromRank: 0, toRank: 4, extraMs: 30, straggler: true }] } };
      expect(quickDecision(remapping, DEFAULT_CONTROL_CONFIG, 256)).toBe(false); // a re-map's placement search neither
      expect(quickDecision(straggling(4, 16), DEFAULT_CONTROL_CONFIG, 0)).toBe(false); // 0: never inline
      // Nothing straggles: no planner runs, whatever the policy, so a healthy job never queues behind another's slow plan.
      const healthy = { ...straggling(4, 16), links: straggling(4, 16).links.map((l) => ({ ...l, extraMs: 0, straggler: false })) };
      expect(quickDecision(healthy, search, 256)).toBe(true);
      expect(quickDecision(healthy, { ...search, planner: 'optimal' }, 256)).toBe(true);
      expect(quickDecision(healthy, search, 0)).toBe(false);
      // Pricing simulates each replica: within the line 8 x 32 x dp 64 stays inline, 16 x 64 x dp 64 (65,536 cell-replicas) does not.
      const replicas = (S: number, N: number, dpSize: number) => ({ ...straggling(S, N), dpSize, links: [] });
      expect(quickDecision(replicas(8, 32, 64), DEFAULT_CONTROL_CONFIG, 1024)).toBe(true);
      expect(quickDecision(replicas(16, 64, 64), DEFAULT_CONTROL_CONFIG, 1024)).toBe(false);
      expect(quickDecision(replicas(16, 64, 1), DEFAULT_CONTROL_CONFIG, 1024)).toBe(true);
    } finally {
      await p.onApplicationShutdown();
    }
  });

  it('a quick decision no reaction waits for (gauge lane) goes to a worker (can fail: in the reaction lane it stays inline)', async () => {
    const { pool: p } = pool({ inlinePlanMaxCells: 256 });
    try {
      await p.decide(straggling(8, 32), DEFAULT_CONTROL_CONFIG, 'reaction');
      expect(p.workers).toBe(0);
      expect(plain(await p.decide(straggling(8, 32), DEFAULT_CONTROL_CONFIG, 'gauge'))).toEqual(plain(decideControl(straggling(8, 32), DEFAULT_CONTROL_CONFIG)));
      expect(p.workers).toBe(1);
    } finally {
      await p.onApplicationShutdown();
    }
  });

  it('on the worker, queued reactions go before queued gauges and refinements, in arrival order within a lane (can fail: all in one lane keep arrival order)', async () => {
    const { pool: p } = pool({ planningWorkers: 1 });
    try {
      await p.decide(straggling(4, 8), DEFAULT_CONTROL_CONFIG); // the worker is up: what follows queues behind `busy`
      const run = async (lanes: Array<'reaction' | 'gauge' | 'refinement'>): Promise<string[]> => {
        const order: string[] = [];
        const busy = p.decide(straggling(4, 8), search, 'refinement');
        await Promise.all([busy, ...lanes.map((lane, i) => p.decide(straggling(4, 8, 40 + i), DEFAULT_CONTROL_CONFIG, lane).then(() => order.push(`${lane}${i}`)))]);
        return order;
      };
      expect(await run(['refinement', 'gauge', 'reaction', 'refinement', 'reaction'])).toEqual(['reaction2', 'reaction4', 'gauge1', 'refinement0', 'refinement3']);
      expect(await run(['refinement', 'refinement', 'refinement'])).toEqual(['refinement0', 'refinement1', 'refinement2']);
    } finally {
      await p.onApplicationShutdown();
    }
  });

  it('inline, a reaction to a straggler goes before a step with nothing straggling asked for earlier (can fail: two reactions keep their order)', async () => {
    const { pool: p } = pool({ inlinePlanMaxCells: 256 });
    const healthy = { ...straggling(4, 16), links: straggling(4, 16).links.map((l) => ({ ...l, extraMs: 0, straggler: false })) };
    try {
      const order: string[] = [];
      const quiet = p.decide(healthy, DEFAULT_CONTROL_CONFIG).then(() => order.push('quiet'));
      const reaction = p.decide(straggling(4, 16), DEFAULT_CONTROL_CONFIG).then(() => order.push('reaction'));
      await Promise.all([quiet, reaction]);
      expect(order).toEqual(['reaction', 'quiet']);
      const twin: string[] = [];
      await Promise.all([p.decide(straggling(4, 16), DEFAULT_CONTROL_CONFIG).then(() => twin.push('first')), p.decide(straggling(4, 16, 30), DEFAULT_CONTROL_CONFIG).then(() => twin.push('second'))]);
      expect(twin).toEqual(['first', 'second']);
      expect(p.workers).toBe(0);
    } finally {
      await p.onApplicationShutdown();
    }
  });

  it('a planner error comes back as an error, not a dead worker', async () => {
    const { pool: p, metrics } = pool();
    try {
      const broken = { ...DEFAULT_CONTROL_CONFIG, planner: 'magic' } as unknown as ControlConfig; // the planner throws: unknown policy
      await expect(p.decide(straggling(4, 16), broken)).rejects.toMatchObject({ reason: 'error' });
      expect(await failures(metrics, 'error')).toBe(1);
      expect(await failures(metrics, 'crash')).toBe(0);
    } finally {
      await p.onApplicationShutdown();
    }
  });

  it('planner "optimal": the exact MILP for jobs within optimalMaxCells (never worse than the search), the search above', async () => {
    const { pool: p } = pool();
    const optimal: ControlConfig = { ...search, planner: 'optimal', optimalMaxCells: 40, optimalTimeLimitMs: 5000 };
    try {
      const small = straggling(4, 10); // 40 cells
      const exact = (await p.decide(small, optimal)).decision!;
      const searched = decideControl(small, search).decision!;
      expect(exact.detail).toMatch(/re-planned \(optimal\)/);
      expect(exact.predictedNewMs).toBeLessThanOrEqual(searched.predictedNewMs + 1e-9);
      const large = straggling(4, 12); // 48 cells: the search's plan
      expect(plain((await p.decide(large, optimal)).decision!.pipelines)).toEqual(plain(decideControl(large, search).decision!.pipelines));
    } finally {
      await p.onApplicationShutdown();
    }
  });

  it('after shutdown, decisions fail at once', async () => {
    const { pool: p } = pool();
    await p.onApplicationShutdown();
    await expect(p.decide(straggling(4, 16), DEFAULT_CONTROL_CONFIG)).rejects.toBeInstanceOf(PlanningError);
  });
});
