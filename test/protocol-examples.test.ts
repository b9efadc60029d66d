/**
 * Every whole message shown in docs/protocol.md (its ```json blocks that parse as one object) is
 * valid against the schema of its type: ranks are written from the docs and the schemas alone, so
 * the two must agree. Fragments (a field shown inside a larger message) are left out. Needs nothing built.
 */
import Ajv from 'ajv';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ack from '../schemas/ack.v1.schema.json';
import controlEvent from '../schemas/control-event.v1.schema.json';
import report from '../schemas/rank-report.v1.schema.json';
import registration from '../schemas/registration.v1.schema.json';
import schedule from '../schemas/schedule.v1.schema.json';

const ajv = new Ajv({ allErrors: true, strict: false });
const byType: Record<string, ReturnType<typeof ajv.compile>> = {
  register: ajv.compile(registration),
  report: ajv.compile(report),
  ack: ajv.compile(ack),
  prepare: ajv.compile(controlEvent),
  commit: ajv.compile(controlEvent),
  abort: ajv.compile(controlEvent),
};
const scheduleSchema = ajv.compile(schedule);

/** The whole messages of the doc's json blocks. */
function examples(markdown: string): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const [, body] of markdown.matchAll(/```json\n([\s\S]*?)```/g)) {
    try {
      out.push(JSON.parse(body));
    } catch {
      // a fragment of a larger message
    }
  }
  return out;
}

function problems(message: Record<string, unknown>): string | null {
  const check = typeof message.type === 'string' ? byType[message.type] : 'state' in message ? scheduleSchema : undefined;
  if (!check) return `no schema for ${JSON.stringify(message).slice(0, 80)}`;
  return check(message) ? null : ajv.errorsText(check.errors);
}

it('every whole message docs/protocol.md shows is valid against its schema', () => {
  const shown = examples(readFileSync(join(__dirname, '..', 'docs', 'protocol.md'), 'utf8'));
  expect(shown.length).toBeGreaterThanOrEqual(8);
  expect(shown.map((m) => [m.type ?? m.state, problems(m)])).toEqual(shown.map((m) => [m.type ?? m.state, null]));
});

it('twin: a report whose ring link lost its peer is caught', () => {
  const shown = examples(readFileSync(join(__dirname, '..', 'docs', 'protocol.md'), 'utf8'));
  const r = structuredClone(shown.find((m) => m.type === 'report')!) as { links: Array<Record<string, unknown>> };
  delete r.links[1].peer;
  expect(problems(r as unknown as Record<string, unknown>)).not.toBeNull();
});
