/**
 * What a run of the live demo measured, for bench/results/demo.json (issue 30, item 2): the README's
 * and docs/demo.md's demo tables and transcripts are rendered from such a record (bench/demo.bench.ts
 * runs the demo with DEMO_RESULTS set), never typed from a terminal.
 */
import { writeFileSync } from 'node:fs';

export interface DemoPhase {
  name: string;
  /** Iterations in the phase; null for a row of the model (no iterations run). */
  iterations: number | null;
  meanMs: number;
  vsHealthy: number;
}

export interface DemoSwitch {
  version: number;
  effectiveIteration: number;
  kind: string;
  detail: string;
  predictedMs: number;
  previousMs: number | null;
}

export interface DemoLine {
  iteration: number;
  /** What changes from one iteration to the next besides the time: a rendered excerpt keeps the lines where it does. */
  state: string;
  text: string;
}

export interface DemoAct {
  healthyMs: number;
  /** The printed lines before the iterations (what the act runs). */
  intro: string[];
  lines: DemoLine[];
  phases: DemoPhase[];
  /** The summary's lines after the phase table (versions, switches), as printed. */
  outro: string[];
  switches: DemoSwitch[];
  mixedIterations: number[];
}

const ANSI = /\x1b\[[0-9;]*m/g; // eslint-disable-line no-control-regex
const plain = (text: string) => text.replace(ANSI, '');

/** Collects an act's output as the demo prints it; written only when DEMO_RESULTS names a file. */
export class DemoRecord {
  readonly acts: Record<string, DemoAct> = {};
  private current: DemoAct | null = null;

  constructor(private readonly path = process.env.DEMO_RESULTS) {}

  get enabled(): boolean {
    return Boolean(this.path);
  }

  begin(act: string, healthyMs: number): void {
    this.current = { healthyMs, intro: [], lines: [], phases: [], outro: [], switches: [], mixedIterations: [] };
    this.acts[act] = this.current;
  }

  intro(text: string): void {
    this.current?.intro.push(...plain(text).split('\n'));
  }

  line(iteration: number, state: string, text: string): void {
    this.current?.lines.push({ iteration, state, text: plain(text) });
  }

  phase(name: string, iterations: number | null, meanMs: number, healthyMs: number): void {
    this.current?.phases.push({ name, iterations, meanMs, vsHealthy: meanMs / healthyMs });
  }

  outro(text: string): void {
    this.current?.outro.push(...plain(text).split('\n'));
  }

  switched(s: DemoSwitch): void {
    this.current?.switches.push(s);
  }

  mixed(iterations: number[]): void {
    if (this.current) this.current.mixedIterations = iterations;
  }

  write(extra: Record<string, unknown> = {}): void {
    if (!this.path) return;
    writeFileSync(this.path, `${JSON.stringify({ bench: 'demo', ...extra, acts: this.acts }, null, 2)}\n`);
  }
}
