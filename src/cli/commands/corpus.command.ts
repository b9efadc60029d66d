import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../core/input-error';
import { detectionCorpus } from '../../corpus/corpus';
import { CorpusScenario } from '../../corpus/corpus.type';
import { replayScenario } from '../../replay/run-scenario';
import { expectOnly, numberOption, stringOption } from '../cli-args';
import { LineWriter } from '../line-writer';
import { loadReplayConfig, solverFor } from '../replay-config';

export const CORPUS_OPTIONS = ['scenario', 'scale', 'iterations', 'out', 'list', 'config', 'set'];

/** The repository root, from the sources or from dist/. */
const ROOT = join(__dirname, '..', '..', '..', ...(__dirname.includes(join('dist', 'src')) ? ['..'] : []));
const SUPERPOD_TRACE = join(ROOT, 'bench', 'traces', 'superpod-link-delays.trace');

/** The detection corpus (src/corpus) at `scale`, with the superpod scenario when its trace is at hand. */
export function corpusAt(scale: number): CorpusScenario[] {
  return detectionCorpus(scale, existsSync(SUPERPOD_TRACE) ? readFileSync(SUPERPOD_TRACE, 'utf8') : undefined);
}

/**
 * `corpus`: a scenario of the labeled detection corpus as a JSONL recording, what `replay` takes:
 * line 1 the registration, then every report in iteration order, as the ranks send them under the
 * schedules the replayed daemon (this config) switched them to, each with its `sentAt` on the
 * replayed clock. To --out (then a JSON summary on stdout) or to stdout. --iterations keeps the
 * first N iterations of the scenario. --list names the scenarios.
 */
export async function corpusCommand(options: Map<string, string | true>, lists: Map<string, string[]>): Promise<string | undefined> {
  expectOnly(options, CORPUS_OPTIONS, 'corpus');
  const scale = numberOption(options, 'scale') ?? 1;
  if (!(scale > 0) || scale > 10) throw new InputError(`--scale must be above 0 and at most 10, got ${scale}`);
  const corpus = corpusAt(scale);
  if (options.has('list')) {
    if (options.has('scenario') || options.has('out')) throw new InputError('--list takes no --scenario or --out');
    const width = Math.max(...corpus.map((s) => s.name.length));
    return corpus.map((s) => `${s.name.padEnd(width)}  ${s.class.padEnd(18)} ${String(s.iterations).padStart(6)} iterations`).join('\n') + '\n';
  }
  const name = stringOption(options, 'scenario');
  if (name === undefined) throw new InputError('corpus needs --scenario "<name>" (or --list to see the names)');
  const found = corpus.find((s) => s.name === name);
  if (!found) throw new InputError(`no corpus scenario named ${JSON.stringify(name)} (pipemorph corpus --list names them)`);
  const iterations = numberOption(options, 'iterations', { integer: true, min: 1 }) ?? found.iterations;
  if (iterations > found.iterations) throw new InputError(`--iterations must be at most the scenario's ${found.iterations}, got ${iterations}`);
  const scenario = { ...found, iterations };
  const config = loadReplayConfig(stringOption(options, 'config'), lists.get('set') ?? []);
  const solver = await solverFor(config);
  const out = stringOption(options, 'out');
  const writer = new LineWriter(out);
  let reports = 0;
  let run;
  try {
    run = replayScenario(scenario, config, solver, {
      registration: (registration) => writer.line(JSON.stringify(registration)),
      reports: (_iteration, list) => {
        for (const r of list) writer.line(JSON.stringify(r));
        reports += list.length;
      },
    });
  } finally {
    writer.close();
  }
  if (out === undefined) return undefined;
  return JSON.stringify({
    scenario: scenario.name,
    class: scenario.class,
    out,
    iterations: scenario.iterations,
    reports,
    switches: run.switches,
  }) + '\n';
}
