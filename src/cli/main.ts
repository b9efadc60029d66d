#!/usr/bin/env node
import { InputError } from '../core/input-error';
import { parseArgs } from './cli-args';
import { compareCommand, formatComparisonTable } from './commands/compare.command';
import { planCommand } from './commands/plan.command';
import { renderCommand } from './commands/render.command';
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

Each command but render prints one JSON object to stdout. Errors: one line on stderr, exit code 2.`;

// A command may return a promise (plan --policy optimal loads the MILP solver's wasm first).
const COMMANDS: Record<string, (options: Map<string, string | true>) => unknown> = {
  plan: planCommand,
  simulate: simulateCommand,
  tolerance: toleranceCommand,
  compare: compareCommand,
  render: renderCommand,
};

async function main(argv: readonly string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === 'help' || argv[0] === '-h') {
    process.stdout.write(USAGE + '\n');
    return argv.length === 0 ? 2 : 0;
  }
  try {
    const { command, options } = parseArgs(argv, new Set(['details', 'timeline', 'table']));
    const handler = command === undefined ? undefined : COMMANDS[command];
    if (!handler) throw new InputError(`unknown command "${command}" (try: ${Object.keys(COMMANDS).join(', ')})`);
    const result = await handler(options);
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
