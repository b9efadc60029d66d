import Ajv from 'ajv';
import jobsApiSchema from '../../schemas/jobs-api.v1.schema.json';
import overridesSchema from '../../schemas/job-overrides.v1.schema.json';
import scheduleSchema from '../../schemas/schedule.v1.schema.json';

const ajv = new Ajv({ allErrors: false });
ajv.addSchema(scheduleSchema);
ajv.addSchema(overridesSchema);
ajv.addSchema(jobsApiSchema);

const ID = 'https://pipemorph.dev/schemas/jobs-api.v1.schema.json';

const DEFINITIONS = { list: 'jobList', detail: 'jobDetail', decisions: 'decisionLog', overrides: 'overridesView' } as const;

/** Null when `body` is what schemas/jobs-api.v1.schema.json says GET /jobs (`list`), GET /jobs/:id (`detail`), GET /jobs/:id/decisions (`decisions`) or GET /jobs/:id/overrides (`overrides`) answers, else the first problem. */
export function jobsApiProblem(kind: keyof typeof DEFINITIONS, body: unknown): string | null {
  const validate = ajv.getSchema(`${ID}#/definitions/${DEFINITIONS[kind]}`)!;
  if (validate(body)) return null;
  const e = validate.errors![0];
  return `${e.instancePath || '(root)'} ${e.message}${e.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}`;
}
