import Ajv from 'ajv';
import jobsApiSchema from '../../schemas/jobs-api.v1.schema.json';
import scheduleSchema from '../../schemas/schedule.v1.schema.json';

const ajv = new Ajv({ allErrors: false });
ajv.addSchema(scheduleSchema);
ajv.addSchema(jobsApiSchema);

const ID = 'https://pipemorph.dev/schemas/jobs-api.v1.schema.json';

/** Null when `body` is what schemas/jobs-api.v1.schema.json says GET /jobs (`list`) or GET /jobs/:id (`detail`) answers, else the first problem. */
export function jobsApiProblem(kind: 'list' | 'detail', body: unknown): string | null {
  const validate = ajv.getSchema(`${ID}#/definitions/${kind === 'list' ? 'jobList' : 'jobDetail'}`)!;
  if (validate(body)) return null;
  const e = validate.errors![0];
  return `${e.instancePath || '(root)'} ${e.message}${e.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}`;
}
