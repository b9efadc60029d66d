import { InputError } from '../core/input-error';

export interface ParsedArgs {
  command: string | undefined;
  options: Map<string, string | true>;
  /** Every value of a repeatable option, in order (its last value is in `options` too). */
  lists: Map<string, string[]>;
}

/**
 * `pipemorph <command> --key value --flag`. Flags listed in `booleanFlags` take no value; options
 * in `repeatable` may be given more than once (`--set a=1 --set b=2`), any other only once.
 * Unknown options are rejected by the command that reads them (see `expectOnly`).
 */
export function parseArgs(argv: readonly string[], booleanFlags: ReadonlySet<string>, repeatable: ReadonlySet<string> = new Set()): ParsedArgs {
  const [command, ...rest] = argv;
  const options = new Map<string, string | true>();
  const lists = new Map<string, string[]>();
  const set = (name: string, value: string) => {
    options.set(name, value);
    if (repeatable.has(name)) lists.set(name, [...(lists.get(name) ?? []), value]);
  };
  for (let k = 0; k < rest.length; k++) {
    const token = rest[k];
    if (!token.startsWith('--') || token.length < 3) throw new InputError(`unexpected argument "${token}" (options look like --name value)`);
    const eq = token.indexOf('=');
    const name = eq > 0 ? token.slice(2, eq) : token.slice(2);
    if (options.has(name) && !repeatable.has(name)) throw new InputError(`option --${name} given twice`);
    if (booleanFlags.has(name)) {
      if (eq > 0) throw new InputError(`option --${name} takes no value`);
      options.set(name, true);
    } else if (eq > 0) {
      set(name, token.slice(eq + 1));
    } else {
      const value = rest[k + 1];
      if (value === undefined || value.startsWith('--')) throw new InputError(`option --${name} needs a value`);
      set(name, value);
      k++;
    }
  }
  return { command, options, lists };
}

export function expectOnly(options: Map<string, unknown>, allowed: readonly string[], command: string): void {
  for (const name of options.keys()) {
    if (!allowed.includes(name)) throw new InputError(`unknown option --${name} for "${command}" (allowed: ${allowed.map((a) => '--' + a).join(', ')})`);
  }
}

export function stringOption(options: Map<string, string | true>, name: string): string | undefined {
  const value = options.get(name);
  return typeof value === 'string' ? value : undefined;
}

export function requiredOption(options: Map<string, string | true>, name: string): string {
  const value = stringOption(options, name);
  if (value === undefined) throw new InputError(`missing --${name}`);
  return value;
}

export function numberOption(options: Map<string, string | true>, name: string, opts: { integer?: boolean; min?: number } = {}): number | undefined {
  const raw = stringOption(options, name);
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value) || (opts.integer && !Number.isInteger(value)) || (opts.min !== undefined && value < opts.min)) {
    const kind = opts.integer ? 'an integer' : 'a number';
    throw new InputError(`--${name} must be ${kind}${opts.min !== undefined ? ` >= ${opts.min}` : ''}, got "${raw}"`);
  }
  return value;
}

/** `7,5,3,1` into integers. */
export function integerListOption(options: Map<string, string | true>, name: string): number[] | undefined {
  const raw = stringOption(options, name);
  if (raw === undefined) return undefined;
  const parts = raw.split(',');
  return parts.map((part) => {
    const value = Number(part.trim());
    if (part.trim() === '' || !Number.isInteger(value)) throw new InputError(`--${name} must be comma-separated integers like 7,5,3,1, got "${raw}"`);
    return value;
  });
}
