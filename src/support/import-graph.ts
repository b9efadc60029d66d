/**
 * The relative imports between the TypeScript files under a folder (specs left out), the cycles
 * among them, and the files a file reaches: for the layering checks of test/repo-hygiene.test.ts
 * and for the sources a benchmark measures (bench/stale.ts).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

export type ImportGraph = Map<string, string[]>;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts') ? [path] : [];
  });
}

/**
 * The relative specifiers a TypeScript source imports or re-exports, side-effect imports included
 * (`import './x'` runs `./x` first as surely as a named import, so a cycle or a layer crossed through it
 * is one all the same), in either quote.
 */
export function relativeImports(text: string): string[] {
  return [...text.matchAll(/^(?:(?:import|export)[^'";]*?\bfrom\s*|import\s+)['"](\.[^'"]+)['"]/gm)].map((m) => m[1]);
}

/** Every file under `root`/`dir` with the files it imports, paths relative to `root`. */
export function importGraph(root: string, dir: string): ImportGraph {
  const graph: ImportGraph = new Map();
  for (const file of sources(join(root, dir))) {
    const text = readFileSync(file, 'utf8');
    const deps: string[] = [];
    for (const spec of relativeImports(text)) {
      const target = normalize(join(dirname(file), spec));
      const resolved = [`${target}.ts`, join(target, 'index.ts')].find((p) => existsSync(p));
      if (resolved) deps.push(relative(root, resolved));
    }
    graph.set(relative(root, file), deps);
  }
  return graph;
}

/** The import cycles of a graph, each as the files around it (first repeated last). */
export function importCycles(graph: ImportGraph): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, 1 | 2>();
  const stack: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 1);
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 1) cycles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 2);
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return cycles;
}

/** Imports from files under `from` of files under any of `forbidden` (folders relative to the root). */
export function layerViolations(graph: ImportGraph, from: string, forbidden: string[]): string[] {
  const out: string[] = [];
  for (const [file, deps] of graph) {
    if (!file.startsWith(`${from}/`)) continue;
    for (const dep of deps) if (forbidden.some((f) => dep.startsWith(`${f}/`))) out.push(`${file} -> ${dep}`);
  }
  return out;
}

/** A worker thread's script named by path ('planning.worker.js'): loaded, not imported. */
const WORKER_SCRIPT = /['"`]([\w.-]+\.worker)\.js['"`]/g;

/**
 * `entries` and every file they reach through relative imports, paths relative to `root` (JSON
 * imports included). With `workers`, also the worker threads a file starts by path (its sibling
 * `<name>.worker.ts`) and what they import: the daemon's planning worker is named by no import.
 */
export function importClosure(root: string, entries: string[], options: { workers?: boolean } = {}): string[] {
  const seen = new Set<string>();
  const pending = [...entries];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    if (!file.endsWith('.ts')) continue;
    const text = readFileSync(join(root, file), 'utf8');
    for (const spec of relativeImports(text)) {
      const target = normalize(join(dirname(join(root, file)), spec));
      const resolved = [`${target}.ts`, join(target, 'index.ts'), target].find((p) => existsSync(p) && !p.endsWith('/'));
      if (resolved && (resolved.endsWith('.ts') || resolved.endsWith('.json'))) pending.push(relative(root, resolved));
    }
    if (!options.workers) continue;
    for (const m of text.matchAll(WORKER_SCRIPT)) {
      const worker = join(dirname(file), `${m[1]}.ts`);
      if (existsSync(join(root, worker))) pending.push(worker);
    }
  }
  return [...seen].sort();
}

