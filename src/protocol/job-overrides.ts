/**
 * Per-job overrides (schemas/job-overrides.v1.schema.json): what an operator may change for one
 * job at run time, as stored in `pipemorph:{<job>}:overrides`. Parsing and the schema check live
 * here; what the merged knobs mean is checked by the daemon (src/daemon/overrides).
 */
import Ajv from 'ajv';
import { FromSchema } from 'json-schema-to-ts';
import overridesSchema from '../../schemas/job-overrides.v1.schema.json';
import { describeSchemaError } from './schema-validator';
import { jobOverridesV1Schema } from './schemas/job-overrides.v1.schema';

export type JobOverrides = FromSchema<typeof jobOverridesV1Schema>;
export type DetectionOverrides = NonNullable<JobOverrides['detection']>;
export type ControlOverrides = NonNullable<JobOverrides['control']>;

/** Largest overrides document read or accepted (the whole schema filled in is under 2 KB). */
export const MAX_OVERRIDES_BYTES = 16 * 1024;

// Every problem, not the first: an operator fixing a document wants them all at once.
const validate = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }).compile<JobOverrides>(overridesSchema);

/** The document, or every reason it is refused (one line each, naming the field). */
export type ParsedOverrides = { ok: true; overrides: JobOverrides } | { ok: false; problems: string[] };

/** Checks a value against the schema. */
export function checkOverrides(value: unknown): ParsedOverrides {
  if (validate(value)) return { ok: true, overrides: value };
  const problems = [...new Set((validate.errors ?? []).map((e) => describeSchemaError(e)))];
  return { ok: false, problems: problems.length > 0 ? problems : ['invalid'] };
}

/** Parses the text of the key (or of a request body) and checks it against the schema. */
export function parseOverrides(text: string): ParsedOverrides {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_OVERRIDES_BYTES) return { ok: false, problems: [`document is ${bytes} bytes, more than ${MAX_OVERRIDES_BYTES}`] };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, problems: [`not JSON: ${(error as Error).message}`] };
  }
  return checkOverrides(value);
}
