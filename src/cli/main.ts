#!/usr/bin/env node
import { InputError } from '../core/input-error';
import { parseArgs } from './cli-args';
import { compareCommand, formatComparisonTable } from './commands/compare.command';
import { corpusCommand } from './commands/corpus.command';
import { fleetCommand } from './commands/fleet.command';
import { planCommand } from './commands/plan.command';
import { renderCommand } from './commands/render.command';
import { replayCommand } from './commands/replay.command';
import { simulateCommand } from './commands/simulate.command';
import { toleranceCommand } from './commands/tolerance.command';

const USAGE = `usage: pipemorph <command> [options]

commands:
  plan      --profile P.json [--policy initial|adaptive|search|optimal|1f1b|gpipe] [--warmup 7,5,3,1]
            [--max-evaluations 400] [--polish-nodes 5000] [--budget-ms 2000] [--seed N] [--time-limit-ms 2000]
            [--memory host|device] [--details]
  simulate  --profile P.json --schedule S.json [--timeline]
  tolerance --profile P.json (--warmup 7,5,3,1 | --schedule S.json)
  compare   --profile P.json [--delay 0=60,6=30] [--budget-ms 50] [--table]
  render    --profile P.json (--schedule S.json | --policy adaptive) [--compare zb|<policy>]
            [--delay 6=60] [--title T]   (prints an SVG timeline)
  corpus    --scenario "<name>" [--scale 0.1] [--iterations N] [--out file.jsonl] [--config C.json]
            [--set section.key=value ...]
            | --list   (a labeled corpus scenario as a JSONL recording of its job)
  replay    (--recording file.jsonl | --redis redis://host:port --job <id>) [--config C.json]
            [--set section.key=value ...] [--svg out.svg] [--json]
            (a recorded job through detection and decisions: one line per decision and a summary)
  fleet     (--url http://daemon:8080 | --redis redis://host:port [--config C.json] [--set section.key=value ...])
            [--json]   (the fleet view: suspects across every job, with their evidence and runbook step)

plan, simulate, tolerance and compare print one JSON object to stdout, render an SVG, replay text
(JSON with --json), corpus its recording (a JSON summary with --out), fleet text (JSON with --json). Errors: one line on stderr, exit code 2.`;

type Command = (options: Map<string, string | true>, lists: Map<string, string[]>) => unknown;

// A command may return a promise (plan --policy optimal loads the MILP solver's wasm first);
// one that wrote its output itself returns undefined.
const COMMANDS: Record<string, Command> = {
  plan: planCommand,
  simulate: simulateCommand,
  tolerance: toleranceCommand,
  compare: compareCommand,
  render: renderCommand,
  corpus: corpusCommand,
  replay: replayCommand,
  fleet: fleetCommand,
};

async function main(argv: readonly string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === 'help' || argv[0] === '-h') {
    process.stdout.write(USAGE + '\n');
    return argv.length === 0 ? 2 : 0;
  }
  try {
    const { command, options, lists } = parseArgs(argv, new Set(['details', 'timeline', 'table', 'list', 'json']), new Set(['set']));
    const handler = command === undefined ? undefined : COMMANDS[command];
    if (!handler) throw new InputError(`unknown command "${command}" (try: ${Object.keys(COMMANDS).join(', ')})`);
    const result = await handler(options, lists);
    if (result === undefined) return 0;
    const table = command === 'compare' && options.has('table');
    process.stdout.write(typeof result === 'string' ? result : (table ? formatComparisonTable(result) : JSON.stringify(result)) + '\n');
    return 0;
  } catch (error) {
    if (error instanceof InputError) {
      process.stderr.write(`pipemorph: ${error.message.replace(/\s*\n\s*/g, ' ')}\n`);
      return 2;
    }
    throw error; // a bug: let Node print the stack
  }
}

void main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
