import { readFileSync } from 'node:fs';
import { InputError } from '../core/input-error';

/** Largest input file the CLI reads: a 64-stage, 4096-microbatch schedule is well under this. */
const MAX_BYTES = 64 * 1024 * 1024;

export function readJsonFile(path: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    throw new InputError(`cannot read ${what} ${path}: ${code}`);
  }
  if (text.length > MAX_BYTES) throw new InputError(`${what} ${path} is larger than ${MAX_BYTES} bytes`);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InputError(`${what} ${path} is not valid JSON: ${(error as Error).message}`);
  }
}
