import { InputError } from '../core/input-error';
import { usesMilpSolver } from '../core/control/pipeline-plans';
import { MilpSolver } from '../core/planner/optimal-planner';
import { controlConfigOf } from '../daemon/config/control-config-of';
import { ConfigError, DEFAULT_CONFIG_PATH, loadConfig } from '../daemon/config/load-config';
import { PipemorphConfig } from '../daemon/config/pipemorph-config.type';
import { loadMilpSolver } from '../daemon/planning/load-milp-solver.util';

const SET_PATTERN = /^([A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z][A-Za-z0-9]*)+)=(.*)$/s;

/**
 * The daemon config a replay (or a corpus recording) runs with: `--config` (a file in the daemon's
 * format; config/default.json without it) and each `--set section.key=value`, applied and
 * validated exactly as the daemon applies `PIPEMORPH__section__key=value` from its environment
 * (the value parsed as JSON when it parses, the whole config checked against
 * schemas/config.schema.json). The process environment is not read. A problem is an InputError
 * naming the --set.
 */
export function loadReplayConfig(configPath: string | undefined, sets: readonly string[]): PipemorphConfig {
  const env: NodeJS.ProcessEnv = { PIPEMORPH_CONFIG: configPath ?? DEFAULT_CONFIG_PATH };
  const names = new Map<string, string>();
  for (const set of sets) {
    const match = SET_PATTERN.exec(set);
    if (!match) throw new InputError(`--set must look like section.key=value (e.g. detection.enterAfter=4), got ${JSON.stringify(set)}`);
    const name = `PIPEMORPH__${match[1].split('.').join('__')}`;
    if (name in env) throw new InputError(`--set ${match[1]} given twice`);
    env[name] = match[2];
    names.set(name, match[1]);
  }
  try {
    return loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    // The daemon's message names the environment variable: name the --set instead.
    let message = error.message.replace(/environment (PIPEMORPH__\w+)/g, (_, name: string) => `--set ${names.get(name) ?? name}`).replace('with environment overrides', 'with --set');
    if (sets.length > 0 && /^invalid config/.test(message)) message = `${message} (given: ${sets.map((s) => `--set ${s}`).join(' ')})`;
    throw new InputError(message);
  }
}

/** The MILP solver when the config's planners use it (the refinement's `optimal`), as the daemon and bench:detection load it. */
export async function solverFor(config: PipemorphConfig): Promise<MilpSolver | undefined> {
  const control = controlConfigOf(config);
  const refine = config.control.refinePlanner;
  const needed = usesMilpSolver(control) || (refine !== 'none' && usesMilpSolver({ ...control, planner: refine as typeof control.planner }));
  return needed ? loadMilpSolver() : undefined;
}
