import Ajv, { ErrorObject, ValidateFunction } from 'ajv';

const ajv = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true });

/** One line naming where and what: `/links/0/medianMs must be >= 0`. */
export function describeSchemaError(error: ErrorObject | undefined): string {
  if (!error) return 'invalid';
  const where = error.instancePath || '(root)';
  if (error.keyword === 'additionalProperties') return `${where} has unknown field "${(error.params as { additionalProperty: string }).additionalProperty}"`;
  if (error.keyword === 'required') return `${where} misses field "${(error.params as { missingProperty: string }).missingProperty}"`;
  if (error.keyword === 'enum') return `${where} must be one of ${JSON.stringify((error.params as { allowedValues: unknown[] }).allowedValues)}`;
  if (error.keyword === 'const') return `${where} must be ${JSON.stringify((error.params as { allowedValue: unknown }).allowedValue)}`;
  return `${where} ${error.message ?? 'is invalid'}`;
}

/** Compiles a JSON Schema once; the returned check gives null when valid, else a one-line reason. */
export function compileSchema<T>(schema: object): { validate: ValidateFunction<T>; check: (value: unknown) => string | null } {
  const validate = ajv.compile<T>(schema);
  return { validate, check: (value) => (validate(value) ? null : describeSchemaError(validate.errors?.[0])) };
}
