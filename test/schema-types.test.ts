/**
 * schemas/*.json are the one source of the wire and config formats: the TypeScript types are
 * inferred from them (json-schema-to-ts FromSchema over the `as const` modules in
 * src/protocol/schemas, generated here), and the Python client validates against the same files.
 * This test fails when a schema changed and its module was not regenerated:
 *   PIPEMORPH_WRITE_SCHEMAS=1 npx jest test/schema-types.test.ts
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..');
const SCHEMAS = join(ROOT, 'schemas');
const MODULES = join(ROOT, 'src/protocol/schemas');

/** registration.v1.schema.json -> registrationV1Schema */
function constName(file: string): string {
  const base = file.replace(/\.schema\.json$/, '');
  return base.split(/[-.]/).map((part, i) => (i === 0 ? part : part[0].toUpperCase() + part.slice(1))).join('') + 'Schema';
}

/** The module that carries a schema to the type level (FromSchema needs it as a literal `as const`). */
export function schemaModule(file: string, json: string): string {
  const literal = JSON.stringify(JSON.parse(json), null, 2);
  return `// Generated from schemas/${file} by test/schema-types.test.ts; do not edit (PIPEMORPH_WRITE_SCHEMAS=1 regenerates it).\nexport const ${constName(file)} = ${literal} as const;\n`;
}

const files = readdirSync(SCHEMAS).filter((f) => f.endsWith('.schema.json')).sort();

describe('one source for wire and config types', () => {
  if (process.env.PIPEMORPH_WRITE_SCHEMAS) {
    for (const file of files) writeFileSync(join(MODULES, file.replace(/\.json$/, '.ts')), schemaModule(file, readFileSync(join(SCHEMAS, file), 'utf8')));
  }

  it.each(files)('the type module of %s is generated from it', (file) => {
    const module = readFileSync(join(MODULES, file.replace(/\.json$/, '.ts')), 'utf8');
    expect(module).toBe(schemaModule(file, readFileSync(join(SCHEMAS, file), 'utf8')));
  });

  it('fails on a schema edited without regenerating its module', () => {
    const file = 'ack.v1.schema.json';
    const edited = JSON.parse(readFileSync(join(SCHEMAS, file), 'utf8'));
    edited.properties.reason.maxLength = 1;
    expect(schemaModule(file, JSON.stringify(edited))).not.toBe(readFileSync(join(MODULES, file.replace(/\.json$/, '.ts')), 'utf8'));
  });
});
